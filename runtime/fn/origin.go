package fn

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// ParseOrigin checks that s is an origin (scheme://host[:port], http or https,
// nothing after the authority) and returns it normalised: lower case, default
// port left out. Origins are compared exactly in this form.
func ParseOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%q is not a URL: %w", s, err)
	}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q must be an origin (scheme://host[:port]) without a path, query or fragment", s)
	}
	return originOf(u)
}

// originOf returns the normalised origin of an absolute http(s) URL.
func originOf(u *url.URL) (string, error) {
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", fmt.Errorf("%q: scheme must be http or https", u.Redacted())
	}
	if u.User != nil {
		return "", fmt.Errorf("%q: a URL must not carry user or password; credentials come from the vault", u.Redacted())
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", fmt.Errorf("%q: host is missing", u.Redacted())
	}
	port := u.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if port != "" {
		return scheme + "://" + net.JoinHostPort(host, port), nil
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host, nil
}

// parseOrigins normalises a call's granted origins, naming the bad one.
func parseOrigins(list []string) (map[string]bool, error) {
	set := make(map[string]bool, len(list))
	for i, o := range list {
		n, err := ParseOrigin(o)
		if err != nil {
			return nil, fieldErr(fmt.Sprintf("origins[%d]", i), "%v", err)
		}
		set[n] = true
	}
	return set, nil
}
