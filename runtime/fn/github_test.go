package fn

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeGitHub plays the parts of the GitHub REST API the package uses and, like
// GitHub, refuses requests without the expected token.
func fakeGitHub(t testing.TB, token, marker string) *httptest.Server {
	t.Helper()
	issue := func(n int, title string, pr bool) map[string]any {
		is := map[string]any{"number": n, "title": title, "state": "open", "user": map[string]any{"login": "octocat"},
			"labels": []any{map[string]any{"name": "bug"}}, "comments": 2, "created_at": "2026-01-02T03:04:05Z",
			"html_url": fmt.Sprintf("https://github.com/octo/hello/issues/%d", n), "body": "Body of " + title,
			"url": "https://api.github.com/ignored"}
		if pr {
			is["pull_request"] = map[string]any{"url": "x"}
			is["head"], is["base"] = map[string]any{"ref": "feature"}, map[string]any{"ref": "main"}
		}
		return is
	}
	routes := map[string]any{
		"/repos/octo/hello": map[string]any{"full_name": "octo/hello", "description": marker, "private": false,
			"default_branch": "main", "language": "Go", "topics": []string{"demo"}, "stargazers_count": 42,
			"forks_count": 7, "open_issues_count": 3, "html_url": "https://github.com/octo/hello", "owner": map[string]any{"id": 1}},
		"/repos/octo/hello/issues":   []any{issue(1, "First bug", false), issue(2, "A pull request", true)},
		"/repos/octo/hello/issues/1": issue(1, "First bug", false),
		"/repos/octo/hello/pulls":    []any{issue(2, "A pull request", true)},
		"/repos/octo/hello/contents/docs/READ ME.md": map[string]any{"type": "file", "path": "docs/READ ME.md", "sha": "abc",
			"size": 12, "encoding": "base64", "content": "SGVsbG8s\nIHdvcmxkIQ==\n"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`))
			return
		}
		body, ok := routes[r.URL.Path]
		if !ok || (strings.Contains(r.URL.Path, "/contents/") && r.URL.Query().Get("ref") != "main") {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"message":"Not Found"}`))
			return
		}
		json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// memoryScan records, for each instance closed, whether its memory held the
// token and whether it held the marker the server sent. The marker is the
// control: it proves the scan sees what the guest received.
type memoryScan struct {
	mu            sync.Mutex
	token, marker []byte
	sawToken      int
	sawMarker     int
	instances     int
}

func (s *memoryScan) onFree(mem []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.instances++
	if bytes.Contains(mem, s.token) {
		s.sawToken++
	}
	if bytes.Contains(mem, s.marker) {
		s.sawMarker++
	}
}

// merge returns base with extra's fields added.
func merge(base, extra map[string]any) map[string]any {
	m := map[string]any{}
	for k, v := range base {
		m[k] = v
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func TestGitHubWithVaultCredential(t *testing.T) {
	token := "ghp_" + rand.Text()
	marker := "marker-" + rand.Text()
	srv := fakeGitHub(t, token, marker)
	scan := &memoryScan{token: []byte(token), marker: []byte(marker)}
	// The engine's instances hand their memory to scan as they close: the
	// token must be in none of them, though the host attached it to every
	// request. It cannot be, structurally: the host copies the guest's request
	// out of guest memory, then Credentials edits only the host's http.Request,
	// and the response written back carries no request headers.
	e := newEngine(t, Config{})
	e.onFree = scan.onFree
	p := load(t, e, "packages", "github")
	creds := func(r *http.Request) {
		if "http://"+r.URL.Host == srv.URL {
			r.Header.Set("Authorization", "Bearer "+token)
		}
	}
	base := map[string]any{"owner": "octo", "repo": "hello", "api_url": srv.URL}
	with := func(extra map[string]any) map[string]any { return merge(base, extra) }
	tests := []struct {
		tool  string
		input map[string]any
		want  []string // substrings of the output
	}{
		{"get_repo", base, []string{`"full_name":"octo/hello"`, `"stargazers_count":42`, marker}},
		{"list_issues", with(map[string]any{"state": "all", "per_page": 10}), []string{`"title":"First bug"`, `"labels":[{"name":"bug"}]`}},
		{"get_issue", with(map[string]any{"number": 1}), []string{`"body":"Body of First bug"`}},
		{"list_pulls", base, []string{`"title":"A pull request"`, `"head":{"ref":"feature"}`}},
		{"get_file", with(map[string]any{"path": "docs/READ ME.md", "ref": "main"}), []string{`"content":"Hello, world!"`}},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			in, _ := json.Marshal(tt.input)
			res, err := e.Call(t.Context(), p, CallRequest{Tool: tt.tool, Input: in, Origins: []string{srv.URL}, Credentials: creds})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(res.Output), w) {
					t.Errorf("output %s lacks %s", res.Output, w)
				}
			}
			if dump := fmt.Sprintf("%s %s %+v", res.Output, res.Stderr, res.Fetches); strings.Contains(dump, token) {
				t.Fatalf("the token appears in the call's result: %s", dump)
			}
		})
	}
	t.Run("list_issues leaves pull requests out", func(t *testing.T) {
		var out struct{ Issues []struct{ Number int } }
		res, err := e.Call(t.Context(), p, CallRequest{Tool: "list_issues", Input: mustJSON(base), Origins: []string{srv.URL}, Credentials: creds})
		if err != nil {
			t.Fatal(err)
		}
		if json.Unmarshal(res.Output, &out); len(out.Issues) != 1 || out.Issues[0].Number != 1 {
			t.Fatalf("list_issues gave %s, want issue 1 alone", res.Output)
		}
	})
	scan.check(t, len(tests))
}

