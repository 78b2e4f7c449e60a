package tools

import (
	"strings"
	"testing"
)

func sandboxWithNetwork(network string) string {
	return `{"sandboxes": [{"name": "box", "environment": {"type": "platform", "release": "2026"}, "network": ` + network + `, "default_policy": "allow"}]}`
}

func TestSandboxNetworkAllowlist(t *testing.T) {
	cfg, err := Parse([]byte(sandboxWithNetwork(`{"type": "allowlist", "allow": ["*.github.com", "pypi.org", "203.0.113.0/24", "2001:db8::1"]}`)), cat)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Sandboxes[0].Network; got.Type != NetworkAllowlist || len(got.Allow) != 4 {
		t.Fatalf("network %+v", got)
	}
	for _, old := range []string{`{"type": "unrestricted"}`, `{"type": "internet"}`, `{"type": "none"}`} {
		if _, err := Parse([]byte(sandboxWithNetwork(old)), cat); err != nil {
			t.Errorf("%s: %v", old, err)
		}
	}
	long := `"` + strings.Repeat("a", 250) + `.com"`
	many := strings.TrimSuffix(strings.Repeat(`"a.com",`, MaxAllowEntries+1), ",")
	for _, tc := range []struct{ network, field, want string }{
		{`{"type": "allowlist"}`, "sandboxes[0].network.allow", "needs allow"},
		{`{"type": "allowlist", "allow": []}`, "sandboxes[0].network.allow", "at least one"},
		{`{"type": "none", "allow": ["a.com"]}`, "sandboxes[0].network.allow", "only for network type allowlist"},
		{`{"type": "allowlist", "allow": ["*"]}`, "sandboxes[0].network.allow[0]", "is not a domain"},
		{`{"type": "allowlist", "allow": ["*.com"]}`, "sandboxes[0].network.allow[0]", "top-level"},
		{`{"type": "allowlist", "allow": ["10.0.0.0/33"]}`, "sandboxes[0].network.allow[0]", "CIDR"},
		{`{"type": "allowlist", "allow": ["https://a.com/"]}`, "sandboxes[0].network.allow[0]", "is a URL"},
		{`{"type": "allowlist", "allow": [` + long + `]}`, "sandboxes[0].network.allow[0]", "at most 253"},
		{`{"type": "allowlist", "allow": [` + many + `]}`, "sandboxes[0].network.allow", "at most 64"},
		{`{"type": "allowlist", "allow": ["a.com", "a.com"]}`, "sandboxes[0].network.allow[1]", "twice"},
		{`{"type": "allowlist", "allow": [3]}`, "sandboxes[0].network.allow[0]", "string"},
	} {
		_, err := Parse([]byte(sandboxWithNetwork(tc.network)), cat)
		ve, ok := err.(*ValidationError)
		if !ok || len(ve.Errors) == 0 {
			t.Errorf("%s: %v, want a field error", tc.network, err)
			continue
		}
		errs := ve.Errors
		if errs[0].Field != tc.field || !strings.Contains(errs[0].Detail, tc.want) {
			t.Errorf("%s: %s %q, want %s with %q", tc.network, errs[0].Field, errs[0].Detail, tc.field, tc.want)
		}
	}
}
