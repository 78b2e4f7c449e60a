package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const tscPath = "testdata/typescript/node_modules/.bin/tsc"

// fetchClientFile GETs /api/v1/$.d.ts or $.js with a token ("" for none).
func (e *env) fetchClientFile(token, name string, hdr map[string]string) (*http.Response, string) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/v1/"+name, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// tsc type-checks files with --strict and only the ES library (no DOM, no
// Node types: the declarations need neither).
func tsc(t *testing.T, files ...string) (string, error) {
	t.Helper()
	bin, err := filepath.Abs(tscPath)
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		t.Fatal("typescript is not installed: npm ci --prefix web/testdata/typescript (make deps does it)")
	}
	args := append([]string{"--strict", "--noEmit", "--target", "es2022", "--module", "esnext", "--lib", "es2022"}, files...)
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err
}

func writeFile(t *testing.T, dir, name, src string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The program of issue 14: it lists sessions and creates an agent.
const ownerProgram = `/// <reference path="./subako.d.ts" />
const s = await $.Session.list({});
await $.Agent.create({ name: "x" });
void s;
export {};
`

// Every built-in role and a custom one get a $.d.ts that compiles with tsc
// --strict, holding only their verbs: the program that creates an agent
// type-checks against the owner's and not against the viewer's, whose file is
// a fraction of the owner's.
func TestClientTypesCompileForEveryRole(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	ownerTok := owner.token()
	admin := e.person(owner, "admin@example.com", "admin").token()
	member := e.person(owner, "member@example.com", "member").token()
	viewer := e.person(owner, "viewer@example.com", "viewer").token()
	seated := e.person(owner, "seated@example.com", "none")
	if st := e.api(ownerTok, "POST", "/roles", map[string]any{"name": "Readers", "permissions": []map[string]any{
		{"verb": "Session.list"}, {"verb": "Agent.list"}, {"verb": "Agent.get"},
	}}, nil); st != 201 {
		t.Fatalf("Role.create: %d", st)
	}
	if st := e.api(ownerTok, "POST", "/seats", map[string]any{"user": "seated@example.com", "role": "Readers"}, nil); st != 201 {
		t.Fatalf("Seat.create: %d", st)
	}

	files := map[string]string{}
	for _, who := range []struct{ name, token string }{{"owner", ownerTok}, {"admin", admin}, {"member", member}, {"viewer", viewer}} {
		resp, body := e.fetchClientFile(who.token, "$.d.ts", nil)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/typescript; charset=utf-8" {
			t.Fatalf("%s's $.d.ts: %d %q\n%s", who.name, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		files[who.name] = body
	}
	// The custom role's person has no token: their browser's cookie serves.
	resp, body := seated.get("/api/v1/$.d.ts")
	if resp.StatusCode != 200 {
		t.Fatalf("the seated person's $.d.ts by cookie: %d\n%s", resp.StatusCode, body)
	}
	files["custom role"] = body

	dir := t.TempDir()
	for who, src := range files {
		sub := filepath.Join(dir, strings.ReplaceAll(who, " ", "-"))
		os.Mkdir(sub, 0o755)
		dts := writeFile(t, sub, "subako.d.ts", src)
		if out, err := tsc(t, dts); err != nil {
			t.Errorf("tsc --strict over the %s's $.d.ts: %v\n%s", who, err, out)
		}
	}

	has := func(who, noun, verb string) bool {
		// A noun's namespace, then the verb's method inside it.
		src := files[who]
		i := strings.Index(src, "\n  "+noun+": {\n")
		if i < 0 {
			return false
		}
		end := strings.Index(src[i+1:], "\n  };")
		return end >= 0 && strings.Contains(src[i:i+1+end], "\n    "+verb+"(input")
	}
	for _, c := range []struct {
		who, noun, verb string
		want            bool
	}{
		{"owner", "Agent", "create", true}, {"owner", "Tenant", "delete", true}, {"owner", "Session", "list", true},
		{"admin", "Agent", "create", true},
		{"member", "Session", "create", true},
		{"viewer", "Session", "list", true}, {"viewer", "Agent", "create", false}, {"viewer", "Role", "delete", false},
		{"viewer", "Token", "revoke", true},
		{"custom role", "Agent", "get", true}, {"custom role", "Session", "list", true},
		{"custom role", "Agent", "create", false}, {"custom role", "Session", "end", false}, {"custom role", "Token", "create", false},
	} {
		if got := has(c.who, c.noun, c.verb); got != c.want {
			t.Errorf("%s's $.d.ts holds %s.%s: %v, want %v", c.who, c.noun, c.verb, got, c.want)
		}
	}
	ratio := float64(len(files["viewer"])) / float64(len(files["owner"]))
	t.Logf("bytes: owner %d, admin %d, member %d, viewer %d (%.2f of the owner's), custom role %d",
		len(files["owner"]), len(files["admin"]), len(files["member"]), len(files["viewer"]), ratio, len(files["custom role"]))
	if ratio > 0.6 {
		t.Errorf("the viewer's $.d.ts is %.2f of the owner's; a fraction was expected", ratio)
	}
	if len(files["custom role"]) >= len(files["viewer"]) {
		t.Errorf("a role of three verbs has a $.d.ts of %d bytes, the viewer's %d", len(files["custom role"]), len(files["viewer"]))
	}

	for who, wantOK := range map[string]bool{"owner": true, "viewer": false} {
		sub := filepath.Join(dir, who)
		prog := writeFile(t, sub, "program.ts", ownerProgram)
		out, err := tsc(t, filepath.Join(sub, "subako.d.ts"), prog)
		switch {
		case wantOK && err != nil:
			t.Errorf("the program against the owner's $.d.ts: %v\n%s", err, out)
		case !wantOK && err == nil:
			t.Errorf("the program type-checks against the viewer's $.d.ts, which should lack Agent.create")
		case !wantOK && !strings.Contains(out, "Property 'create' does not exist"):
			t.Errorf("tsc refused the program against the viewer's file, but not for Agent.create:\n%s", out)
		}
	}
}

// The files are cut to whoever asks: no credential, no file; the same
// verbs, the same ETag, answered 304 when the caller has it already; a
// narrowed token's files hold its permissions only.
func TestClientFilesNeedACallerAndRevalidate(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	for _, name := range []string{"$.d.ts", "$.js"} {
		if resp, _ := e.fetchClientFile("", name, nil); resp.StatusCode != 401 {
			t.Errorf("%s without a token or cookie: %d, want 401", name, resp.StatusCode)
		}
		if resp, _ := e.fetchClientFile("sbk_notatoken", name, nil); resp.StatusCode != 401 {
			t.Errorf("%s with a wrong token: %d, want 401", name, resp.StatusCode)
		}
		resp, body := e.fetchClientFile(tok, name, nil)
		etag := resp.Header.Get("ETag")
		if resp.StatusCode != 200 || etag == "" || !strings.Contains(resp.Header.Get("Cache-Control"), "private") {
			t.Fatalf("%s: %d, ETag %q, Cache-Control %q", name, resp.StatusCode, etag, resp.Header.Get("Cache-Control"))
		}
		if name == "$.js" && resp.Header.Get("Content-Type") != "text/javascript; charset=utf-8" {
			t.Errorf("$.js Content-Type %q", resp.Header.Get("Content-Type"))
		}
		if strings.Contains(body, tok) {
			t.Errorf("%s holds the token that fetched it", name)
		}
		if resp, _ := e.fetchClientFile(tok, name, map[string]string{"If-None-Match": etag}); resp.StatusCode != 304 {
			t.Errorf("%s with its ETag: %d, want 304", name, resp.StatusCode)
		}
		if resp, b := owner.get("/api/v1/" + name); resp.StatusCode != 200 || b != body {
			t.Errorf("%s by the owner's cookie: %d, same as by token: %v", name, resp.StatusCode, b == body)
		}
	}
	// A token narrowed to two verbs gets a file of those two.
	var narrow struct{ Token string }
	if st := e.api(tok, "POST", "/tokens", map[string]any{"name": "narrow", "expires": "1h",
		"permissions": []string{"Agent.list", "Agent.get"}}, &narrow); st != 201 || narrow.Token == "" {
		t.Fatalf("Token.create narrowed: %d", st)
	}
	_, dts := e.fetchClientFile(narrow.Token, "$.d.ts", nil)
	_, js := e.fetchClientFile(narrow.Token, "$.js", nil)
	if !strings.Contains(dts, "    list(input") || !strings.Contains(dts, "    get(input") || strings.Contains(dts, "create(input") ||
		strings.Contains(dts, "Session:") {
		t.Errorf("the narrowed token's $.d.ts:\n%s", dts)
	}
	if !strings.Contains(js, `"Agent.get"`) || strings.Contains(js, `"Agent.create"`) || strings.Contains(js, `"Session.list"`) {
		t.Errorf("the narrowed token's $.js:\n%s", js)
	}
}

// The served $.js, run by node against this Subako: the owner creates, gets
// and lists an agent through it (a path parameter), replaces a draft's config
// (the whole body) and lists two actions (a query parameter); the viewer's file has no Agent.create, and
// the owner's file used with the viewer's token throws SubakoError naming
// the missing permission.
func TestClientScriptRunsInNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed (make deps installs nodejs)")
	}
	e := newEnv(t)
	owner := e.owner()
	ownerTok := owner.token()
	viewerTok := e.person(owner, "viewer@example.com", "viewer").token()
	dir := t.TempDir()
	for _, f := range []struct{ name, token string }{{"owner.mjs", ownerTok}, {"viewer.mjs", viewerTok}} {
		resp, body := e.fetchClientFile(f.token, "$.js", nil)
		if resp.StatusCode != 200 {
			t.Fatalf("$.js: %d\n%s", resp.StatusCode, body)
		}
		writeFile(t, dir, f.name, body)
	}
	script := writeFile(t, dir, "run.mjs", `import { subako, SubakoError } from "./owner.mjs";
import viewerClient from "./viewer.mjs";
const url = process.env.SUBAKO_URL;
const $ = subako({ url, token: process.env.OWNER_TOKEN });
const out = {};
const made = await $.Agent.create({ name: "from-node" });
out.made = made.id;
out.got = (await $.Agent.get({ agent: made.id })).name;
out.listed = JSON.stringify(await $.Agent.list({}));
const draft = await $.Version.create({ agent: made.id, config: {} });
out.updated = (await $.Version.update({ version: draft.id, body: { mcp_servers: [] } })).id === draft.id;
const acts = await $.Action.list({ limit: 2 });
out.actions = (Array.isArray(acts) ? acts : acts.items).length;
const viewer = viewerClient({ url: url + "/api/v1/", token: process.env.VIEWER_TOKEN });
out.viewerSessions = JSON.stringify(await viewer.Session.list({}));
out.viewerHasCreate = typeof viewer.Agent?.create;
try {
  await subako({ url, token: process.env.VIEWER_TOKEN }).Agent.create({ name: "refused" });
  out.refused = "not refused";
} catch (e) {
  out.refused = { isSubakoError: e instanceof SubakoError, status: e.status, code: e.code,
    missing_permission: e.missing_permission, message: e.message };
}
try {
  await $.Agent.get({});
} catch (e) {
  out.missingParam = { field: e.field, status: e.status };
}
console.log(JSON.stringify(out));
`)
	cmd := exec.Command(node, script)
	cmd.Env = append(os.Environ(), "SUBAKO_URL="+e.srv.URL, "OWNER_TOKEN="+ownerTok, "VIEWER_TOKEN="+viewerTok)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, b)
	}
	var out struct {
		Made, Got, Listed, ViewerSessions, ViewerHasCreate string
		Updated                                            bool
		Actions                                            int
		Refused                                            struct {
			IsSubakoError     bool   `json:"isSubakoError"`
			Status            int    `json:"status"`
			Code              string `json:"code"`
			MissingPermission string `json:"missing_permission"`
			Message           string `json:"message"`
		}
		MissingParam struct {
			Field  string `json:"field"`
			Status int    `json:"status"`
		} `json:"missingParam"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("node printed %s: %v", b, err)
	}
	if !strings.HasPrefix(out.Made, "ag_") || out.Got != "from-node" || !strings.Contains(out.Listed, out.Made) {
		t.Errorf("create, get and list through $.js: %+v", out)
	}
	if !out.Updated || out.Actions != 2 {
		t.Errorf("Version.update with its whole body: %v; Action.list with limit 2 in the query: %d rows", out.Updated, out.Actions)
	}
	if out.ViewerHasCreate != "undefined" || !strings.HasPrefix(out.ViewerSessions, "[") {
		t.Errorf("the viewer's $.js: Agent.create is %s; Session.list answered %s", out.ViewerHasCreate, out.ViewerSessions)
	}
	r := out.Refused
	if !r.IsSubakoError || r.Status != 403 || r.Code != "permission_denied" || r.MissingPermission != "Agent.create" || r.Message == "" {
		t.Errorf("the viewer's Agent.create threw %+v, want a SubakoError 403 permission_denied missing Agent.create", r)
	}
	if out.MissingParam.Field != "agent" {
		t.Errorf("Agent.get without its agent: %+v, want a refusal naming agent", out.MissingParam)
	}
}
