package mcpclient

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/subako/subako/runtime/vault"
)

// attachFunc is the runtime's way of putting a credential on a request.
type attachFunc = func(*http.Request)

// attachTransport calls the current attach function on every request to the
// server's origin. The function is swapped on each use of a cached session,
// so a secret changed in the vault is sent from the next request on.
type attachTransport struct {
	base   http.RoundTripper
	origin string
	attach *atomic.Pointer[attachFunc]
	limit  *bodyLimit
}

func (t *attachTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if origin(req.URL) != t.origin {
		// CheckRedirect already stops this; refusing here too means no future
		// SDK change can send the credential elsewhere.
		return nil, &redirectError{to: redact(req.URL.String())}
	}
	if t.limit.over.Load() {
		return nil, t.limit.err()
	}
	var attach attachFunc
	if f := t.attach.Load(); f != nil {
		attach = *f
	}
	// vault.RoundTrip retries once after a 401 when the credential can be
	// refreshed (OAuth), and fails naming the credential when it cannot.
	resp, err := vault.RoundTrip(t.base, req, attach)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		// Drop the body unread: a server may echo the credential in it.
		_, _ = io.CopyN(io.Discard, resp.Body, 4096)
		resp.Body.Close()
		return nil, &statusError{code: resp.StatusCode}
	}
	resp.Body = &limitedBody{body: resp.Body, left: t.limit.max, limit: t.limit}
	return resp, nil
}

// bodyLimit is the most bytes read from one response of a session, and the
// flag that records that a response went past it.
type bodyLimit struct {
	max  int64
	over *atomic.Bool
}

func (l *bodyLimit) err() error { return &tooLargeError{limit: l.max} }

// limitedBody reads at most the limit from a response and then fails, so
// the SDK's reader (io.ReadAll for JSON, a line scanner for SSE) never holds
// more than that, however much the server sends.
type limitedBody struct {
	body  io.ReadCloser
	left  int64
	limit *bodyLimit
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var one [1]byte
		if n, err := b.body.Read(one[:]); n == 0 && err != nil {
			return 0, err
		}
		b.limit.over.Store(true)
		return 0, b.limit.err()
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.body.Close() }

// newHTTPClient builds the client one session uses. It has no overall
// timeout: a tool call's response can stream for as long as its context
// allows.
func newHTTPClient(base http.RoundTripper, endpoint *url.URL, attach *atomic.Pointer[attachFunc], limit *bodyLimit) *http.Client {
	o := origin(endpoint)
	return &http.Client{
		Transport: &attachTransport{base: base, origin: o, attach: attach, limit: limit},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if origin(req.URL) != o {
				return &redirectError{to: redact(req.URL.String())}
			}
			if len(via) >= 3 {
				return errors.New("more than 3 redirects")
			}
			return nil
		},
	}
}

// origin is scheme://host:port with the default port spelled out, so that
// https://x and https://x:443 compare equal.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port
}
