package fn

import (
	"compress/flate"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// echoServer answers with what it received; hits counts requests.
func echoServer(t *testing.T, hits *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/big":
			w.Write([]byte(strings.Repeat("a", 200_000)))
			return
		case "/set-cookie":
			w.Header().Set("Set-Cookie", "sid=server-secret")
			w.Header().Set("X-Kept", "yes")
		}
		body, _ := io.ReadAll(r.Body)
		auth := r.Header.Get("Authorization")
		echo := map[string]any{
			"method": r.Method, "path": r.URL.Path, "body": string(body),
			"authorization": auth, "x_api_key": r.Header.Get("X-Api-Key"),
			"cookie": r.Header.Get("Cookie"), "x_test": r.Header.Get("X-Test"),
			// What the server was sent, which the guest may see: the
			// credential itself is masked in what it gets back.
			"authorization_sha256": fmt.Sprintf("%x", sha256.Sum256([]byte(auth))),
		}
		switch r.URL.Path {
		case "/deflate": // compressed though nobody asked
			w.Header().Set("Content-Encoding", "deflate")
			fw, _ := flate.NewWriter(w, flate.BestSpeed)
			json.NewEncoder(fw).Encode(echo)
			fw.Close()
			return
		case "/gzip-always":
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			json.NewEncoder(zw).Encode(echo)
			zw.Close()
			return
		case "/bad-location": // a Location the client cannot parse, quoted in its error
			w.Header().Set("Location", "http://%zz/"+auth)
			w.WriteHeader(http.StatusFound)
			return
		}
		if r.URL.Path == "/echo-everywhere" {
			w.Header().Set("X-Echo", "you sent "+auth)
			if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
				w.Header().Set("Content-Encoding", "gzip")
				zw := gzip.NewWriter(w)
				json.NewEncoder(zw).Encode(echo)
				zw.Close()
				return
			}
		}
		json.NewEncoder(w).Encode(echo)
	}))
	t.Cleanup(srv.Close)
	return srv
}

type fetched struct {
	Status  int                 `json:"status"`
	Headers map[string][]string `json:"headers"`
	Body    string              `json:"body"`
	BodyLen int                 `json:"body_len"`
}

type seen struct {
	Method, Path, Body, Authorization, Cookie string
	AuthorizationSHA256                       string `json:"authorization_sha256"`
	XAPIKey                                   string `json:"x_api_key"`
	XTest                                     string `json:"x_test"`
}

func fetchCall(t *testing.T, e *Engine, req CallRequest, input map[string]any) (fetched, CallResult, error) {
	t.Helper()
	p := load(t, e, "testdata", "fetcher")
	req.Tool = "fetch"
	req.Input, _ = json.Marshal(input)
	res, err := e.Call(t.Context(), p, req)
	var out fetched
	if err == nil {
		if err := json.Unmarshal(res.Output, &out); err != nil {
			t.Fatal(err)
		}
	}
	return out, res, err
}

func TestFetchDropsGuestCredentialsAndAttachesTheVaults(t *testing.T) {
	e := sharedEngine(t)
	var hits atomic.Int32
	srv := echoServer(t, &hits)
	tests := []struct {
		name     string
		creds    func(*http.Request)
		wantAuth string
	}{
		{"no vault credential", nil, ""},
		{"vault credential", func(r *http.Request) { r.Header.Set("Authorization", "Bearer vault-token") }, "Bearer vault-token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, res, err := fetchCall(t, e, CallRequest{Origins: []string{srv.URL}, Credentials: tt.creds},
				map[string]any{"url": srv.URL + "/echo", "method": "POST", "body": "hello"})
			if err != nil {
				t.Fatal(err)
			}
			var s seen
			if err := json.Unmarshal([]byte(out.Body), &s); err != nil {
				t.Fatal(err)
			}
			if s.AuthorizationSHA256 != sha(tt.wantAuth) || s.XAPIKey != "" || s.Cookie != "" {
				t.Fatalf("server saw Authorization %q (sha256 %s), X-Api-Key %q, Cookie %q; want %q and no guest credentials",
					s.Authorization, s.AuthorizationSHA256, s.XAPIKey, s.Cookie, tt.wantAuth)
			}
			if tt.wantAuth != "" && s.Authorization != strings.Repeat("*", len(tt.wantAuth)) {
				t.Fatalf("the guest was handed the echoed credential: %q", s.Authorization)
			}
			if s.XTest != "kept" || s.Method != "POST" || s.Body != "hello" {
				t.Fatalf("server saw %+v, want the guest's method, body and ordinary header", s)
			}
			if len(res.Fetches) != 1 || res.Fetches[0].Status != 200 || len(res.Fetches[0].DroppedHeaders) != 3 {
				t.Fatalf("fetch record %+v, want one 200 with 3 dropped headers", res.Fetches)
			}
		})
	}
}

