package web_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBashkitThroughASession: the app uploads CSV files, a bashkit grant with
// volume write runs a pipeline over them into top.txt, the app downloads it
// and the call lists what it read and wrote; a read grant's script cannot write.
func TestBashkitThroughASession(t *testing.T) {
	f := newFnEnv(t)
	dir := f.startVolumes(1<<20, 20, 4<<20)
	wasm, manifest := f.mods.Package(t, "bashkit")
	if st := f.api(f.owner, "POST", "/functions", installJSON(wasm, manifest), nil); st != 201 {
		t.Fatalf("Function.install bashkit: %d", st)
	}
	w := f.volumeWorld(dir, `{"functions": [
	  {"name": "shell", "package": "bashkit", "version": "1.0.0", "volume": "write", "default_policy": "allow"},
	  {"name": "peek", "package": "bashkit", "version": "1.0.0", "volume": "read", "default_policy": "allow"}]}`)
	for name, body := range map[string]string{"sales/a.csv": "1,apples,3\n2,pears,1\n3,apples,2\n", "sales/b.csv": "4,pears,4\n5,apples,1\n6,kiwis,2\n"} {
		if st, b := w.put(w.s.Token, name, body); st != 200 {
			t.Fatalf("Volume.put %s: %d %s", name, st, b)
		}
	}
	run := func(tool, script string) (volumeCall, map[string]any) {
		var c volumeCall
		st := w.api(w.s.Token, "POST", "/sessions/"+w.s.ID+"/tool_calls", map[string]any{"tool": tool,
			"input": map[string]any{"script": script}, "wait_seconds": 60}, &c)
		if st != 200 || c.Status != "succeeded" {
			t.Fatalf("%s: %d %+v", tool, st, c)
		}
		var got volumeCall
		if st := w.api(w.s.Token, "GET", "/tool_calls/"+c.ID, nil, &got); st != 200 {
			t.Fatalf("ToolCall.get: %d", st)
		}
		var out map[string]any
		json.Unmarshal(got.Output, &out)
		return got, out
	}

	c, out := run("fn__shell__run", "cat sales/*.csv | cut -d, -f2 | sort | uniq -c | sort -rn | head -2 > top.txt && wc -l < top.txt")
	if out["stdout"] != "2\n" || out["exit_code"] != 0.0 {
		t.Fatalf("output %+v", out)
	}
	if st, body := w.raw(w.s.Token, "GET", "/sessions/"+w.s.ID+"/volume/top.txt", nil, ""); st != 200 || body != "      3 apples\n      2 pears\n" {
		t.Fatalf("Volume.get top.txt: %d %q", st, body)
	}
	ops := map[string]bool{}
	for _, a := range c.Volume {
		ops[a.Op+" "+a.Path] = true
	}
	if !ops["read sales/a.csv"] || !ops["read sales/b.csv"] || !ops["write top.txt"] {
		t.Fatalf("the call's volume list: %+v", c.Volume)
	}

	_, out = run("fn__peek__run", "cat top.txt > copy.txt; echo $?")
	if out["stdout"] != "1\n" || !strings.Contains(out["stderr"].(string), "copy.txt: read-only") {
		t.Fatalf("read grant: %+v", out)
	}
	if st, _ := w.raw(w.s.Token, "GET", "/sessions/"+w.s.ID+"/volume/copy.txt", nil, ""); st != 404 {
		t.Fatalf("a read grant's script wrote copy.txt: %d", st)
	}
}
