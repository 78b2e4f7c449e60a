package fn

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkBashkit runs the same pipeline over the same CSV files as a
// bashkit call through Engine.Call with a session volume, and as `sh -c` with
// the host's GNU tools, in one run.
//
//	go test ./runtime/fn -run '^$' -bench BenchmarkBashkit -benchtime 20x
func BenchmarkBashkit(b *testing.B) {
	fruit := []string{"apples", "pears", "plums", "kiwis", "figs", "limes", "dates"}
	files := map[string]string{}
	for f := 0; f < 4; f++ {
		var sb strings.Builder
		for i := 0; i < 2500; i++ {
			fmt.Fprintf(&sb, "%d,%s,%d\n", i, fruit[(i*i+f)%len(fruit)], i%13)
		}
		files[fmt.Sprintf("part%d.csv", f)] = sb.String()
	}
	for _, size := range []struct {
		name, script string
	}{
		{"pipeline", topPipeline},
		{"echo", "echo hi > top.txt"},
	} {
		dir := b.TempDir()
		writeFiles(b, dir, files)
		b.Run(size.name+"/bashkit", func(b *testing.B) {
			e := sharedEngine(b)
			p := load(b, e, "packages", "bashkit")
			in, _ := json.Marshal(map[string]any{"script": size.script})
			req := CallRequest{Tool: "run", Input: in, Volume: &VolumeMount{Dir: dir, Write: true, MaxFileBytes: 1 << 20, MaxNewBytes: 1 << 30, MaxNewFiles: 10}}
			for b.Loop() {
				if _, err := e.Call(b.Context(), p, req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(size.name+"/sh-c", func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command("sh", "-c", size.script)
				cmd.Dir = dir
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v %s", err, out)
				}
			}
		})
		a, _ := os.ReadFile(filepath.Join(dir, "top.txt"))
		if len(a) == 0 {
			b.Fatal("no top.txt")
		}
	}
}