func TestFetchRefusesOriginsNotGranted(t *testing.T) {
	e := sharedEngine(t)
	var hits atomic.Int32
	srv := echoServer(t, &hits)
	other := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) // same server, another origin
	tests := []struct {
		name    string
		origins []string
		url     string
		want    string
	}{
		{"nothing granted", nil, srv.URL + "/x", "is not granted to this function (granted: none)"},
		{"other host", []string{srv.URL}, other + "/x", "origin " + other + " is not granted"},
		{"other scheme", []string{srv.URL}, strings.Replace(srv.URL, "http:", "https:", 1), "is not granted"},
		{"credentials in URL", []string{srv.URL}, strings.Replace(srv.URL, "http://", "http://u:p@", 1), "must not carry user or password"},
		{"not http", []string{srv.URL}, "file:///etc/passwd", "scheme must be http or https"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := hits.Load()
			_, res, err := fetchCall(t, e, CallRequest{Origins: tt.origins}, map[string]any{"url": tt.url})
			if !errors.Is(err, ErrToolFailed) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Call = %v, want a refusal saying %q", err, tt.want)
			}
			if hits.Load() != before {
				t.Fatal("the refused request reached the server")
			}
			if len(res.Fetches) != 1 || res.Fetches[0].Error == "" {
				t.Fatalf("fetch record %+v, want one refused fetch", res.Fetches)
			}
		})
	}
}

// redirector sends every request to target+path.
func redirector(t *testing.T, target string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestFetchChecksEveryRedirectHop(t *testing.T) {
	e := sharedEngine(t)
	var hits atomic.Int32
	target := echoServer(t, &hits)
	hop := redirector(t, target.URL)
	creds := func(r *http.Request) {
		// The vault holds one credential per origin.
		r.Header.Set("Authorization", "Bearer token-for-"+r.URL.Host)
	}
	t.Run("to an origin not granted", func(t *testing.T) {
		_, _, err := fetchCall(t, e, CallRequest{Origins: []string{hop.URL}, Credentials: creds}, map[string]any{"url": hop.URL + "/echo"})
		if !errors.Is(err, ErrToolFailed) || !strings.Contains(err.Error(), "to origin "+target.URL+" refused") {
			t.Fatalf("Call = %v, want the redirect to %s refused", err, target.URL)
		}
		if hits.Load() != 0 {
			t.Fatal("the redirect reached the origin not granted")
		}
	})
	t.Run("to a granted origin gets that origin's credential", func(t *testing.T) {
		out, _, err := fetchCall(t, e, CallRequest{Origins: []string{hop.URL, target.URL}, Credentials: creds},
			map[string]any{"url": hop.URL + "/echo"})
		if err != nil {
			t.Fatal(err)
		}
		var s seen
		json.Unmarshal([]byte(out.Body), &s)
		if want := "Bearer token-for-" + strings.TrimPrefix(target.URL, "http://"); s.AuthorizationSHA256 != sha(want) {
			t.Fatalf("target saw Authorization %q (masked), want %q (its own, not the first hop's)", s.Authorization, want)
		}
	})
	t.Run("loops stop at the redirect limit", func(t *testing.T) {
		var loop *httptest.Server
		loop = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, loop.URL+"/again", http.StatusFound)
		}))
		defer loop.Close()
		_, _, err := fetchCall(t, e, CallRequest{Origins: []string{loop.URL}}, map[string]any{"url": loop.URL})
		if err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") {
			t.Fatalf("Call = %v, want the redirect limit named", err)
		}
	})
}

func TestFetchLimits(t *testing.T) {
	caps := DefaultCaps()
	caps.MaxFetches = 3
	caps.MaxFetchRequestBytes = 100
	caps.MaxFetchResponseBytes = 150_000
	e := newEngine(t, Config{Caps: caps})
	var hits atomic.Int32
	srv := echoServer(t, &hits)
	grant := CallRequest{Origins: []string{srv.URL}}
	tests := []struct {
		name  string
		input map[string]any
		want  string
	}{
		{"too many fetches", map[string]any{"url": srv.URL, "times": 4}, "at most 3 times"},
		{"request body", map[string]any{"url": srv.URL, "method": "POST", "body": strings.Repeat("b", 101)}, "request body is 101 bytes; the limit is 100"},
		{"response body", map[string]any{"url": srv.URL + "/big"}, "response body exceeds the limit of 150000 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := fetchCall(t, e, grant, tt.input)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Call = %v, want %q", err, tt.want)
			}
		})
	}
}

