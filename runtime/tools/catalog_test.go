package tools

import (
	"encoding/json"
	"slices"
)

// testCatalog is a small installation: what the caller's store would say.
type testCatalog struct {
	skills   []string
	releases []string
	fns      map[string][]ToolDef // "package@version"
}

func (c testCatalog) HasSkill(name string) bool { return slices.Contains(c.skills, name) }
func (c testCatalog) Releases() []string        { return c.releases }
func (c testCatalog) FunctionTools(pkg, version string) ([]ToolDef, bool) {
	tools, ok := c.fns[pkg+"@"+version]
	return tools, ok
}

var anySchema = json.RawMessage(`{"type":"object"}`)

var cat = testCatalog{
	skills:   []string{"refund-policy", "style-guide"},
	releases: []string{"2026", "2025"},
	fns: map[string][]ToolDef{
		"github@1.0.0": {
			{Name: "get_issue", Description: "Read one issue.", InputSchema: anySchema},
			{Name: "list_pulls", Description: "List pull requests.", InputSchema: anySchema},
		},
		"anydoc@2.1.0": {
			{Name: "convert_to_markdown", Description: "Convert a document.", InputSchema: anySchema},
		},
	},
}
