package vault

import (
	"errors"
	"net/url"
	"path"
	"strings"
)

// place is a URL reduced to what decides whether a credential belongs to it:
// scheme, host and port compared exactly, and a cleaned path compared by
// segments.
type place struct {
	scheme, host, port string
	path               string // cleaned, "/" for the root, no trailing slash otherwise
}

// covers reports whether p, as a credential prefix, covers the target t.
// "/v1" covers "/v1" and "/v1/x", never "/v10".
func (p place) covers(t place) bool {
	if p.scheme != t.scheme || p.host != t.host || p.port != t.port {
		return false
	}
	return p.path == "/" || t.path == p.path || strings.HasPrefix(t.path, p.path+"/")
}

func toPlace(u *url.URL) place {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	// The decoded path is cleaned so that "/v1/../admin" and "/v1/%2e%2e/admin"
	// are judged as the "/admin" a server would resolve them to.
	return place{
		scheme: u.Scheme,
		host:   strings.ToLower(u.Hostname()),
		port:   port,
		path:   path.Clean("/" + u.Path),
	}
}

// parsePrefix validates a credential's prefix and reduces it to a place.
func parsePrefix(raw string) (place, error) {
	switch {
	case raw == "":
		return place{}, fieldErr("prefix", "is required (an absolute http or https URL)")
	case len(raw) > MaxPrefixLen:
		return place{}, fieldErr("prefix", "must be at most %d characters, got %d", MaxPrefixLen, len(raw))
	}
	u, err := url.Parse(raw)
	if uerr := (*url.Error)(nil); errors.As(err, &uerr) {
		// The inner error only: the outer one repeats the whole URL.
		return place{}, fieldErr("prefix", "is not a URL: %v", uerr.Err)
	} else if err != nil {
		return place{}, fieldErr("prefix", "is not a URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return place{}, fieldErr("prefix", "must start with http:// or https://")
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return place{}, fieldErr("prefix", "must be an absolute URL with a host")
	case u.User != nil:
		return place{}, fieldErr("prefix", "must not contain user info; the secret belongs in the credential")
	case u.RawQuery != "" || u.ForceQuery:
		return place{}, fieldErr("prefix", "must not have a query")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return place{}, fieldErr("prefix", "must not have a fragment")
	}
	p := toPlace(u)
	if want := strings.TrimSuffix(u.Path, "/"); want != "" && want != p.path {
		return place{}, fieldErr("prefix", "path %q must not contain '.', '..' or empty segments", u.Path)
	}
	return p, nil
}

// Match returns the credential whose prefix covers rawURL most specifically:
// same scheme, host and port, and the longest path prefix ending on a segment
// boundary. Between equal prefixes the first in creds wins. Credentials with
// an invalid prefix, and URLs that are not absolute http(s) URLs, never match.
func Match(creds []Credential, rawURL string) (Credential, bool) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Credential{}, false
	}
	target := toPlace(u)
	best, bestLen := -1, -1
	for i, c := range creds {
		p, err := parsePrefix(c.Prefix)
		if err != nil || !p.covers(target) {
			continue
		}
		if len(p.path) > bestLen {
			best, bestLen = i, len(p.path)
		}
	}
	if best < 0 {
		return Credential{}, false
	}
	return creds[best], true
}
