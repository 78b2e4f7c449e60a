package vault

import (
	"bytes"
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

// Recording is attach that also appends to *secrets what it set
// (HeaderSecrets of the headers it changed), so an answer to the request
// can be masked (Mask, MaskHeader). Each call, a redirect hop's or a
// refreshed credential's, adds its own.
func Recording(attach func(*http.Request), secrets *[]string) func(*http.Request) {
	return func(r *http.Request) {
		before := r.Header.Clone()
		attach(r)
		*secrets = append(*secrets, HeaderSecrets(r.Header, before)...)
	}
}

// Encoded is an answer's Content-Encoding when it is anything but plain
// ("" or identity): a body a mask cannot read through. Go's transport
// undoes only the gzip it asked for itself, so an answer to a request whose
// Accept-Encoding was dropped that is still encoded was sent so unasked.
func Encoded(h http.Header) string {
	if ce := h.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return ce
	}
	return ""
}

// Mask overwrites, in place, every occurrence in b of each of secrets
// (those of 4 bytes or more, as HeaderSecrets gives them) with as many
// '*': an answer that repeats the credential it was sent (a server echoing
// the request's headers) does not hand it on. Lengths are kept.
func Mask(b []byte, secrets []string) {
	for _, s := range secrets {
		if len(s) < 4 {
			continue
		}
		for i := 0; ; {
			j := bytes.Index(b[i:], []byte(s))
			if j < 0 {
				break
			}
			for k := range len(s) {
				b[i+j+k] = '*'
			}
			i += j + len(s)
		}
	}
}

// MaskString is s with each of secrets overwritten, as Mask does.
func MaskString(s string, secrets []string) string {
	for _, secret := range secrets {
		if len(secret) >= 4 {
			s = strings.ReplaceAll(s, secret, strings.Repeat("*", len(secret)))
		}
	}
	return s
}

// MaskHeader overwrites each of secrets in h's values, as Mask does.
func MaskHeader(h http.Header, secrets []string) {
	for _, vs := range h {
		for i, v := range vs {
			vs[i] = MaskString(v, secrets)
		}
	}
}
