// Package allowlist is the syntax and matching of a sandbox grant's network
// allowlist: domain names, wildcards below a domain, and IP ranges.
package allowlist

import (
	"fmt"
	"net/netip"
	"strings"
)

// Bounds of an allowlist, shared with the grant's validation.
const (
	MaxRules      = 64
	MaxRuleLength = 253
)

// Rules is a sandbox grant's allowlist: domain names (exact, or "*.example.com"
// for any name below example.com, not example.com itself) and IP ranges
// (CIDRs, or a bare address for one host).
type Rules struct {
	exact  map[string]bool
	suffix []string // ".example.com"
	cidrs  []netip.Prefix
}

// ParseRule checks one allowlist entry; the error says what is wrong, for
// the grant's field error.
func ParseRule(s string) (domain string, cidr netip.Prefix, err error) {
	if s == "" {
		return "", netip.Prefix{}, fmt.Errorf("is empty")
	}
	if len(s) > MaxRuleLength {
		return "", netip.Prefix{}, fmt.Errorf("is %d characters; at most %d", len(s), MaxRuleLength)
	}
	if strings.Contains(s, "://") {
		return "", netip.Prefix{}, fmt.Errorf("is a URL; list its host name only (example.com)")
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return "", netip.Prefix{}, fmt.Errorf("is not a CIDR such as 203.0.113.0/24")
		}
		return "", p.Masked(), nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		a = a.Unmap()
		return "", netip.PrefixFrom(a, a.BitLen()), nil
	}
	name := strings.ToLower(strings.TrimSuffix(s, "."))
	rest := strings.TrimPrefix(name, "*.")
	if !validName(rest) {
		return "", netip.Prefix{}, fmt.Errorf("is not a domain (example.com, or *.example.com for the names below it), an IP address or a CIDR")
	}
	if !strings.Contains(rest, ".") && rest != "localhost" && name != rest {
		return "", netip.Prefix{}, fmt.Errorf("wildcards a top-level domain; name at least two labels after *.")
	}
	return name, netip.Prefix{}, nil
}

func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// NewRules parses an allowlist; entries were validated with the grant.
func New(entries []string) (*Rules, error) {
	if len(entries) > MaxRules {
		return nil, fmt.Errorf("allowlist: %d entries; at most %d", len(entries), MaxRules)
	}
	r := &Rules{exact: map[string]bool{}}
	for _, e := range entries {
		d, p, err := ParseRule(e)
		if err != nil {
			return nil, fmt.Errorf("allowlist entry %q %v", e, err)
		}
		switch {
		case p.IsValid():
			r.cidrs = append(r.cidrs, p)
		case strings.HasPrefix(d, "*."):
			r.suffix = append(r.suffix, d[1:])
		default:
			r.exact[d] = true
		}
	}
	return r, nil
}

// AllowsName reports whether a host name is on the list by name. An IP
// literal is judged by AllowsAddr instead.
func (r *Rules) AllowsName(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if r.exact[host] {
		return true
	}
	for _, s := range r.suffix {
		if strings.HasSuffix(host, s) && len(host) > len(s) {
			return true
		}
	}
	return false
}

// AllowsAddr reports whether an address is inside one of the list's ranges.
func (r *Rules) AllowsAddr(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range r.cidrs {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