func (s *memoryScan) check(t *testing.T, calls int) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.instances < calls || s.sawMarker == 0 {
		t.Fatalf("memory scan saw %d instances, marker in %d: the scan is not seeing guest memory", s.instances, s.sawMarker)
	}
	if s.sawToken != 0 {
		t.Fatalf("the token was in guest memory in %d of %d instances", s.sawToken, s.instances)
	}
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func TestGitHubWithoutCredentialIsRefusedByTheAPI(t *testing.T) {
	token := "ghp_" + rand.Text()
	srv := fakeGitHub(t, token, "m")
	input := mustJSON(map[string]any{"owner": "octo", "repo": "hello", "api_url": srv.URL})
	tests := []struct {
		name    string
		req     CallRequest
		reason  error
		message string
	}{
		{"no credential", CallRequest{Origins: []string{srv.URL}}, ErrToolFailed, "HTTP 401: Bad credentials"},
		{"wrong origin's credential", CallRequest{Origins: []string{srv.URL}, Credentials: func(r *http.Request) {
			if r.URL.Host == "api.github.com" {
				r.Header.Set("Authorization", "Bearer "+token)
			}
		}}, ErrToolFailed, "HTTP 401"},
		{"default API not granted", CallRequest{Input: mustJSON(map[string]any{"owner": "octo", "repo": "hello"}), Origins: []string{srv.URL}},
			ErrToolFailed, "origin https://api.github.com is not granted"},
		{"bad owner", CallRequest{Input: mustJSON(map[string]any{"owner": "../x", "repo": "hello", "api_url": srv.URL}), Origins: []string{srv.URL}},
			ErrToolFailed, "owner: must be"},
		{"missing repo", CallRequest{Input: mustJSON(map[string]any{"owner": "octo"}), Origins: []string{srv.URL}},
			ErrInvalidInput, "repo"},
	}
	e := sharedEngine(t)
	p := load(t, e, "packages", "github")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Tool = "get_repo"
			if tt.req.Input == nil {
				tt.req.Input = input
			}
			_, err := e.Call(t.Context(), p, tt.req)
			if !errors.Is(err, tt.reason) || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("Call = %v, want %v saying %q", err, tt.reason, tt.message)
			}
		})
	}
}

func TestGitHubBinaryFileIsBase64(t *testing.T) {
	token := "t"
	bin := []byte{0xff, 0x00, 0xfe}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"type": "file", "path": "a.bin", "sha": "s", "size": 3,
			"encoding": "base64", "content": base64.StdEncoding.EncodeToString(bin)})
	}))
	defer srv.Close()
	var out struct {
		Content       string
		ContentBase64 bool `json:"content_is_base64"`
	}
	err := runTool(t, "github", "get_file", map[string]any{"owner": "o", "repo": "r", "path": "a.bin", "api_url": srv.URL},
		CallRequest{Origins: []string{srv.URL}, Credentials: func(r *http.Request) { r.Header.Set("Authorization", token) }}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !out.ContentBase64 || out.Content != base64.StdEncoding.EncodeToString(bin) {
		t.Fatalf("got %+v, want the bytes as base64", out)
	}
}
