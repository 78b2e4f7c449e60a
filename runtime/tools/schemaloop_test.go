package tools_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/subako/subako/runtime/tools"
)

func TestSchemaLoop(t *testing.T) {
	tests := []struct {
		name, schema, want string // want: words of the reason; "" for none
	}{
		{"plain", `{"type":"object","properties":{"a":{"type":"string"}}}`, ""},
		{"a tree that refers to itself below", `{"type":"object","properties":{"child":{"$ref":"#"}}}`, ""},
		{"defs, as Pydantic writes them", `{"type":"object","$defs":{"Item":{"type":"object","properties":{"next":{"$ref":"#/$defs/Item"}}}},"properties":{"item":{"$ref":"#/$defs/Item"}}}`, ""},
		{"a def used twice", `{"type":"object","$defs":{"s":{"type":"string"}},"allOf":[{"$ref":"#/$defs/s"},{"$ref":"#/$defs/s"}]}`, ""},
		{"$ref # at the top", `{"type":"object","$ref":"#"}`, "refers back to the top"},
		{"allOf back to the top", `{"type":"object","allOf":[{"$ref":"#"}]}`, "refers back"},
		{"two defs naming each other", `{"type":"object","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"#/$defs/a"}]}},"properties":{"x":{"$ref":"#/$defs/a"}}}`, "refers back"},
		{"not of itself", `{"type":"object","$defs":{"n":{"not":{"$ref":"#/$defs/n"}}}}`, "refers back"},
		{"a remote $ref", `{"type":"object","properties":{"x":{"$ref":"http://169.254.169.254/meta"}}}`, ""},
		{"a $ref by URI in a schema with an $id", `{"$id":"http://x/s","type":"object","allOf":[{"$ref":"http://x/s"}]}`, "does not follow"},
		{"an anchor", `{"type":"object","properties":{"x":{"$ref":"#here"}}}`, "does not follow"},
		{"a nested $id", `{"type":"object","$defs":{"a":{"$id":"http://x/a","$ref":"#"}}}`, "$id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tools.SchemaLoop(json.RawMessage(tt.schema))
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Fatalf("SchemaLoop = %q; want %q", got, tt.want)
			}
			if got != "" {
				return
			}
			// What passes must validate without looping, as a call would.
			var s jsonschema.Schema
			if err := json.Unmarshal([]byte(tt.schema), &s); err != nil {
				t.Fatal(err)
			}
			r, err := s.Resolve(nil)
			if err != nil {
				return // never validated against, as a call does
			}
			_ = r.Validate(map[string]any{"child": map[string]any{"child": map[string]any{}}, "item": map[string]any{"next": map[string]any{}}})
		})
	}
}
