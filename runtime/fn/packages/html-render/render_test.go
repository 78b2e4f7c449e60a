package htmlrender_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/fn"
	htmlrender "github.com/subako/subako/runtime/fn/packages/html-render"
)

// These tests run the html-render package on the native engine for real:
// bwrap, Debian's Chromium and python3, cgroups where the tree is writable.

func engine(t testing.TB) (*fn.Engine, *fn.Package) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap is not installed (apt-get install bubblewrap)")
	}
	if _, err := os.Stat("/usr/lib/chromium/chromium"); err != nil {
		t.Skip("Debian's chromium is not installed (make deps)")
	}
	ctx := context.Background()
	e, err := fn.New(ctx, fn.Config{AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(ctx) })
	m, err := fn.ParseManifest(htmlrender.Manifest(), e.Caps())
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Install(ctx, htmlrender.Bundle(), m)
	if err != nil {
		t.Fatal(err)
	}
	if p.Engine() != fn.EngineNative {
		t.Fatalf("engine %q, want native", p.Engine())
	}
	return e, p
}

type console struct {
	Level, Source, Text, URL string
}

type answer struct {
	OK                  bool   `json:"ok"`
	Error               string `json:"error"`
	Title               string `json:"title"`
	DocumentWidth       int    `json:"document_width"`
	DocumentHeight      int    `json:"document_height"`
	ViewportWidth       int    `json:"viewport_width"`
	HorizontalOverflow  bool   `json:"horizontal_overflow"`
	OverflowingElements []struct {
		Element string `json:"element"`
		Right   int    `json:"right"`
	} `json:"overflowing_elements"`
	Images        int `json:"images"`
	MissingImages []struct {
		Src string `json:"src"`
	} `json:"missing_images"`
	Console    []console `json:"console"`
	Screenshot struct {
		Path          string `json:"path"`
		Width, Height int
	} `json:"screenshot"`
	Fetches []struct {
		URL   string `json:"url"`
		Error string `json:"error"`
	} `json:"fetches"`
}

func render(t testing.TB, e *fn.Engine, p *fn.Package, input map[string]any, req fn.CallRequest) answer {
	t.Helper()
	out := renderRaw(t, e, p, input, req)
	var a answer
	if err := json.Unmarshal(out, &a); err != nil {
		t.Fatalf("output %s: %v", out, err)
	}
	return a
}

// renderRaw calls render and returns its output, which the call must have.
func renderRaw(t testing.TB, e *fn.Engine, p *fn.Package, input map[string]any, req fn.CallRequest) json.RawMessage {
	t.Helper()
	in, _ := json.Marshal(input)
	req.Tool, req.Input = "render", in
	res, err := e.Call(context.Background(), p, req)
	if err != nil {
		t.Fatalf("call: %v (stderr %s)", err, res.Stderr)
	}
	t.Logf("rendered in %s: %.300s", res.Duration, res.Output)
	return res.Output
}

const page = `<!doctype html>
<html><head><title>Layout check</title>
<style>body{margin:0;font-family:sans-serif} .box{height:1500px;background:#36c}
 #wide{width:1600px;height:20px;background:#c33}</style></head>
<body><h1>Hello</h1><div class="box"></div><div id="wide"></div>
<img src="logo.png" alt="logo"><img src="missing.png" alt="gone">
<script>console.error("boom: " + 42); undefinedFunction();</script>
</body></html>`

