package vault

import (
	"encoding/base64"
	"net/http"
	"slices"
	"strings"
)

// HeaderSecrets are the strings through which a credential set in after
// (header values that differ from before; every value when before is nil)
// could be repeated: each value, the token after its scheme ("Bearer
// <token>"), and a Basic header's decoded user:password and password.
// Shorter ones than 4 bytes are left out (they would cut ordinary words).
// Longest first: a header value goes whole before the token inside it.
func HeaderSecrets(after, before http.Header) []string {
	var out []string
	add := func(s string) {
		if len(s) >= 4 && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for name, vs := range after {
		if before != nil && slices.Equal(before[name], vs) {
			continue
		}
		for _, v := range vs {
			add(v)
			scheme, rest, ok := strings.Cut(v, " ")
			if !ok {
				continue
			}
			add(rest)
			if dec, err := base64.StdEncoding.DecodeString(rest); err == nil && strings.EqualFold(scheme, "Basic") {
				add(string(dec))
				if _, pw, ok := strings.Cut(string(dec), ":"); ok {
					add(pw)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}
