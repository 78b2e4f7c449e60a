package fn

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type bashkitOut struct {
	Stdout       string   `json:"stdout"`
	Stderr       string   `json:"stderr"`
	ExitCode     int      `json:"exit_code"`
	FilesWritten []string `json:"files_written"`
	Truncated    bool     `json:"truncated"`
	Stopped      string   `json:"stopped"`
}

// bashkit runs script through Engine.Call with the volume dir mounted (write
// unless readOnly) and returns the decoded output.
func bashkit(t testing.TB, dir string, readOnly bool, input map[string]any, req CallRequest) (bashkitOut, CallResult) {
	t.Helper()
	e := sharedEngine(t)
	p := load(t, e, "packages", "bashkit")
	if dir != "" {
		req.Volume = &VolumeMount{Dir: dir, Write: !readOnly, MaxFileBytes: 64 << 20, MaxNewBytes: 256 << 20, MaxNewFiles: 1000}
	}
	req.Tool = "run"
	req.Input, _ = json.Marshal(input)
	res, err := e.Call(t.Context(), p, req)
	if err != nil {
		t.Fatalf("call: %v (stderr %s)", err, res.Stderr)
	}
	var out bashkitOut
	if err := json.Unmarshal(res.Output, &out); err != nil {
		t.Fatalf("output %s: %v", res.Output, err)
	}
	return out, res
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var salesCSV = map[string]string{
	"a.csv": "1,apples,3\n2,pears,1\n3,apples,2\n4,plums,7\n",
	"b.csv": "5,pears,4\n6,apples,1\n7,kiwis,2\n8,pears,9\n9,apples,5\n",
}

const topPipeline = `cat *.csv | cut -d, -f2 | sort | uniq -c | sort -rn | head -3 > top.txt`

func TestBashkitPipelineOverVolumeFiles(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, salesCSV)
	out, res := bashkit(t, dir, false, map[string]any{"script": topPipeline + "\ncat top.txt; wc -l < top.txt"}, CallRequest{})
	want := "      4 apples\n      3 pears\n      1 plums\n3\n"
	if out.Stdout != want || out.ExitCode != 0 {
		t.Fatalf("stdout %q exit %d stderr %q; want %q", out.Stdout, out.ExitCode, out.Stderr, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "top.txt")); string(b) != "      4 apples\n      3 pears\n      1 plums\n" {
		t.Fatalf("top.txt in the volume = %q", b)
	}
	if len(out.FilesWritten) != 1 || out.FilesWritten[0] != "top.txt" {
		t.Fatalf("files_written = %v, want [top.txt]", out.FilesWritten)
	}
	got := map[VolumeAccess]bool{}
	for _, a := range res.Volume {
		got[a] = true
	}
	if !got[VolumeAccess{"a.csv", VolumeRead}] || !got[VolumeAccess{"top.txt", VolumeWrite}] {
		t.Fatalf("the call's volume accesses lack the read CSV or the written top.txt: %+v", res.Volume)
	}

	// Same pipeline on the host's sh and GNU tools gives the same file.
	host := t.TempDir()
	writeFiles(t, host, salesCSV)
	cmd := exec.Command("sh", "-c", topPipeline)
	cmd.Dir = host
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("host sh: %v %s", err, b)
	}
	hb, _ := os.ReadFile(filepath.Join(host, "top.txt"))
	if vb, _ := os.ReadFile(filepath.Join(dir, "top.txt")); string(vb) != string(hb) {
		t.Fatalf("bashkit top.txt %q, host sh %q", vb, hb)
	}
}

