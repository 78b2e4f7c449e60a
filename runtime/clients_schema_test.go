package runtime_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/tools"
)

// A client tool's input_schema must be an object schema the validator can
// compile: MCP lists tools only with one, and every call is checked against it.
func TestClientConnectChecksInputSchema(t *testing.T) {
	rt := runtime.New(modelstest.Open(t), runtime.Options{})
	t.Cleanup(rt.Close)
	_, session := publishedSession(t, rt, `{"builtins": [{"name": "ask_user"}]}`)
	client := runtime.SessionPrincipal(session, "")
	connect := func(schemas ...string) (runtime.ClientView, error) {
		var defs []tools.ToolDef
		for i, s := range schemas {
			d := tools.ToolDef{Name: "tool" + string(rune('a'+i)), Description: "A tool."}
			if s != "" {
				d.InputSchema = json.RawMessage(s)
			}
			defs = append(defs, d)
		}
		return rt.ClientConnect(t.Context(), client, runtime.ClientInput{Session: session, Client: "desktop", Tools: defs})
	}

	bad := []struct{ schema, says string }{
		{`{"type":"nonsense"}`, `must be a JSON Schema of type "object"`},
		{`{"type":"string"}`, `must be a JSON Schema of type "object"`},
		{`{"properties":{}}`, `must be a JSON Schema of type "object"`},
		{`{"type":["object"]}`, `must be a JSON Schema of type "object"`},
		{`[]`, `must be a JSON Schema of type "object"`},
		{`"object"`, `must be a JSON Schema of type "object"`},
		{`{"type":"object","properties":{"a":{"type":"nonsense"}}}`, `"nonsense" is not a JSON type`},
		{`{"type":"object","properties":{"a":{"items":{"type":["string","text"]}}}}`, `"text" is not a JSON type`},
		{`{"type":"object","properties":{"a":{"minLength":"three"}}}`, "JSON Schema"},
		{`{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`, "JSON Schema"},
	}
	for _, c := range bad {
		_, err := connect(`{"type":"object"}`, c.schema)
		e, ok := runtime.AsError(err)
		if !ok || e.Kind != runtime.KindInvalid || e.Field != "tools[1].input_schema" || e.Code != "invalid_schema" ||
			!strings.Contains(e.Detail, c.says) {
			t.Errorf("%s: %v", c.schema, err)
		}
	}

	v, err := connect(`{"type":"object","properties":{"q":{"type":"string","minLength":1}},"required":["q"]}`, "")
	if err != nil {
		t.Fatalf("a valid schema was refused: %v", err)
	}
	if len(v.Tools) != 2 || string(v.Tools[1].InputSchema) != `{"type":"object"}` {
		t.Fatalf("an absent schema should default to an object schema: %+v", v.Tools)
	}
}
