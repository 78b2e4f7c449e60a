package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// peopleMCP connects the official Go SDK client to people's /mcp with token.
func (e *env) peopleMCP(token string) *mcp.ClientSession {
	e.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "review", Version: "1"}, nil)
	cs, err := client.Connect(e.t.Context(), &mcp.StreamableClientTransport{Endpoint: e.srv.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	if err != nil {
		e.t.Fatalf("connect to /mcp: %v", err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

// A program's text is kept with its Action and shown on the Audit page, so a
// secret typed into it must not be: a program calling Credential.set is
// refused before its text is kept, and one that reaches it another way has
// the secret its refused call took removed from the kept text.
func TestCodeModeProgramSecretIsNeverKept(t *testing.T) {
	w := newWorld(t, everythingConfig)
	cs := w.peopleMCP(w.owner)
	do := func(prog string) (bool, string) {
		r, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "do", Arguments: map[string]any{"program": prog}})
		if err != nil {
			t.Fatalf("do: %v", err)
		}
		return r.IsError, resultText(r)
	}
	for _, prog := range []string{
		`await $.Credential.set({ vault: "` + w.vault + `", prefix: "https://x.example", type: "bearer", secret: "sk-live-SECRET42" })`,
		`await ($ as any)["Credential"]["set"]({ vault: "` + w.vault + `", prefix: "https://x.example", type: "bearer", secret: "sk-live-SECRET42" })`,
	} {
		if isErr, text := do(prog); !isErr || !strings.Contains(text, "Credential.set") {
			t.Errorf("a program calling Credential.set: %s", text)
		}
	}
	isErr, text := do(`const noun = "Cred" + "ential"
try { await ($ as any)[noun].set({ vault: "` + w.vault + `", prefix: "https://y.example", type: "bearer", secret: "sk-live-OTHER77" }) }
catch (e: any) { return e.code }`)
	if isErr || !strings.Contains(text, "not_in_code_mode") {
		t.Errorf("Credential.set reached by a computed name: %s", text)
	}
	var kept []string
	if err := w.rt.DB().Raw("SELECT program FROM actions WHERE program LIKE ? OR program LIKE ?", "%SECRET42%", "%OTHER77%").Scan(&kept).Error; err != nil {
		t.Fatal(err)
	}
	if len(kept) != 0 {
		t.Errorf("programs kept with the secret they passed: %q", kept)
	}
	var removed int64
	w.rt.DB().Raw("SELECT count(*) FROM actions WHERE verb = 'Program.run' AND program LIKE ?", "%[secret removed]%").Scan(&removed)
	if removed != 1 {
		t.Errorf("%d programs kept with their secret removed; want the computed-name one", removed)
	}
	var creds []struct{ Prefix string }
	w.api(w.owner, "GET", "/vaults/"+w.vault+"/credentials", nil, &creds)
	for _, c := range creds {
		if strings.Contains(c.Prefix, ".example") {
			t.Errorf("a program set a credential: %+v", c)
		}
	}
}