// TestBashkitMatchesCoreutils runs each command group on small inputs in
// bashkit and in the host's sh with GNU coreutils, and compares stdout.
func TestBashkitMatchesCoreutils(t *testing.T) {
	if _, err := exec.LookPath("sort"); err != nil {
		t.Skip("no coreutils on the host")
	}
	files := map[string]string{
		"words.txt": "banana\napple\ncherry\napple\nBanana\ndate\n\ncherry\napple\n",
		"nums.txt":  "10\n9\n100\n-3\n2.5\n42\n7\n",
		"t.tsv":     "b\t2\tx\na\t10\ty\nc\t1\tz\na\t3\tw\n",
		"c.csv":     "id,name,qty\n1,apple,3\n2,pear,10\n3,plum,7\n",
		"k1.txt":    "a 1\nb 2\nd 4\n",
		"k2.txt":    "a x\nc y\nd z\n",
		"old.txt":   "one\ntwo\nthree\nfour\nfive\n",
		"new.txt":   "zero\none\nthree\nfour\nFIVE\nsix\n",
		"tabs.txt":  "a\tb\tc\n\tindented\nno tabs here\n",
		"long.txt":  "The quick brown fox jumps over the lazy dog and keeps running far away.\nshort\n",
		"d/e/f.txt": "deep\n",
		"d/g.md":    "# title\n",
		"j.json":    `{"items":[{"name":"a","price":5},{"name":"b","price":12},{"name":"c","price":30}]}`,
	}
	groups := map[string][]string{
		"cat/head/tail/tac/rev/nl": {
			"cat -n words.txt", "head -3 words.txt", "head -n -2 nums.txt", "tail -2 words.txt", "tail -n +3 nums.txt",
			"head -c 5 words.txt", "tail -c 6 words.txt", "tac nums.txt", "rev words.txt", "nl words.txt", "cat -s -b words.txt", "head -2 words.txt nums.txt",
		},
		"sort/uniq": {
			"sort words.txt", "sort -r words.txt", "sort -u words.txt", "sort -n nums.txt", "sort -rn nums.txt", "sort -f words.txt",
			"sort -t$'\\t' -k2,2n t.tsv", "sort -k1,1 -k2,2nr t.tsv", "sort words.txt | uniq -c", "sort words.txt | uniq -d",
			"sort words.txt | uniq -u", "sort -f words.txt | uniq -ic", "sort -t, -k3 -n c.csv",
		},
		"grep": {
			"grep apple words.txt", "grep -c apple words.txt", "grep -v apple words.txt", "grep -in banana words.txt",
			"grep -E '^(a|b)' words.txt", "grep -o 'an' words.txt", "grep -w two old.txt new.txt", "grep -l one *.txt",
			"grep -x apple words.txt", "grep -F 2.5 nums.txt", "grep -A1 three old.txt", "grep -B1 -n five old.txt", "grep 'ch\\(er\\)' words.txt",
			"grep -r deep d", "grep -h one old.txt new.txt", "grep -m2 apple words.txt",
		},
		"sed": {
			"sed 's/apple/APPLE/' words.txt", "sed -n '2,4p' words.txt", "sed '/apple/d' words.txt", "sed -E 's/(a)(n)/\\2\\1/g' words.txt",
			"sed 's/a/X/2' words.txt", "sed '1i header' old.txt", "sed '$a footer' old.txt", "sed -n '/two/,/four/p' old.txt",
			"sed 'y/abc/xyz/' words.txt", "sed '=' old.txt", "sed -n '$=' words.txt", "sed '2q' old.txt", "sed 's/o/0/g;s/e/3/' old.txt",
			"sed -e 's/^/> /' -e '3d' old.txt", "sed 's/[aeiou]//g' words.txt", "sed '2,3c\\\nchanged' old.txt", "sed -n 'h;n;G;p' old.txt",
		},
		"cut/tr/paste/wc": {
			"cut -d, -f2 c.csv", "cut -d, -f1,3 c.csv", "cut -c1-3 words.txt", "cut -f2- t.tsv", "cut -d, -f2- --output-delimiter=';' c.csv",
			"tr a-z A-Z < words.txt", "tr -d 'aeiou' < words.txt", "tr -s '\\n' < words.txt", "tr -c 'a-z\\n' '_' < c.csv", "tr '[:lower:]' '[:upper:]' < old.txt",
			"paste old.txt new.txt", "paste -d, -s nums.txt", "paste -d: k1.txt k2.txt", "wc words.txt", "wc -l words.txt nums.txt", "wc -w < old.txt", "wc -c c.csv",
		},
		"comm/join/diff/fold/expand": {
			"comm k1.txt k2.txt", "comm -12 k1.txt k2.txt", "join k1.txt k2.txt", "join -a1 k1.txt k2.txt", "diff old.txt new.txt", "diff -q old.txt new.txt",
			"fold -w 20 long.txt", "fold -s -w 20 long.txt", "expand tabs.txt", "expand -t 4 tabs.txt", "cmp old.txt old.txt", "diff old.txt old.txt",
		},
		"files": {
			"ls", "ls d", "ls -R d", "mkdir -p x/y && ls x", "cp old.txt o2.txt && cat o2.txt", "mv o2.txt o3.txt && ls o*", "rm o3.txt && ls o*",
			"touch empty && wc -c empty", "basename d/e/f.txt", "basename d/e/f.txt .txt", "dirname d/e/f.txt", "find d -type f | sort",
			"find . -name '*.csv'", "find d -maxdepth 1 | sort", "du -b c.csv", "cp -r d d2 && find d2 | sort", "rmdir x/y && ls x",
			"stat -c '%n %s' c.csv", "split -l 2 old.txt part_ && cat part_ab", "ls -S d/e",
		},
		"encodings/hashes": {
			"base64 old.txt", "base64 old.txt | base64 -d", "base32 c.csv", "md5sum old.txt", "sha1sum old.txt", "sha256sum old.txt new.txt",
			"sha512sum c.csv", "cksum old.txt", "sha256sum old.txt > s && sha256sum -c s", "sum old.txt",
		},
		"archives": {
			"gzip -c old.txt | gunzip", "gzip -k old.txt && zcat old.txt.gz && ls old*", "gzip new.txt && ls new* && gunzip new.txt.gz && cat new.txt",
			"tar cf a.tar d && tar tf a.tar | sort", "tar czf a.tgz d && mkdir out && tar xzf a.tgz -C out && cat out/d/e/f.txt",
		},
		"misc": {
			"seq 5", "seq 2 3 20", "seq -s, 1 5", "seq -w 8 11", "printf '%s=%d\\n' a 1 b 2", "echo -e 'a\\tb'", "expr 3 + 4 \\* 2",
			"expr length hello", "expr substr hello 2 3", "echo a b c | xargs -n1", "printf '1\\n2\\n' | xargs -I{} echo item {}", "ls *.txt | xargs wc -l",
			"date -d @0 -u +%Y-%m-%dT%H:%M:%S", "date -u -d '2024-02-29 13:05:09' '+%a %b %e %j %s'", "yes | head -3", "factor 360 97",
			"echo '3/2; scale=2; 10/3; 2^10' | bc", "numfmt --to=iec 1048576 2000", "shuf -e a | wc -l", "column -t t.tsv", "od -c old.txt | head -2",
			"find . -name '*.md' -exec cat {} \\;", "x=0; for i in $(seq 1 10); do x=$((x+i)); done; echo $x", "echo $((7*6)) ${#PWD}", "tee t1 t2 < old.txt | wc -l && cat t2",
		},
	}
	for group, cmds := range groups {
		t.Run(group, func(t *testing.T) {
			for _, script := range cmds {
				host, vol := t.TempDir(), t.TempDir()
				writeFiles(t, host, files)
				writeFiles(t, vol, files)
				cmd := exec.Command("bash", "-c", script)
				cmd.Dir = host
				cmd.Env = []string{"LC_ALL=C", "PATH=/usr/bin:/bin", "TZ=UTC"}
				hostOut, _ := cmd.Output()
				out, _ := bashkit(t, vol, false, map[string]any{"script": script}, CallRequest{})
				want := strings.ReplaceAll(string(hostOut), host, "/volume")
				if script == "echo $((7*6)) ${#PWD}" {
					want = "42 7\n"
				}
				if out.Stdout != want {
					t.Errorf("%s\nbashkit: %q (stderr %q)\nhost:    %q", script, out.Stdout, out.Stderr, want)
				}
			}
		})
	}
}

