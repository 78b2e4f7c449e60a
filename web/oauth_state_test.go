package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/oauth/oauthtest"
)

// The authorization's state is bound to the console session that started it
// and is single use: the same callback URL opened by another person, or by
// the same person signed in elsewhere, stores nothing; the browser that
// started it connects; opened again, it is refused. A refusal at the
// authorization server comes back as a message, not a credential.
func TestOAuthCallbackBoundToTheSessionThatStarted(t *testing.T) {
	w := newOAuthWorld(t, oauthtest.Options{})
	version := w.publish(secureConfig)
	// Opened by another person, or by the owner signed in elsewhere, the
	// callback stores nothing and spends the state (the owner starts again).
	member := w.person(w.browserOf(), "member@example.com", "member")
	for who, b := range map[string]*client{"another person": member, "the owner signed in elsewhere": w.browserOf()} {
		path := strings.TrimPrefix(w.approveHTTP(w.startConnect(w.browser, "", "")), w.srv.URL)
		_, page := b.get(path)
		w.keep("callback as "+who, page)
		_, page = w.browser.get(path)
		w.keep("callback after "+who, page)
		if st := w.as.Stats(); st.CodeExchanges != 0 {
			t.Fatalf("the callback opened first by %s exchanged the code or connected: %+v", who, st)
		}
		if creds := w.apiGet("/vaults/" + w.vault + "/credentials"); strings.Contains(creds, w.as.MCPURL) {
			t.Fatalf("the callback opened by %s stored a credential: %s", who, creds)
		}
	}

	path := strings.TrimPrefix(w.approveHTTP(w.startConnect(w.browser, "", "")), w.srv.URL)
	resp, _ := w.browser.get(path)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/vaults/"+w.vault {
		t.Fatalf("the callback in the browser that started: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	page := w.page("/vaults/" + w.vault)
	if got := credentialStatus(page); !strings.Contains(got, "connected") {
		t.Fatalf("after the callback the status reads %q", got)
	}
	if w.as.Stats().CodeExchanges != 1 {
		t.Fatalf("code exchanges: %+v", w.as.Stats())
	}
	resp, page = w.browser.get(path)
	w.keep("callback replayed", page)
	if w.as.Stats().CodeExchanges != 1 {
		t.Fatalf("the replayed callback exchanged the code again")
	}

	s := w.newSession(version)
	if c := w.callTool(s, "mcp__secure__echo", map[string]any{"text": "over http"}); c.Status != "succeeded" {
		t.Fatalf("echo: %+v", c)
	}

	// Denied at the server: the vault page says so; the credential is unchanged.
	to := w.startConnect(w.browser, "", "")
	resp, page = w.browser.get(strings.TrimPrefix(w.callbackURL(), w.srv.URL) + "?error=access_denied&state=" + stateOf(to))
	w.keep("callback denied", page)
	if resp.StatusCode == http.StatusSeeOther {
		page = w.page(resp.Header.Get("Location"))
	}
	if !strings.Contains(visibleText(page), "access_denied") && !strings.Contains(strings.ToLower(visibleText(page)), "denied") {
		t.Fatalf("a denied authorization shows no reason:\n%s", visibleText(page))
	}
	w.searchSecrets()
}

func stateOf(authURL string) string {
	i := strings.Index(authURL, "state=")
	if i < 0 {
		return ""
	}
	s := authURL[i+len("state="):]
	if j := strings.IndexByte(s, '&'); j >= 0 {
		s = s[:j]
	}
	return s
}
