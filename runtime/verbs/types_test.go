package verbs_test

import (
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/verbs"
)

// TestInputsMatchTheRuntimesTypes: where a verb's handler binds a runtime
// input type, the registry's hand-written input (with its descriptions and
// enums) names exactly that type's JSON fields (jsonschema.ForType), besides
// its path parameters: a field added to the runtime and not declared, or
// declared and gone, fails here.
func TestInputsMatchTheRuntimesTypes(t *testing.T) {
	types := map[string]any{
		"Agent.create": runtime.AgentInput{}, "Agent.update": runtime.AgentInput{},
		"Version.create":  runtime.VersionCreateInput{},
		"Skill.create":    runtime.SkillInput{},
		"Vault.create":    runtime.VaultInput{},
		"Credential.set":  runtime.CredentialInput{},
		"Session.create":  runtime.SessionCreateInput{},
		"ToolCall.create": runtime.ToolCallInput{}, "ToolCall.complete": runtime.CompleteInput{}, "ToolCall.cancel": runtime.CancelInput{},
		"Client.connect":   runtime.ClientInput{},
		"Approval.approve": runtime.DecisionInput{}, "Approval.deny": runtime.DecisionInput{},
		"User.update":   runtime.UserUpdateInput{},
		"Tenant.create": runtime.TenantInput{}, "Tenant.update": runtime.TenantInput{},
		"Role.create": runtime.RoleInput{}, "Role.update": runtime.RoleInput{},
		"Seat.create":  runtime.SeatInput{},
		"Token.create": runtime.TokenCreateInput{},
	}
	for name, typ := range types {
		v, ok := verbs.Get(name)
		if !ok {
			t.Errorf("%s: not declared", name)
			continue
		}
		s, err := jsonschema.ForType(reflect.TypeOf(typ), &jsonschema.ForOptions{IgnoreInvalidTypes: true})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		params := verbs.PathParams(v.Path)
		if name == "Agent.create" {
			params = append(params, "agent") // Agent.update's path parameter, unused on create
		}
		want := fieldsOf(s, params)
		got := fieldsOf(v.Input, params)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the registry's input fields %v, the runtime's %T has %v", name, got, typ, want)
		}
	}
}

func fieldsOf(s *jsonschema.Schema, skip []string) []string {
	var out []string
	for k := range s.Properties {
		if !slices.Contains(skip, k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
