package fn

import (
	"net/http"
	"strings"
)

// credentialWords mark header names that carry a credential. Matching by word
// rather than a fixed list also catches X-Auth-Token, Private-Token,
// X-Goog-Api-Key and the like: a guest has no business sending any of them.
var credentialWords = []string{
	"auth", "cookie", "token", "api-key", "apikey", "api_key", "secret",
	"password", "passwd", "session", "credential", "signature",
}

// transportHeaders are set by the HTTP client itself; a guest's value would
// only confuse framing or routing.
var transportHeaders = map[string]bool{
	"host": true, "content-length": true, "transfer-encoding": true, "connection": true,
	"keep-alive": true, "upgrade": true, "te": true, "trailer": true, "proxy-connection": true,
}

func isCredentialHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range credentialWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// guestHeaders keeps the headers a guest may set and names the ones dropped.
func guestHeaders(in map[string]string) (http.Header, []string) {
	h := http.Header{}
	var dropped []string
	for k, v := range in {
		if isCredentialHeader(k) || transportHeaders[strings.ToLower(k)] {
			dropped = append(dropped, k)
			continue
		}
		h.Set(k, v)
	}
	return h, dropped
}

// responseHeaders drops what could hand the guest a credential: cookies the
// server sets and any header named like a token. The challenge headers stay,
// since they say why a request was refused.
func responseHeaders(in http.Header) map[string][]string {
	out := make(map[string][]string, len(in))
	for k, v := range in {
		lk := strings.ToLower(k)
		if lk != "www-authenticate" && lk != "proxy-authenticate" && isCredentialHeader(k) {
			continue
		}
		out[k] = v
	}
	return out
}