func TestBashkitUnknownCommandAndJq(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"j.json": `{"items":[{"name":"a","price":5},{"name":"b","price":12}]}`})
	out, _ := bashkit(t, dir, false, map[string]any{"script": "curl https://example.com; echo after=$?"}, CallRequest{})
	if !strings.Contains(out.Stderr, "command not found: curl (bashkit has no processes)") || out.Stdout != "after=127\n" {
		t.Fatalf("unknown command: %+v", out)
	}
	out, _ = bashkit(t, dir, false, map[string]any{"script": `jq -r '.items[] | select(.price > $min) | .name' --argjson min 10 j.json; jq -c '[.items[].price] | add' j.json; echo "$NAME"`,
		"env": map[string]string{"NAME": "from env"}}, CallRequest{})
	if out.Stdout != "b\n17\nfrom env\n" {
		t.Fatalf("jq/env: %+v", out)
	}
	out, _ = bashkit(t, dir, false, map[string]any{"script": "zip -q z.zip j.json && rm j.json && unzip -q z.zip && jq -c .items[0] j.json && unzip -l z.zip"}, CallRequest{})
	if !strings.HasPrefix(out.Stdout, `{"name":"a","price":5}`+"\n") || !strings.Contains(out.Stdout, "j.json") || len(out.FilesWritten) != 2 {
		t.Fatalf("zip/unzip: %+v", out)
	}
	out, _ = bashkit(t, dir, false, map[string]any{"script": "printf 'x' > ../evil.txt; ls"}, CallRequest{})
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "evil.txt")); err == nil {
		t.Fatalf("a script wrote outside the volume: %+v", out)
	}
	out, _ = bashkit(t, "", false, map[string]any{"script": "tr a-z A-Z | sort -r", "stdin": "b\na\nc\n"}, CallRequest{})
	if out.Stdout != "C\nB\nA\n" {
		t.Fatalf("stdin without a volume: %+v", out)
	}
}

