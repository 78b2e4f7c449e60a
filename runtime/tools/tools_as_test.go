package tools

import (
	"strings"
	"testing"
)

func TestToolsAs(t *testing.T) {
	for _, tc := range []struct {
		config, want string
	}{
		{`{}`, ""},
		{`{"tools_as": "flat"}`, ""},
		{`{"tools_as": null}`, ""},
		{`{"tools_as": "code"}`, ToolsCode},
	} {
		cfg, err := Parse([]byte(tc.config), cat)
		if err != nil {
			t.Fatalf("%s: %v", tc.config, err)
		}
		if cfg.ToolsAs != tc.want || cfg.CodeMode() != (tc.want == ToolsCode) {
			t.Errorf("%s: tools_as %q, want %q", tc.config, cfg.ToolsAs, tc.want)
		}
		// Export then import gives back the same setting; flat, the
		// default, is left out of the file.
		out, err := Export(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out), "tools_as") != (tc.want == ToolsCode) {
			t.Errorf("%s exported as %s", tc.config, out)
		}
		back, err := Parse(out, cat)
		if err != nil || back.ToolsAs != cfg.ToolsAs {
			t.Errorf("%s: round trip gave %q, %v", tc.config, back.ToolsAs, err)
		}
	}
	for _, bad := range []string{`{"tools_as": "typescript"}`, `{"tools_as": 1}`, `{"tools_as": ""}`} {
		ps := problems(t, bad)
		if len(ps) != 1 || ps[0].Field != "tools_as" || ps[0].Code != "invalid_tools_as" ||
			!strings.Contains(ps[0].Detail, "tools_as must be flat or code") {
			t.Errorf("%s: problems %+v, want one naming tools_as and flat or code", bad, ps)
		}
	}
	if ps := problems(t, `{"tools_as": "Code"}`); len(ps) != 1 || !strings.Contains(ps[0].Detail, `found "Code"`) {
		t.Errorf("a wrong value is not quoted back: %+v", ps)
	}
}

func TestDiffToolsAs(t *testing.T) {
	flat, code := Config{}, Config{ToolsAs: ToolsCode}
	got := Diff(flat, code)
	if len(got) != 1 || got[0].Kind != KindSetting || got[0].Name != "tools_as" || got[0].Op != OpChanged ||
		len(got[0].Fields) != 1 || got[0].Fields[0] != (FieldChange{Field: "tools_as", Before: "flat", After: "code"}) {
		t.Errorf("Diff(flat, code) = %+v", got)
	}
	if got := Diff(code, code); len(got) != 0 {
		t.Errorf("Diff(code, code) = %+v, want nothing", got)
	}
}
