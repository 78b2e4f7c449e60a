package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// What a bearer token resolved to is remembered between requests, but a
// token revoked, a session ended or a person removed is refused on the very
// next request, over an MCP connection that stays open and on the JSON API.

// mcpRefused tells whether a call on an open MCP connection failed for want
// of a valid token (the SDK client reports the endpoint's 401).
func mcpRefused(t *testing.T, err error, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: the call was answered", what)
	}
	if !strings.Contains(err.Error(), "401") && !strings.Contains(strings.ToLower(err.Error()), "unauthorized") {
		t.Fatalf("%s: refused, but not as unauthenticated: %v", what, err)
	}
}

func TestMCPRevokedTokenIsRefusedOnItsNextRequest(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	var tok struct{ ID, Token string }
	if st := w.api(w.owner, "POST", "/tokens", map[string]any{"name": "agent", "expires": "1h"}, &tok); st != 201 || tok.Token == "" {
		t.Fatalf("Token.create: %d %+v", st, tok)
	}
	cs := w.mcpAs(tok.Token, s.ID)
	// Several calls: the token is resolved once and then remembered.
	for range 3 {
		res, err := cs.CallTool(t.Context(), echoParams("before"))
		if err != nil || res.IsError || !strings.Contains(resultText(res), "Echo: before") {
			t.Fatalf("echo with the token: %v %+v", err, res)
		}
	}
	if st := w.api(tok.Token, "GET", "/sessions/"+s.ID, nil, nil); st != 200 {
		t.Fatalf("Session.get with the token: %d", st)
	}
	if st := w.api(w.owner, "DELETE", "/tokens/"+tok.ID, nil, nil); st != 204 && st != 200 {
		t.Fatalf("Token.revoke: %d", st)
	}
	_, err := cs.CallTool(t.Context(), echoParams("after"))
	mcpRefused(t, err, "the revoked token's next MCP call")
	if st := w.api(tok.Token, "GET", "/sessions/"+s.ID, nil, nil); st != http.StatusUnauthorized {
		t.Fatalf("the revoked token's next API request answered %d", st)
	}
	// The owner's own token, remembered too, still works.
	if st := w.api(w.owner, "GET", "/sessions/"+s.ID, nil, nil); st != 200 {
		t.Fatalf("another token after the revocation: %d", st)
	}
}

func TestMCPEndedSessionTokenIsRefusedOnItsNextRequest(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	cs := w.mcpAs(s.Token, s.ID)
	for range 3 {
		if res, err := cs.CallTool(t.Context(), echoParams("live")); err != nil || res.IsError {
			t.Fatalf("echo on the live session: %v %+v", err, res)
		}
	}
	if st := w.api(w.owner, "POST", "/sessions/"+s.ID+"/end", nil, nil); st != 200 && st != 204 {
		t.Fatalf("Session.end: %d", st)
	}
	// The endpoint may also close the MCP session as the session ends: either
	// way the call is not answered, and the token itself is refused.
	if res, err := cs.CallTool(t.Context(), echoParams("ended")); err == nil {
		t.Fatalf("a call after the session ended was answered: %+v", res)
	}
	if st, _ := w.rawAPI(s.Token, "GET", "/sessions/"+s.ID+"/tools", ""); st != http.StatusUnauthorized {
		t.Fatalf("the ended session's token on the API answered %d", st)
	}
	fresh := w.session(w.vault)
	if res, err := w.mcpAs(fresh.Token, fresh.ID).CallTool(t.Context(), echoParams("fresh")); err != nil || res.IsError {
		t.Fatalf("another session's token after the end: %v %+v", err, res)
	}
}

func TestMCPRemovedPersonIsRefusedOnTheirNextRequest(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	member := w.person(w.browserOf(), "member@example.com", "member").token()
	cs := w.mcpAs(member, s.ID)
	if res, err := cs.CallTool(t.Context(), echoParams("member")); err != nil || res.IsError {
		t.Fatalf("a member's echo: %v %+v", err, res)
	}
	if st := w.api(w.owner, "DELETE", "/users/"+w.userID("member@example.com"), nil, nil); st != 204 && st != 200 {
		t.Fatalf("User.remove: %d", st)
	}
	_, err := cs.CallTool(t.Context(), echoParams("removed"))
	mcpRefused(t, err, "a removed person's next MCP call")
}

// An API token past its expiry is refused though it was remembered while valid.
func TestRememberedTokenExpires(t *testing.T) {
	w := newWorld(t, everythingConfig)
	var tok struct{ ID, Token string }
	if st := w.api(w.owner, "POST", "/tokens", map[string]any{"name": "short", "expires": "1h"}, &tok); st != 201 {
		t.Fatalf("Token.create: %d", st)
	}
	if st := w.api(tok.Token, "GET", "/sessions", nil, nil); st != 200 {
		t.Fatalf("a fresh token: %d", st)
	}
	w.clock.Advance(time.Hour + time.Second)
	if st := w.api(tok.Token, "GET", "/sessions", nil, nil); st != http.StatusUnauthorized {
		t.Fatalf("an expired token answered %d", st)
	}
}