// A response larger than the guest's first buffer is handed over on a second
// http_fetch call without fetching again.
func TestFetchHandsOverLargeResponses(t *testing.T) {
	e := sharedEngine(t)
	var hits atomic.Int32
	srv := echoServer(t, &hits)
	out, _, err := fetchCall(t, e, CallRequest{Origins: []string{srv.URL}}, map[string]any{"url": srv.URL + "/big"})
	if err != nil {
		t.Fatal(err)
	}
	if out.BodyLen != 200_000 || hits.Load() != 1 {
		t.Fatalf("got %d bytes after %d requests, want 200000 after 1", out.BodyLen, hits.Load())
	}
}

func TestFetchHidesCookiesTheServerSets(t *testing.T) {
	e := sharedEngine(t)
	var hits atomic.Int32
	srv := echoServer(t, &hits)
	out, _, err := fetchCall(t, e, CallRequest{Origins: []string{srv.URL}}, map[string]any{"url": srv.URL + "/set-cookie"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.Headers["Set-Cookie"]; ok || fmt.Sprint(out.Headers["X-Kept"]) != "[yes]" {
		t.Fatalf("guest got headers %v, want X-Kept without Set-Cookie", out.Headers)
	}
}

func TestFetchTimeout(t *testing.T) {
	caps := DefaultCaps()
	caps.FetchTimeout = 100 * time.Millisecond
	e := newEngine(t, Config{Caps: caps})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	_, _, err := fetchCall(t, e, CallRequest{Origins: []string{slow.URL}}, map[string]any{"url": slow.URL})
	if !errors.Is(err, ErrToolFailed) || !strings.Contains(err.Error(), "no answer within the fetch timeout of 100ms") {
		t.Fatalf("Call = %v, want the fetch timeout named", err)
	}
}

func sha(s string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(s))) }

// A server that repeats the credential it was sent, in its body, in a
// header, or in a body compressed because the guest asked for gzip, never
// hands it to the function: each copy comes back as '*'s.
func TestFetchMasksAnEchoedCredential(t *testing.T) {
	e := sharedEngine(t)
	var hits atomic.Int32
	srv := echoServer(t, &hits)
	const token = "s3cr3t-vault-token-0123"
	creds := func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
	out, _, err := fetchCall(t, e, CallRequest{Origins: []string{srv.URL}, Credentials: creds},
		map[string]any{"url": srv.URL + "/echo-everywhere", "headers": map[string]string{"Accept-Encoding": "gzip"}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(out)
	if zr, err := gzip.NewReader(strings.NewReader(out.Body)); err == nil { // handed on compressed
		raw, _ := io.ReadAll(zr)
		got = append(got, raw...)
	}
	if strings.Contains(string(got), token) {
		t.Fatalf("the function was handed the credential: %s", got)
	}
	var s seen
	if err := json.Unmarshal([]byte(out.Body), &s); err != nil {
		t.Fatalf("the answer is not the echo, read decoded: %v (%s)", err, got)
	}
	if s.AuthorizationSHA256 != sha("Bearer "+token) || s.Authorization != strings.Repeat("*", len("Bearer "+token)) {
		t.Fatalf("echo %+v; want the credential sent and masked in what came back", s)
	}
	if h := out.Headers["X-Echo"]; len(h) != 1 || h[0] != "you sent "+strings.Repeat("*", len("Bearer "+token)) {
		t.Fatalf("X-Echo %q; want the credential masked", h)
	}

	// What cannot be masked is refused, and an error never quotes it.
	for _, c := range []struct {
		name, path string
		headers    map[string]string
		want       string
	}{
		{"deflate sent unasked", "/deflate", nil, `answered encoded as "deflate" without being asked`},
		{"gzip after a Range, which stops the transport asking", "/gzip-always", map[string]string{"Range": "bytes=0-"}, `answered encoded as "gzip"`},
		{"a Location quoting the credential", "/bad-location", nil, "Location"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := fetchCall(t, e, CallRequest{Origins: []string{srv.URL}, Credentials: creds},
				map[string]any{"url": srv.URL + c.path, "headers": c.headers})
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), token) {
				t.Fatalf("Call = %v; want a refusal saying %q, without the credential", err, c.want)
			}
		})
	}
}
