package fn

import (
	"fmt"
	"net/http"

	"github.com/subako/subako/runtime/vault"
)

// redirectError is a refused redirect hop; it reaches the guest as is.
type redirectError struct{ msg string }

func (e *redirectError) Error() string { return e.msg }

// checkRedirect checks every hop, not only the first URL: a granted origin
// that redirects elsewhere must not become a way out. Each hop starts again
// from the guest's own headers, so the credential attached for one origin is
// never carried to the next, which gets its own from the vault.
func (f *fetcher) checkRedirect(guest http.Header) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > f.caps.MaxRedirects {
			return &redirectError{fmt.Sprintf("http_fetch: stopped after %d redirects (the limit)", f.caps.MaxRedirects)}
		}
		origin, err := originOf(req.URL)
		if err != nil {
			return &redirectError{fmt.Sprintf("http_fetch: redirect refused: %v", err)}
		}
		if !f.origins[origin] {
			return &redirectError{fmt.Sprintf("http_fetch: redirect from %s to origin %s refused: %s is not granted to this function",
				via[len(via)-1].URL.Redacted(), origin, origin)}
		}
		// The transport attaches this hop's own credential.
		req.Header = guest.Clone()
		return nil
	}
}

// attachTransport attaches the session's credential for each hop's URL as
// the hop is sent (vault.RoundTrip: refreshed and retried once on a 401).
type attachTransport struct {
	base   http.RoundTripper
	attach func(*http.Request)
}

func (t *attachTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return vault.RoundTrip(t.base, req, t.attach)
}