// A page in the volume renders to a PNG of the expected size; its console
// error, uncaught exception, missing image and overflowing element are reported.
func TestHTMLRenderScreenshotConsoleAndMissingImage(t *testing.T) {
	e, p := engine(t)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "site"), 0o750)
	os.WriteFile(filepath.Join(dir, "site/index.html"), []byte(page), 0o640)
	// A real 2x2 PNG beside it: it loads, missing.png does not.
	var logo bytes.Buffer
	png.Encode(&logo, image2x2())
	os.WriteFile(filepath.Join(dir, "site/logo.png"), logo.Bytes(), 0o640)
	vol := &fn.VolumeMount{Dir: dir, Write: true, MaxFileBytes: 32 << 20, MaxNewBytes: 64 << 20, MaxNewFiles: 10}
	a := render(t, e, p, map[string]any{"path": "site/index.html", "width": 800, "height": 600, "screenshot": "shots/index.png"}, fn.CallRequest{Volume: vol})
	if !a.OK {
		t.Fatalf("render failed: %s", a.Error)
	}
	if a.Title != "Layout check" || a.ViewportWidth != 800 {
		t.Errorf("title %q viewport %d", a.Title, a.ViewportWidth)
	}
	if a.DocumentWidth != 1600 || !a.HorizontalOverflow || len(a.OverflowingElements) == 0 || a.OverflowingElements[0].Element != "div#wide" {
		t.Errorf("overflow: width %d overflow %v elements %+v", a.DocumentWidth, a.HorizontalOverflow, a.OverflowingElements)
	}
	if a.DocumentHeight < 1500 {
		t.Errorf("document height %d, want at least 1500", a.DocumentHeight)
	}
	if a.Images != 2 || len(a.MissingImages) != 1 || a.MissingImages[0].Src != "file://"+"/volume/site/missing.png" {
		t.Errorf("images %d, missing %+v", a.Images, a.MissingImages)
	}
	var sawError, sawException bool
	for _, c := range a.Console {
		sawError = sawError || (c.Level == "error" && c.Text == "boom: 42")
		sawException = sawException || (c.Source == "exception" && strings.Contains(c.Text, "undefinedFunction is not defined"))
	}
	if !sawError || !sawException {
		t.Errorf("console %+v", a.Console)
	}
	f, err := os.Open(filepath.Join(dir, "shots/index.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if cfg.Width != 800 || cfg.Height != a.DocumentHeight || a.Screenshot.Path != "shots/index.png" || a.Screenshot.Height != cfg.Height {
		t.Errorf("PNG %dx%d, answer %+v, document height %d", cfg.Width, cfg.Height, a.Screenshot, a.DocumentHeight)
	}
}

// Inline HTML, a viewport-only screenshot; no network: an http image is a
// missing image and the broker says its origin is not granted.
func TestHTMLRenderInlineNoNetwork(t *testing.T) {
	e, p := engine(t)
	dir := t.TempDir()
	vol := &fn.VolumeMount{Dir: dir, Write: true, MaxFileBytes: 32 << 20, MaxNewBytes: 64 << 20, MaxNewFiles: 10}
	a := render(t, e, p, map[string]any{
		"html":  `<title>t</title><p>hi</p><img src="http://example.com/x.png">`,
		"width": 640, "height": 480, "full_page": false,
	}, fn.CallRequest{Volume: vol})
	if !a.OK {
		t.Fatalf("render failed: %s", a.Error)
	}
	if a.DocumentWidth != 640 || a.HorizontalOverflow {
		t.Errorf("width %d overflow %v", a.DocumentWidth, a.HorizontalOverflow)
	}
	if len(a.MissingImages) != 1 || len(a.Fetches) != 1 || !strings.Contains(a.Fetches[0].Error, "not granted") {
		t.Errorf("missing %+v fetches %+v", a.MissingImages, a.Fetches)
	}
	f, err := os.Open(filepath.Join(dir, "render/page.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil || cfg.Width != 640 || cfg.Height != 480 {
		t.Fatalf("PNG %+v %v", cfg, err)
	}
	// A read-only grant cannot take a screenshot, and says so; without one it renders.
	ro := &fn.VolumeMount{Dir: dir}
	b := render(t, e, p, map[string]any{"html": "<p>x</p>"}, fn.CallRequest{Volume: ro})
	if b.OK || !strings.Contains(b.Error, "read-and-write volume grant") {
		t.Errorf("read-only grant: %+v", b)
	}
	c := render(t, e, p, map[string]any{"html": "<p>x</p>", "screenshot": ""}, fn.CallRequest{})
	if !c.OK || c.DocumentWidth != 1280 {
		t.Errorf("no volume, no screenshot: %+v", c)
	}
}
