package verbs

import (
	"strings"
	"testing"
)

// An agent is read by its id alone (a name answers 404 not_found), so neither
// the verb's documentation nor the agent path parameter's description, which
// $.d.ts, openapi.json and fetch show, may promise a name.
func TestAgentParameterSaysIdNotName(t *testing.T) {
	for _, v := range All() {
		if !strings.Contains(v.Path, ":agent") {
			continue
		}
		if strings.Contains(v.Doc, "or name") {
			t.Errorf("%s: doc %q promises a name; agents are read by id", v.Name, v.Doc)
		}
		p := v.Input.Properties["agent"]
		if p == nil {
			t.Fatalf("%s: no agent parameter in its input", v.Name)
		}
		if strings.Contains(p.Description, "name") || !strings.Contains(p.Description, "id") {
			t.Errorf("%s: agent parameter described as %q; agents are read by id", v.Name, p.Description)
		}
	}
}
