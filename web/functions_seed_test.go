package web_test

import (
	"net/http"
	"strings"
	"testing"
)

// The Functions page answers the seed's "Start with a function" table: each
// row names its package, links it when this server has it, says when it does
// not, and says plainly why Run JavaScript has no quickjs.
func TestFunctionsPageAnswersTheSeedTable(t *testing.T) {
	f := newFnEnv(t)
	wasm, manifest := f.mods.Package(t, "html")
	if st, loc, body := f.postMultipart("/functions", "", map[string][]byte{"wasm": wasm, "manifest": manifest}, nil); st != http.StatusSeeOther {
		t.Fatalf("install html: %d %q %s", st, loc, body)
	}
	_, page := f.browser.get("/functions")
	_, seed, ok := strings.Cut(page, `data-testid="functions-seed"`)
	if !ok {
		t.Fatalf("the Functions page has no Start with a function table:\n%s", page)
	}
	for _, want := range []string{
		"Run Python the model wrote", "Run a shell script over files", "Read Word, Excel, PowerPoint, or PDF files",
		"Make a PDF or a PowerPoint deck", "Check how HTML renders", "Read GitHub", "Call your own API",
		`<a class="mono" href="/functions/html/`, // installed: linked
		`<span class="mono">html-render</span> <span class="small muted">(not installed on this server)</span>`,
		"quickjs is not shipped: no QuickJS build for WASI",
	} {
		if !strings.Contains(seed, want) {
			t.Errorf("the Start with a function table lacks %q", want)
		}
	}
	if n := strings.Count(seed, `data-testid="functions-seed-row"`); n != 8 {
		t.Errorf("the table has %d rows; the seed's has 8", n)
	}
}
