package handlers

import (
	"strings"

	"github.com/subako/subako/runtime/tools"
	"github.com/subako/subako/views/pages"
)

// networkJSON is a sandbox grant's network from the form: an allowlist
// carries its entries, one a line (spaces and commas separate them too).
func networkJSON(f pages.GrantForm) map[string]any {
	n := map[string]any{"type": f.Network}
	if f.Network == tools.NetworkAllowlist {
		allow := []string{}
		for _, e := range strings.FieldsFunc(f.Allow, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' }) {
			allow = append(allow, e)
		}
		n["allow"] = allow
	}
	return n
}
