package tools_test

import (
	"errors"
	"fmt"

	"github.com/subako/subako/runtime/tools"
)

// installed is the smallest Catalog: one release, no skills, no functions.
type installed struct{}

func (installed) HasSkill(string) bool                                 { return false }
func (installed) Releases() []string                                   { return []string{"2026"} }
func (installed) FunctionTools(string, string) ([]tools.ToolDef, bool) { return nil, false }

func ExampleParse() {
	_, err := tools.Parse([]byte(`{"sandboxes": [{"name": "Work_bench",
		"environment": {"type": "platform", "release": "2026"},
		"network": {"type": "unrestricted"}, "default_policy": "allow",
		"headers": {"Authorization": "Bearer ..."}}]}`), installed{})
	var ve *tools.ValidationError
	if errors.As(err, &ve) {
		for _, fe := range ve.Errors {
			fmt.Printf("%s %s: %s\n", fe.Field, fe.Code, fe.Detail)
		}
	}
	// Output:
	// sandboxes[0].name name_invalid: name may contain only lowercase letters a-z, digits 0-9 and -; found "W" at position 1
	// sandboxes[0].headers credential_in_config: credentials belong in a vault: a version holds no credential; bind a vault to the session instead
}

func ExampleCheckName() {
	for _, fe := range tools.CheckName(tools.KindSandbox, "build", []string{"build"}) {
		fmt.Println(fe.Code, "-", fe.Detail)
	}
	// Output:
	// name_duplicate - name "build" is already used by another sandbox grant in this version
}

func ExampleParseFullName() {
	kind, grant, tool, _ := tools.ParseFullName("builtin__ask_user__ask")
	fmt.Println(kind, grant, tool)
	fmt.Println(tools.FullName(tools.KindSandbox, "workbench", tools.SandboxTool))
	// Output:
	// builtin ask_user ask
	// sandbox__workbench__exec
}

func ExampleList() {
	cfg, _ := tools.Parse([]byte(`{"sandboxes": [{"name": "workbench",
		"environment": {"type": "platform", "release": "2026"}, "network": {"type": "none"},
		"default_policy": "allow", "tool_rules": {"exec": "deny"}}]}`), installed{})
	for _, tl := range tools.List(cfg, nil, installed{}) {
		fmt.Println(tl.Name, tl.Policy, tl.PolicySource, "offered:", tl.Offered)
	}
	// Output:
	// sandbox__workbench__exec deny rule offered: false
}
