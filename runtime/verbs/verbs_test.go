package verbs

import (
	"encoding/json"
	"regexp"
	"testing"
)

// TestEveryVerbIsDeclaredWhole: a name Noun.verb, a route under the rule, a
// line of documentation, object schemas that hold each path parameter.
func TestEveryVerbIsDeclaredWhole(t *testing.T) {
	name := regexp.MustCompile(`^[A-Z][A-Za-z]*\.[a-z][A-Za-z_]*$`)
	seen := map[string]bool{}
	routes := map[string]string{}
	for _, v := range All() {
		if !name.MatchString(v.Name) || seen[v.Name] {
			t.Errorf("%q: not Noun.verb, or declared twice", v.Name)
		}
		seen[v.Name] = true
		if v.Doc == "" || v.Permission == "" || v.Input == nil || v.Input.Type != "object" {
			t.Errorf("%s: missing doc, permission or an object Input", v.Name)
		}
		for _, p := range append([]string{v.Path}, v.Aliases...) {
			key := v.Method + " " + p
			if other, dup := routes[key]; dup {
				t.Errorf("%s and %s share the route %s", v.Name, other, key)
			}
			routes[key] = v.Name
		}
		for _, p := range PathParams(v.Path) {
			if v.Input.Properties[p] == nil || !contains(v.Input.Required, p) {
				t.Errorf("%s: path parameter %s is not a required field of its input", v.Name, p)
			}
		}
		if _, err := json.Marshal(v.Input); err != nil {
			t.Errorf("%s: input schema: %v", v.Name, err)
		}
		if _, err := v.Input.Resolve(nil); err != nil {
			t.Errorf("%s: input schema does not resolve: %v", v.Name, err)
		}
		if v.Output != nil {
			if _, err := v.Output.Resolve(nil); err != nil {
				t.Errorf("%s: output schema does not resolve: %v", v.Name, err)
			}
		}
	}
	if len(All()) < 90 {
		t.Errorf("only %d verbs declared", len(All()))
	}
}

// FillPath fills a route the CLI and code mode call: ids escaped whole, a
// file's path escaped name by name with its slashes kept (so the router
// sees the same names the person gave), and the first missing one named.
func TestFillPathEscapesEachNameAndNamesWhatIsMissing(t *testing.T) {
	values := map[string]string{"session": "ses_1/x", "path": "in/a b/%2e%2e/ü#?.txt"}
	lookup := func(name string) (string, bool) { v, ok := values[name]; return v, ok }
	got, missing := FillPath("/sessions/:session/volume/*", lookup)
	if want := "/sessions/ses_1%2Fx/volume/in/a%20b/%252e%252e/%C3%BC%23%3F.txt"; got != want || missing != "" {
		t.Fatalf("FillPath = %q (missing %q), want %q", got, missing, want)
	}
	delete(values, "path")
	if _, missing := FillPath("/sessions/:session/volume/*", lookup); missing != "path" {
		t.Fatalf("without a path, missing = %q; want path", missing)
	}
	if _, missing := FillPath("/sandboxes/:sandbox/files/*", lookup); missing != "sandbox" {
		t.Fatalf("without a sandbox, missing = %q; want sandbox", missing)
	}
}
