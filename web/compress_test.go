package web_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"

	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/local"
)

// getEncoded fetches path with the browser's cookies, asking for the body in
// the given encodings ("" asks for none). Setting the header by hand keeps
// Go's transport from decoding anything on its own.
func (c *client) getEncoded(ctx context.Context, path, accept string, hdr map[string]string) *http.Response {
	c.e.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.e.srv.URL+path, nil)
	if accept == "" {
		accept = "identity"
	}
	req.Header.Set("Accept-Encoding", accept)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.e.t.Fatalf("GET %s: %v", path, err)
	}
	return resp
}

func TestCompressionForPagesNotForStreamsOrArchives(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	s := w.session()
	w.exec(s, "echo kept > notes.txt")
	b := w.browserOf()

	decoders := map[string]func(io.Reader) (io.Reader, error){
		"gzip": func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) },
		"br":   func(r io.Reader) (io.Reader, error) { return brotli.NewReader(r), nil },
	}
	for _, tc := range []struct{ accept, want string }{
		{"gzip, deflate", "gzip"}, {"gzip, deflate, br", "br"}, {"br;q=0, gzip", "gzip"}, {"", ""},
	} {
		resp := b.getEncoded(t.Context(), "/sessions/"+s.ID, tc.accept, nil)
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := resp.Header.Get("Content-Encoding"); got != tc.want || resp.StatusCode != 200 {
			t.Fatalf("the session page for Accept-Encoding %q came %d with Content-Encoding %q; want %q", tc.accept, resp.StatusCode, got, tc.want)
		}
		if !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
			t.Errorf("the session page does not vary by Accept-Encoding: %q", resp.Header.Values("Vary"))
		}
		page := raw
		if dec := decoders[tc.want]; dec != nil {
			r, err := dec(bytes.NewReader(raw))
			if err == nil {
				page, err = io.ReadAll(r)
			}
			if err != nil {
				t.Fatalf("decode the %s page: %v", tc.want, err)
			}
			if len(raw) >= len(page)/2 {
				t.Errorf("%s made the page %d bytes of %d", tc.want, len(raw), len(page))
			}
		}
		if !strings.Contains(string(page), `data-testid="call-log"`) {
			t.Fatalf("the page for %q does not read as the session page: %.200q", tc.accept, page)
		}
	}

	// A tool call's answer (about 700 bytes) goes out as it is, with its
	// length: compressing what fits in one packet gains nothing. One whose
	// output makes it long comes compressed, whole.
	for _, tc := range []struct {
		command, want string
	}{{"true", ""}, {"seq 2000", "gzip"}} {
		body, _ := json.Marshal(map[string]any{"tool": execTool, "input": map[string]any{"command": tc.command}, "wait_seconds": 30})
		req, _ := http.NewRequest("POST", w.srv.URL+"/api/v1/sessions/"+s.ID+"/tool_calls", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.Token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answer := raw
		if tc.want == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(raw))
			if err == nil {
				answer, err = io.ReadAll(zr)
			}
			if err != nil {
				t.Fatalf("decode the answer to %q: %v", tc.command, err)
			}
		}
		var c struct{ Status string }
		if got := resp.Header.Get("Content-Encoding"); got != tc.want || resp.StatusCode != 200 || json.Unmarshal(answer, &c) != nil || c.Status != "succeeded" {
			t.Fatalf("the answer to %q came %d with Content-Encoding %q (want %q): %.300s", tc.command, resp.StatusCode, got, tc.want, answer)
		}
		if tc.want == "" && resp.ContentLength != int64(len(raw)) {
			t.Fatalf("the answer to %q came without its length: Content-Length %d for %d bytes", tc.command, resp.ContentLength, len(raw))
		}
	}

	// An error page goes through the same compressor, whole.
	resp := b.getEncoded(t.Context(), "/sessions/ses_nosuchsession", "gzip", nil)
	zr, err := gzip.NewReader(resp.Body)
	if err != nil || resp.StatusCode != 404 {
		t.Fatalf("the 404 page came %d, Content-Encoding %q: %v", resp.StatusCode, resp.Header.Get("Content-Encoding"), err)
	}
	if page, err := io.ReadAll(zr); err != nil || !strings.Contains(string(page), "</html>") {
		t.Fatalf("the 404 page decodes to %.200q (%v)", page, err)
	}
	resp.Body.Close()

	// The sandboxes' event stream is sent as it is, so each event arrives
	// when it is written: its first event is readable before the stream ends.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	resp = b.getEncoded(ctx, "/sandboxes/events", "gzip, br", map[string]string{"Accept": "text/event-stream"})
	if ct, ce := resp.Header.Get("Content-Type"), resp.Header.Get("Content-Encoding"); !strings.HasPrefix(ct, "text/event-stream") || ce != "" {
		t.Fatalf("the event stream came as %q with Content-Encoding %q", ct, ce)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "event: ") && !strings.HasPrefix(line, "data: ") && !strings.HasPrefix(line, "id: ") {
		t.Fatalf("the stream's first line is %q (%v); want a plain event", line, err)
	}
	cancel()
	resp.Body.Close()

	// An archive is a .tar.gz already: it goes out as it is, one gzip layer.
	w.advance(sandbox.DefaultIdleTimeout)
	sb := w.sandboxOf(s)
	req, _ := http.NewRequest("GET", w.srv.URL+"/api/v1/sandboxes/"+sb.ID+"/archive", nil)
	req.Header.Set("Authorization", "Bearer "+w.owner)
	req.Header.Set("Accept-Encoding", "gzip, br")
	ar, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer ar.Body.Close()
	body, _ := io.ReadAll(ar.Body)
	if ar.StatusCode != 200 || ar.Header.Get("Content-Encoding") != "" || ar.Header.Get("Content-Length") == "" {
		t.Fatalf("the archive came %d with Content-Encoding %q, Content-Length %q", ar.StatusCode, ar.Header.Get("Content-Encoding"), ar.Header.Get("Content-Length"))
	}
	if files := untar(t, body); files["notes.txt"] != "kept\n" {
		t.Fatalf("the archive holds %v", files)
	}
}
