package tools

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"
)

// FuzzParse feeds Parse any bytes. A refusal is a *ValidationError whose
// every problem has a code, a detail and, past the document level, a field;
// an accepted config exports and imports back to the same config, and its
// export is a fixed point (what a version stores publishes).
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{`{}`, `{"mcp_servers":[` + okMCP + `]}`, `{"functions":[` + okFn + `]}`,
		`{"sandboxes":[` + okSandbox + `]}`, `{"builtins":[{"name":"ask_user"},{"name":"session"}]}`,
		`{"mcp_servers":[{"name":"a","url":"https://x.example/\ud800","default_policy":"ask"}]}`, `{"a":1}{"b":2}`} {
		f.Add([]byte(s))
	}
	// These can be about the document as a whole, which has no field name.
	documentLevel := map[string]bool{"invalid_json": true, "config_too_large": true, "invalid_type": true, "invalid_text": true}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, cat)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Errors) == 0 {
				t.Fatalf("refusal %v is not a *ValidationError with problems", err)
			}
			for _, fe := range ve.Errors {
				if fe.Code == "" || fe.Detail == "" || (fe.Field == "" && !documentLevel[fe.Code]) {
					t.Fatalf("a problem does not say what and where: %+v", fe)
				}
			}
			return
		}
		out, err := Canonical(data, cat)
		if err != nil {
			if len(data) <= MaxConfigBytes && bytes.Contains([]byte(err.Error()), []byte("as stored")) {
				return // accepted as sent, too large as stored: refused at save, as it must be
			}
			t.Fatalf("an accepted config does not export: %v", err)
		}
		back, err := Parse(out, cat)
		if err != nil {
			t.Fatalf("the export of an accepted config is refused: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(Config(back), Config(cfg)) {
			t.Fatalf("export then import changed the config:\n%#v\n%#v", cfg, back)
		}
		again, err := Export(back)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("the export is not a fixed point:\n%s\n%s", out, again)
		}
	})
}

var grantName = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)

// FuzzCheckName checks a grant name against the rule as written in
// DESIGN.md: lowercase letters, digits and -, 1 to 32 characters, parent
// reserved. Every refusal names the field; an accepted name makes a full
// tool name that parses back into the same grant.
func FuzzCheckName(f *testing.F) {
	for _, s := range []string{"orders", "a", "parent", "", "Orders", "a_b", "a__b", "é", "a\x00", "\xff",
		"abcdefghijklmnopqrstuvwxyz0123456", "abcdefghijklmnopqrstuvwxyz012345", "-", "ask_user"} {
		f.Add(KindMCP, s)
	}
	f.Add(KindBuiltin, "ask_user")
	f.Add(KindSandbox, "workbench")
	f.Fuzz(func(t *testing.T, kind, name string) {
		switch kind {
		case KindMCP, KindSkill, KindSandbox, KindFn, KindBuiltin, KindClient:
		default:
			kind = KindMCP
		}
		errs := CheckName(kind, name, nil)
		for _, fe := range errs {
			if fe.Field != "name" || fe.Code == "" || fe.Detail == "" {
				t.Fatalf("a refusal does not name the field: %+v", fe)
			}
		}
		if kind == KindBuiltin {
			return
		}
		want := grantName.MatchString(name) && name != "parent"
		if (len(errs) == 0) != want {
			t.Fatalf("CheckName(%q) = %+v; the rule says ok=%v", name, errs, want)
		}
		if want {
			k, g, tool, err := ParseFullName(FullName(kind, name, "tool"))
			if err != nil || k != kind || g != name || tool != "tool" {
				t.Fatalf("full name of %q parses to %q %q %q (%v)", name, k, g, tool, err)
			}
		}
	})
}
