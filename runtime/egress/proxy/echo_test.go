package proxy

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCredentialEchoMaskedInHeadersAndEncodedAnswers: a credential host
// that repeats the Authorization it was sent in an answer header, in a
// trailer, or in a body it encodes without being asked (deflate, as
// httpbin's /deflate does) never hands the token to the sandbox.
func TestCredentialEchoMaskedInHeadersAndEncodedAnswers(t *testing.T) {
	const token = "exit-echo-token-5a8c1f"
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		switch r.URL.Path {
		case "/header":
			w.Header().Set("X-Echo-Authorization", auth)
			w.Header().Set("Www-Authenticate", `Bearer error="invalid_token", token="`+strings.TrimPrefix(auth, "Bearer ")+`"`)
			io.WriteString(w, "ok")
		case "/trailer":
			w.Header().Set("Trailer", "X-Echo")
			io.WriteString(w, "ok")
			w.(http.Flusher).Flush()
			w.Header().Set("X-Echo", auth)
		case "/head":
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Content-Length", "20")
		case "/deflate":
			var b bytes.Buffer
			fw, _ := flate.NewWriter(&b, flate.BestCompression)
			io.WriteString(fw, `{"headers":{"Authorization":"`+auth+`"}}`)
			fw.Close()
			w.Header().Set("Content-Encoding", "deflate")
			w.Write(b.Bytes())
		}
	}))
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	_, c := startProxy(t, Config{Allow: rules(t, "127.0.0.1/32"), AllowPrivate: true, RootCAs: roots,
		HasCredential: func(context.Context, string) bool { return true },
		Attach: func(context.Context, string) (func(*http.Request), error) {
			return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }, nil
		}})
	// A HEAD answer carries no body: its encoding is no hiding place.
	if resp, err := c.Head(srv.URL + "/head"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("HEAD of a gzip answer: %v %v", resp, err)
	}
	for _, path := range []string{"/header", "/trailer", "/deflate"} {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var seen bytes.Buffer
		resp.Header.Write(&seen)
		resp.Trailer.Write(&seen)
		seen.Write(body)
		if resp.Header.Get("Content-Encoding") == "deflate" {
			if plain, err := io.ReadAll(flate.NewReader(bytes.NewReader(body))); err == nil {
				seen.Write(plain)
			}
		}
		if strings.Contains(seen.String(), token) {
			t.Errorf("%s: the sandbox got the credential back:\n%s", path, seen.String())
		}
	}
}
