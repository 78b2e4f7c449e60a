package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/web"
)

// The bootstrap a script does: add the owner and make a token offline, then
// drive the running server with `subako do`.
func TestOfflineBootstrapThenDo(t *testing.T) {
	dir, url := modelstest.Fresh(t)
	db := []string{"--data", dir, "--database-url", url}
	var out bytes.Buffer
	if err := userCmd(append([]string{"add", "--email", "owner@example.com", "--access", "owner", "--password-stdin"}, db...),
		strings.NewReader("correct-horse-battery\n"), &out); err != nil {
		t.Fatalf("user add: %v", err)
	}
	if !strings.HasPrefix(out.String(), "added owner@example.com as owner") {
		t.Fatalf("user add said %q", out.String())
	}
	out.Reset()
	if err := userCmd(append([]string{"add", "--email", "viewer@example.com", "--access", "viewer", "--base-url", "https://subako.example.com/"}, db...), nil, &out); err != nil {
		t.Fatalf("user add without a password: %v", err)
	}
	if !strings.Contains(out.String(), "https://subako.example.com/invite/inv_") {
		t.Fatalf("user add without a password said %q", out.String())
	}
	if err := userCmd(append([]string{"add", "--email", "not-an-email", "--access", "owner", "--password-stdin"}, db...),
		strings.NewReader("correct-horse-battery\n"), io.Discard); err == nil || !strings.Contains(err.Error(), "email") {
		t.Fatalf("a bad email: %v", err)
	}
	out.Reset()
	if err := tokenCmd(append([]string{"create", "--email", "owner@example.com", "--expires", "1h"}, db...), &out); err != nil {
		t.Fatalf("token create: %v", err)
	}
	token := strings.TrimSpace(out.String())
	if !strings.HasPrefix(token, "sbk_") || strings.Contains(token, "\n") {
		t.Fatalf("token create printed %q, want the token alone", out.String())
	}

	srv := serveDB(t, dir, url)
	t.Setenv("SUBAKO_URL", srv.URL)
	t.Setenv("SUBAKO_TOKEN", token)
	var agent struct{ ID, Name string }
	doJSON(t, &agent, "Agent.create", `{"name": "from the cli"}`)
	if agent.Name != "from the cli" || agent.ID == "" {
		t.Fatalf("Agent.create: %+v", agent)
	}
	var v struct{ ID, State string }
	doJSON(t, &v, "Version.create", `{"agent": "`+agent.ID+`"}`)
	doJSON(t, &v, "Version.update", `{"version": "`+v.ID+`", "body": {"builtins": [{"name": "session"}]}}`)
	// A forgotten body is refused, here and by the server, and the draft keeps its grants.
	if err := doCmd([]string{"Version.update", "--json", `{"version": "` + v.ID + `"}`}, nil, io.Discard); err == nil || !strings.Contains(err.Error(), `"body"`) {
		t.Fatalf("Version.update without a body: %v", err)
	}
	doJSON(t, &v, "Version.publish", `{"version": "`+v.ID+`"}`)
	if v.State != "published" {
		t.Fatalf("Version.publish: %+v", v)
	}
	var acts []struct{ Verb, By string }
	doJSON(t, &acts, "Action.list", `{"verb": "Version.publish"}`)
	if len(acts) != 1 || acts[0].By != "owner@example.com" {
		t.Fatalf("Action.list: %+v", acts)
	}
	// Input from standard input works the same as --json.
	out.Reset()
	if err := doCmd([]string{"Agent.get"}, strings.NewReader(`{"agent": "`+agent.ID+`"}`), &out); err != nil || !strings.Contains(out.String(), "from the cli") {
		t.Fatalf("Agent.get from stdin: %v %s", err, out.String())
	}
	if err := doCmd([]string{"Agent.get", "--json", `{}`}, nil, io.Discard); err == nil || !strings.Contains(err.Error(), `needs "agent"`) {
		t.Fatalf("a missing path parameter: %v", err)
	}
	if err := doCmd([]string{"Agent.fly", "--json", `{}`}, nil, io.Discard); err == nil || !strings.Contains(err.Error(), "Agent.create") {
		t.Fatalf("an unknown verb should list the known ones: %v", err)
	}
	if err := doCmd([]string{"Agent.create", "--json", `{"name": ""}`}, nil, io.Discard); err == nil || !strings.Contains(err.Error(), "422") {
		t.Fatalf("a refused verb: %v", err)
	}
}

func doJSON(t *testing.T, into any, verb, input string) {
	t.Helper()
	var out bytes.Buffer
	if err := doCmd([]string{verb, "--json", input}, nil, &out); err != nil {
		t.Fatalf("do %s: %v", verb, err)
	}
	if err := json.Unmarshal(out.Bytes(), into); err != nil {
		t.Fatalf("do %s printed %q: %v", verb, out.String(), err)
	}
}

// serveDB runs the console and API over the database the CLI wrote.
func serveDB(t *testing.T, dir, url string) *httptest.Server {
	t.Helper()
	return serveRuntime(t, openRuntime(t, dir, url))
}

// openRuntime is a runtime over the database the CLI wrote.
func openRuntime(t *testing.T, dir, url string) *runtime.Runtime {
	t.Helper()
	db, err := models.Open(dir, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rt := runtime.New(db, runtime.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(rt.Close)
	return rt
}

// serveRuntime runs the console and API over rt.
func serveRuntime(t *testing.T, rt *runtime.Runtime) *httptest.Server {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	key := []byte("0123456789abcdef0123456789abcdef")
	srv := httptest.NewServer(web.New(rt, web.Config{CookieHashKey: key, CookieBlockKey: key, Log: quiet}))
	t.Cleanup(srv.Close)
	return srv
}
