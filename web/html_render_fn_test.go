package web_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/fn"
	htmlrender "github.com/subako/subako/runtime/fn/packages/html-render"
)

// html-render through a session: the app uploads a page, the agent's call
// renders it, the app downloads the PNG, and the call lists what it read and
// wrote. SQLite and PostgreSQL.
func TestHTMLRenderThroughASession(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap is not installed")
	}
	if _, err := os.Stat("/usr/lib/chromium/chromium"); err != nil {
		t.Skip("chromium is not installed")
	}
	f := newFnEnv(t)
	f.engine.SetNative(fn.NativeConfig{})
	dir := f.startVolumes(8<<20, 50, 32<<20)
	if _, _, err := f.rt.EnsureFunction(context.Background(), runtime.FunctionInstallInput{Manifest: htmlrender.Manifest(), Wasm: htmlrender.Bundle()}); err != nil {
		t.Fatalf("EnsureFunction html-render: %v", err)
	}
	w := f.volumeWorld(dir, `{"functions": [{"name": "page", "package": "html-render", "version": "1.0.0", "volume": "write", "default_policy": "allow"}]}`)
	if st, body := w.put(w.s.Token, "site/index.html", `<title>Shop</title><div style="width:900px;height:1200px"></div><img src="gone.png">`); st != 200 {
		t.Fatalf("upload: %d %s", st, body)
	}
	var c volumeCall
	st := w.api(w.s.Token, "POST", "/sessions/"+w.s.ID+"/tool_calls", map[string]any{"tool": "fn__page__render",
		"input": map[string]any{"path": "site/index.html", "width": 600, "height": 400, "screenshot": "shots/shop.png"}, "wait_seconds": 60}, &c)
	if st != 200 || c.Status != "succeeded" {
		t.Fatalf("fn__page__render: %d %+v", st, c)
	}
	var out struct {
		OK                 bool
		Title              string
		DocumentWidth      int   `json:"document_width"`
		HorizontalOverflow bool  `json:"horizontal_overflow"`
		MissingImages      []any `json:"missing_images"`
	}
	json.Unmarshal(c.Output, &out)
	if !out.OK || out.Title != "Shop" || out.DocumentWidth < 900 || !out.HorizontalOverflow || len(out.MissingImages) != 1 {
		t.Fatalf("output %s", c.Output)
	}
	st, body := w.raw(w.s.Token, "GET", "/sessions/"+w.s.ID+"/volume/shots/shop.png", nil, "")
	if st != 200 || len(body) < 8 || body[:8] != "\x89PNG\r\n\x1a\n" {
		t.Fatalf("the PNG through the API: %d, %d bytes", st, len(body))
	}
	var got volumeCall
	if st := w.api(w.s.Token, "GET", "/tool_calls/"+c.ID, nil, &got); st != 200 {
		t.Fatalf("ToolCall.get: %d", st)
	}
	wrote := false
	for _, v := range got.Volume {
		wrote = wrote || (v.Path == "shots/shop.png" && v.Op == "write")
	}
	if !wrote {
		t.Fatalf("the call's volume list: %+v", got.Volume)
	}
}
