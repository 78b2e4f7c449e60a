package tools

import (
	"fmt"
	"slices"
	"strings"

	"github.com/subako/subako/runtime/egress/allowlist"
)

// More network types of a sandbox grant (extensions of the seed's format):
// "internet" is "unrestricted" by its console name, and "allowlist" reaches
// only the names and ranges of Network.Allow, through the sandbox's exit.
const (
	NetworkInternet  = "internet"
	NetworkAllowlist = "allowlist"
)

// Bounds of a grant's allowlist.
const (
	MaxAllowEntries     = allowlist.MaxRules
	MaxAllowEntryLength = allowlist.MaxRuleLength
)

const networkTypes = "none (No internet), internet (Internet; also written unrestricted) or allowlist (only the hosts listed in allow)"

func (v *validator) networkSetting(o obj) Network {
	n, present := o.fs["network"]
	if !present {
		v.add(o.off("network"), fieldError(o.at("network"), "network_required",
			`network is required: {"type": "internet"} for Internet, {"type": "none"} for no internet, or {"type": "allowlist", "allow": ["*.github.com"]}`))
		return Network{}
	}
	nw, ok := v.object(o.at("network"), n, "a network", "type", "allow")
	if !ok {
		return Network{}
	}
	net := Network{Type: v.str(nw, "type")}
	valid := slices.Contains([]string{NetworkNone, NetworkUnrestricted, NetworkInternet, NetworkAllowlist}, net.Type)
	if t := nw.fs["type"]; t == nil || (t.kind == stringNode && !valid) {
		detail := "network type is required: " + networkTypes
		if t != nil {
			detail = fmt.Sprintf("network type must be %s; found %s", networkTypes, quoteShort(net.Type))
		}
		v.add(nw.off("type"), fieldError(nw.at("type"), "invalid_network", detail))
	}
	a, listed := nw.fs["allow"]
	switch {
	case !listed && net.Type == NetworkAllowlist:
		v.add(nw.off("type"), fieldError(nw.at("allow"), "allow_required",
			`an allowlist network needs allow: the domains (example.com, *.example.com) and CIDRs it may reach, such as ["*.github.com", "pypi.org"]`))
	case listed && valid && net.Type != NetworkAllowlist:
		v.add(a.off, fieldError(nw.at("allow"), "invalid_allow", fmt.Sprintf(
			"allow is only for network type allowlist; this network is %s", quoteShort(net.Type))))
	case listed:
		net.Allow = v.allowEntries(nw.at("allow"), a)
	}
	return net
}

func (v *validator) allowEntries(path string, n *node) []string {
	items := v.array(path, n)
	if n.kind == arrayNode && len(items) == 0 {
		v.add(n.off, fieldError(path, "allow_required", "allow lists at least one domain or CIDR"))
	}
	if len(items) > MaxAllowEntries {
		v.add(n.off, fieldError(path, "invalid_allow", fmt.Sprintf(
			"allow lists %d entries; at most %d", len(items), MaxAllowEntries)))
		return nil
	}
	var out []string
	for i, item := range items {
		field := indexPath(path, i)
		if item.kind != stringNode {
			v.add(item.off, wrongType(field, "a string", item))
			continue
		}
		if _, _, err := allowlist.ParseRule(item.str); err != nil {
			v.add(item.off, fieldError(field, "invalid_allow", fmt.Sprintf("%s %v", quoteShort(item.str), err)))
		} else if slices.Contains(out, item.str) {
			v.add(item.off, fieldError(field, "invalid_allow", fmt.Sprintf("%s is listed twice; list it once", quoteShort(item.str))))
		}
		out = append(out, item.str)
	}
	return out
}

// networkText is a network as a version's diff shows it.
func networkText(n Network) string {
	if len(n.Allow) == 0 {
		return n.Type
	}
	return n.Type + ": " + strings.Join(n.Allow, ", ")
}

// networkSentence is what exec's description says of the network.
func networkSentence(n Network) string {
	switch n.Type {
	case NetworkNone:
		return "It has no Internet access."
	case NetworkAllowlist:
		return "It reaches only " + strings.Join(n.Allow, ", ") + " (through an HTTP proxy set in its environment; other hosts and their DNS names are refused)."
	}
	return "It has Internet access."
}
