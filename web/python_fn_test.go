package web_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/fn"
	"github.com/subako/subako/runtime/fn/packages/python"
)

// The python package end to end: shipped by the server (the API refuses a
// native package from anyone else), granted with volume "write", reading
// the CSV the app uploaded and writing a summary the app downloads, listed
// on the call and metered by the second. SQLite and PostgreSQL.
func TestPythonFunctionThroughASession(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap is not installed")
	}
	f := newFnEnv(t)
	f.engine.SetNative(fn.NativeConfig{})
	dir := f.startVolumes(1<<20, 50, 4<<20)

	// Nobody but the server installs a native package.
	var refusal struct{ Code, Field string }
	if st := f.api(f.owner, "POST", "/functions", installJSON(python.Bundle(), python.Manifest()), &refusal); st != 422 || refusal.Code != "native_not_installable" {
		t.Fatalf("Function.install of a native package by the owner: %d %+v", st, refusal)
	}
	if _, installed, err := f.rt.EnsureFunction(context.Background(), runtime.FunctionInstallInput{Manifest: python.Manifest(), Wasm: python.Bundle()}); err != nil || !installed {
		t.Fatalf("EnsureFunction python: %v %v", installed, err)
	}
	var pkg struct{ Engine string }
	if st := f.api(f.owner, "GET", "/functions/python/1.0.0", nil, &pkg); st != 200 || pkg.Engine != "native" {
		t.Fatalf("Function.get python: %d %+v", st, pkg)
	}
	w := f.volumeWorld(dir, `{"functions": [{"name": "py", "package": "python", "version": "1.0.0", "volume": "write", "default_policy": "allow"}]}`)
	if st, body := w.put(w.s.Token, "in/sales.csv", "city,sales\nOsaka,120\nKyoto,80\nOsaka,30\n"); st != 200 {
		t.Fatalf("upload: %d %s", st, body)
	}
	code := `
import csv, io, json, subako
rows = list(csv.DictReader(io.StringIO(subako.read_text("in/sales.csv"))))
totals = {}
for r in rows:
    totals[r["city"]] = totals.get(r["city"], 0) + int(r["sales"])
subako.write_text("out/summary.txt", "".join(f"{c}: {n}\n" for c, n in sorted(totals.items())))
result = {"rows": len(rows), "cities": len(totals)}
`
	var c volumeCall
	st := w.api(w.s.Token, "POST", "/sessions/"+w.s.ID+"/tool_calls", map[string]any{"tool": "fn__py__run",
		"input": map[string]any{"code": code}, "wait_seconds": 60}, &c)
	if st != 200 || c.Status != "succeeded" {
		t.Fatalf("fn__py__run: %d %+v", st, c)
	}
	var out struct {
		OK     bool
		Result map[string]int
	}
	json.Unmarshal(c.Output, &out)
	if !out.OK || out.Result["rows"] != 3 || out.Result["cities"] != 2 {
		t.Fatalf("output %s", c.Output)
	}
	if st, body := w.raw(w.s.Token, "GET", "/sessions/"+w.s.ID+"/volume/out/summary.txt", nil, ""); st != 200 || body != "Kyoto: 80\nOsaka: 150\n" {
		t.Fatalf("the summary through the API: %d %q", st, body)
	}
	var got volumeCall
	if st := w.api(w.s.Token, "GET", "/tool_calls/"+c.ID, nil, &got); st != 200 {
		t.Fatalf("ToolCall.get: %d", st)
	}
	if len(got.Volume) != 1 || got.Volume[0].Path != "out/summary.txt" || got.Volume[0].Op != "write" {
		t.Fatalf("the call's volume list: %+v", got.Volume)
	}
	found := false
	for _, file := range w.list().Files {
		found = found || (file.Path == "out/summary.txt" && file.ModifiedBy == "call "+c.ID)
	}
	if !found {
		t.Fatal("the summary is not listed as the call's")
	}
	var recs []models.UsageRecord
	f.rt.DB().Where("kind = ? AND subject = ?", runtime.UsageFunctionSeconds, c.ID).Find(&recs)
	if len(recs) != 1 || recs[0].Quantity <= 0 || !strings.EqualFold(recs[0].Unit, "second") {
		t.Fatalf("usage records: %+v", recs)
	}
	if want := recs[0].Quantity * runtime.PriceFunctionSecond; recs[0].Credits < want*0.999 || recs[0].Credits > want*1.001 {
		t.Fatalf("credits %v for %v s, want %v", recs[0].Credits, recs[0].Quantity, want)
	}
}