func TestBashkitReadOnlyGrant(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, salesCSV)
	out, _ := bashkit(t, dir, true, map[string]any{"script": "wc -l a.csv\n" + topPipeline + "\necho status=$?; touch new.txt; rm a.csv; mkdir out"}, CallRequest{})
	if !strings.HasPrefix(out.Stdout, "4 a.csv\nstatus=1\n") {
		t.Fatalf("stdout %q", out.Stdout)
	}
	if !strings.Contains(out.Stderr, "top.txt: read-only: this function's grant gives the volume read only (volume: read)") ||
		strings.Count(out.Stderr, "read-only") < 4 {
		t.Fatalf("stderr %q: want each write refused as read-only", out.Stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "top.txt")); err == nil {
		t.Fatal("a read-only call wrote top.txt")
	}
	if _, err := os.Stat(filepath.Join(dir, "a.csv")); err != nil {
		t.Fatal("a read-only call removed a.csv")
	}
	if len(out.FilesWritten) != 0 {
		t.Fatalf("files_written = %v", out.FilesWritten)
	}
}

func TestBashkitBounded(t *testing.T) {
	dir := t.TempDir()
	t.Run("while true ends at its time limit", func(t *testing.T) {
		start := time.Now()
		out, _ := bashkit(t, dir, false, map[string]any{"script": "echo start; while true; do :; done; echo never", "timeout_ms": 1500}, CallRequest{})
		if out.Stdout != "start\n" || out.ExitCode != 124 || !strings.Contains(out.Stopped, "time limit: the script ran past 1.5s") ||
			!strings.Contains(out.Stderr, "time limit") {
			t.Fatalf("%+v", out)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("took %s", d)
		}
	})
	t.Run("the function deadline", func(t *testing.T) {
		e := sharedEngine(t)
		p := load(t, e, "packages", "bashkit")
		_, err := e.Call(t.Context(), p, CallRequest{Tool: "run", Input: json.RawMessage(`{"script":"while :; do x=1; done","timeout_ms":30000}`), Timeout: time.Second})
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("err = %v, want the function's deadline", err)
		}
	})
	t.Run("fork bomb", func(t *testing.T) {
		out, _ := bashkit(t, dir, false, map[string]any{"script": "f() { f | f; }; f; echo never", "timeout_ms": 5000}, CallRequest{})
		// Pipeline stages pile up until the goroutine bound or the time limit.
		if out.ExitCode != 124 || !strings.Contains(out.Stopped, "too many commands at once") && !strings.Contains(out.Stopped, "time limit") || out.Stdout != "" {
			t.Fatalf("%+v", out)
		}
		out, _ = bashkit(t, dir, false, map[string]any{"script": "f() { f; }; f; echo never"}, CallRequest{})
		if out.ExitCode != 1 || !strings.Contains(out.Stderr, "f: maximum function nesting level exceeded (1000)") {
			t.Fatalf("%+v", out)
		}
		// A background bomb: the script ends; its jobs go with the instance.
		out, _ = bashkit(t, dir, false, map[string]any{"script": "f() { f | f & }; f; wait; echo done", "timeout_ms": 3000}, CallRequest{})
		if out.Stdout != "done\n" && out.Stopped == "" {
			t.Fatalf("%+v", out)
		}
	})
	t.Run("huge output", func(t *testing.T) {
		out, _ := bashkit(t, dir, false, map[string]any{"script": "yes hello; echo never"}, CallRequest{})
		if !out.Truncated || len(out.Stdout) != 1<<20 || !strings.Contains(out.Stopped, "output limit: stdout passed 1048576 bytes") {
			t.Fatalf("truncated %v len %d stopped %q", out.Truncated, len(out.Stdout), out.Stopped)
		}
	})
	t.Run("script length", func(t *testing.T) {
		e := sharedEngine(t)
		p := load(t, e, "packages", "bashkit")
		in, _ := json.Marshal(map[string]any{"script": strings.Repeat("#", 70000)})
		_, err := e.Call(t.Context(), p, CallRequest{Tool: "run", Input: in})
		if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "script") {
			t.Fatalf("err = %v", err)
		}
	})
}
