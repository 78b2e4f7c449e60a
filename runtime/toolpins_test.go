package runtime

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/tools"
)

func TestPinHashAndChanges(t *testing.T) {
	def := func(desc, schema, ann string) tools.ToolDef {
		d := tools.ToolDef{Name: "echo", Description: desc, InputSchema: json.RawMessage(schema)}
		if ann != "" {
			d.Annotations = json.RawMessage(ann)
		}
		return d
	}
	base := def("Echoes", `{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`, `{"readOnlyHint":true}`)
	tests := []struct {
		name        string
		now         tools.ToolDef
		fields      string // "" for the same definition
		detailsHave string
	}{
		{"keys in another order hash the same", def("Echoes", `{"required":["message"],"properties":{"message":{"type":"string"}},"type":"object"}`, `{"readOnlyHint":true}`), "", ""},
		{"renamed parameter", def("Echoes", `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`, `{"readOnlyHint":true}`),
			"input_schema", `property "message" removed, property "text" added, required [message] became [text]`},
		{"new description", def("Echoes loudly", `{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`, `{"readOnlyHint":true}`),
			"description", "description changed"},
		{"annotations", def("Echoes", `{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`, `{"destructiveHint":true}`),
			"annotations", "annotations changed"},
		{"a property's type", def("Echoes", `{"type":"object","properties":{"message":{"type":"number"}},"required":["message"]}`, `{"readOnlyHint":true}`),
			"input_schema", `property "message" changed`},
	}
	pinned := pinOf(base)
	if !strings.HasPrefix(pinned.Hash, "sha256:") || len(pinned.Hash) != len("sha256:")+64 {
		t.Fatalf("hash %q", pinned.Hash)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := compareTool("srv", pinned, pinOf(tc.now))
			if tc.fields == "" {
				if c != nil {
					t.Fatalf("same definition seen as changed: %+v", c)
				}
				return
			}
			if c == nil || strings.Join(c.Fields, ",") != tc.fields || !strings.Contains(strings.Join(c.Details, "; "), tc.detailsHave) {
				t.Fatalf("got %+v", c)
			}
		})
	}
	changes := diffPins("srv", []PinnedTool{pinned, pinOf(tools.ToolDef{Name: "gone"})}, []tools.ToolDef{base, {Name: "fresh"}})
	if len(changes) != 2 || changes[0].Tool != "gone" || changes[0].Change != ToolRemoved || changes[1].Tool != "fresh" || changes[1].Change != ToolAdded {
		t.Fatalf("diff: %+v", changes)
	}
}
