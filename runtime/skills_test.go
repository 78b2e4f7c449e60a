package runtime_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
)

func TestSkillModeJSON(t *testing.T) {
	cases := []struct {
		in   string
		want runtime.SkillMode
		ok   bool
	}{
		{`"0755"`, runtime.SkillModeExec, true},
		{`"755"`, runtime.SkillModeExec, true},
		{`493`, runtime.SkillModeExec, true},
		{`755`, runtime.SkillModeExec, true},
		{`"0644"`, runtime.SkillModeFile, true},
		{`420`, runtime.SkillModeFile, true},
		{`"0777"`, 0, false},
		{`true`, 0, false},
		{`0`, 0, false},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			rt := runtime.New(modelstest.Open(t), runtime.Options{})
			body := fmt.Sprintf(`{"name":"m","files":[{"path":"a","content":"x","mode":%s}]}`, c.in)
			var in runtime.SkillInput
			if err := json.Unmarshal([]byte(body), &in); err != nil {
				t.Fatalf("decode: %v", err)
			}
			_, err := rt.SkillCreate(t.Context(), runtime.System, in)
			if !c.ok {
				if e, ok := runtime.AsError(err); !ok || e.Field != "files[0].mode" {
					t.Fatalf("mode %s accepted or misnamed: %v", c.in, err)
				}
				return
			}
			files, err := rt.SkillFiles(t.Context(), runtime.System, "m")
			if err != nil || len(files) != 1 || files[0].Mode != c.want {
				t.Fatalf("mode %s stored as %+v (%v)", c.in, files, err)
			}
			if out, _ := json.Marshal(files[0]); !strings.Contains(string(out), fmt.Sprintf(`"mode":"%04o"`, int(c.want))) {
				t.Fatalf("mode written as %s", out)
			}
		})
	}
}

// benchZip is a skill of n files of size bytes each, in a wrapping folder.
func benchZip(b *testing.B, n, size int) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	body := strings.Repeat("skill text line\n", size/16+1)[:size]
	for i := range n {
		w, err := zw.Create(fmt.Sprintf("skill/dir%d/file%d.md", i%10, i))
		if err != nil {
			b.Fatal(err)
		}
		w.Write([]byte(body))
	}
	zw.Close()
	return buf.Bytes()
}

// BenchmarkSkillCreateZip measures a console upload end to end below HTTP:
// unzip, check every path and cap, and write the skill in one transaction.
func BenchmarkSkillCreateZip(b *testing.B) {
	for _, sz := range []struct{ n, size int }{{10, 4 << 10}, {200, 40 << 10}, {1000, 10 << 10}} {
		b.Run(fmt.Sprintf("files=%d/size=%d", sz.n, sz.size), func(b *testing.B) {
			rt := runtime.New(modelstest.Open(b), runtime.Options{})
			data := benchZip(b, sz.n, sz.size)
			b.SetBytes(int64(sz.n * sz.size))
			i := 0
			for b.Loop() {
				i++
				if _, err := rt.SkillCreateZip(b.Context(), runtime.System, runtime.SkillZipInput{Name: fmt.Sprintf("s%d", i), Zip: data}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSkillReadFile is what one skill__<name>__read call costs the runtime.
func BenchmarkSkillReadFile(b *testing.B) {
	rt := runtime.New(modelstest.Open(b), runtime.Options{})
	if _, err := rt.SkillCreateZip(b.Context(), runtime.System, runtime.SkillZipInput{Name: "s", Zip: benchZip(b, 200, 8<<10)}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := rt.SkillReadFile(b.Context(), runtime.System, "s", "dir7/file117.md"); err != nil {
			b.Fatal(err)
		}
	}
}
