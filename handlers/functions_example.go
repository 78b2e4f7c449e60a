package handlers

import (
	"encoding/json"
	"sort"
)

// toolExample is an example input for a function tool, indented: the first
// of the input schema's own "examples" (JSON Schema's keyword), else an
// object of its required properties filled with
// their default, first enum value, or a placeholder of their type; made
// says it was made from the schema. "" when the schema says too little.
func toolExample(schema json.RawMessage) (example string, made bool) {
	var s struct {
		Examples   []json.RawMessage          `json:"examples"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return "", false
	}
	if len(s.Examples) > 0 {
		return indentJSON(s.Examples[0]), false
	}
	want := map[string]bool{}
	for _, r := range s.Required {
		want[r] = true
	}
	out := map[string]any{}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !want[n] {
			continue
		}
		var p struct {
			Type    any               `json:"type"`
			Default json.RawMessage   `json:"default"`
			Enum    []json.RawMessage `json:"enum"`
		}
		json.Unmarshal(s.Properties[n], &p)
		switch {
		case len(p.Default) > 0:
			out[n] = p.Default
		case len(p.Enum) > 0:
			out[n] = p.Enum[0]
		default:
			out[n] = placeholder(p.Type)
		}
	}
	if len(out) == 0 {
		return "", false
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return string(b), true
}

func placeholder(t any) any {
	if list, ok := t.([]any); ok && len(list) > 0 {
		t = list[0]
	}
	switch t {
	case "integer", "number":
		return 0
	case "boolean":
		return false
	case "array":
		return []any{}
	case "object":
		return map[string]any{}
	default:
		return "…"
	}
}

func indentJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
