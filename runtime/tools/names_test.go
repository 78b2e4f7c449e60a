package tools

import (
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	long32, long33 := strings.Repeat("a", 32), strings.Repeat("a", 33)
	tests := []struct {
		name, kind, grant string
		others            []string
		want              []FieldError // Field "name" implied
	}{
		{"one character", KindSandbox, "a", nil, nil},
		{"32 characters", KindSandbox, long32, nil, nil},
		{"digits and hyphens", KindMCP, "orders-2", nil, nil},
		{"empty", KindSandbox, "", nil, []FieldError{{Code: "name_required",
			Detail: "name is required: 1 to 32 lowercase letters a-z, digits 0-9 and -"}}},
		{"33 characters", KindSandbox, long33, nil, []FieldError{{Code: "name_too_long",
			Detail: "name must be at most 32 characters; it has 33"}}},
		{"upper case", KindSandbox, "Workbench", nil, []FieldError{{Code: "name_invalid",
			Detail: `name may contain only lowercase letters a-z, digits 0-9 and -; found "W" at position 1`}}},
		{"underscore", KindFn, "my_fn", nil, []FieldError{{Code: "name_invalid",
			Detail: `name may contain only lowercase letters a-z, digits 0-9 and -; found "_" at position 3`}}},
		{"position counts characters, not bytes", KindSkill, "éa b", nil, []FieldError{{Code: "name_invalid",
			Detail: `name may contain only lowercase letters a-z, digits 0-9 and -; found "é" at position 1`}}},
		{"space", KindSkill, "ab c", nil, []FieldError{{Code: "name_invalid",
			Detail: `name may contain only lowercase letters a-z, digits 0-9 and -; found " " at position 3`}}},
		{"too long and invalid: both rules", KindMCP, long32 + "X", nil, []FieldError{
			{Code: "name_too_long", Detail: "name must be at most 32 characters; it has 33"},
			{Code: "name_invalid", Detail: `name may contain only lowercase letters a-z, digits 0-9 and -; found "X" at position 33`}}},
		{"parent", KindSandbox, "parent", nil, []FieldError{{Code: "name_reserved",
			Detail: "parent is reserved; choose another name"}}},
		{"parent-1 is fine", KindSandbox, "parent-1", nil, nil},
		{"duplicate in kind", KindSandbox, "build", []string{"test", "build"}, []FieldError{{Code: "name_duplicate",
			Detail: `name "build" is already used by another sandbox grant in this version`}}},
		{"duplicate MCP", KindMCP, "orders", []string{"orders"}, []FieldError{{Code: "name_duplicate",
			Detail: `name "orders" is already used by another MCP server grant in this version`}}},
		{"built-in ask_user", KindBuiltin, "ask_user", nil, nil},
		{"built-in session", KindBuiltin, "session", nil, nil},
		{"built-in unknown", KindBuiltin, "shell", nil, []FieldError{{Code: "unknown_builtin",
			Detail: `name must be ask_user or session; found "shell"`}}},
		{"built-in empty", KindBuiltin, "", nil, []FieldError{{Code: "name_required",
			Detail: "name is required: ask_user or session"}}},
		{"built-in twice", KindBuiltin, "session", []string{"session"}, []FieldError{{Code: "name_duplicate",
			Detail: `name "session" is already used by another built-in grant in this version`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckName(tt.kind, tt.grant, tt.others)
			if len(got) != len(tt.want) {
				t.Fatalf("CheckName(%q) = %v, want %d errors", tt.grant, got, len(tt.want))
			}
			for i, w := range tt.want {
				g := got[i]
				if g.Field != "name" || g.Code != w.Code || g.Detail != w.Detail || g.Title == "" {
					t.Errorf("error %d = %+v, want field name, code %s, detail %q and a title", i, g, w.Code, w.Detail)
				}
			}
		})
	}
}
