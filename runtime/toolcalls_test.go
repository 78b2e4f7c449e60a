package runtime

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/tools"
)

// Input errors name the field at fault and never echo a long value back.
func TestCheckInputNamesTheField(t *testing.T) {
	exec := offered{Tool: tools.Tool{Name: "sandbox__w__exec", Kind: tools.KindSandbox, InputSchema: tools.SandboxTools(tools.Sandbox{Name: "w"})[0].InputSchema}}
	long := strings.Repeat("a", 9000)
	cases := []struct{ input, field, says string }{
		{`{"command":"` + long + `"}`, "input.command", "9000 characters"},
		{`{}`, "input.command", "required"},
		{`{"command":"ls","timeout_secs":0}`, "input.timeout_secs", "minimum: 0 is less than 1"},
		{`{"command":"ls","timeout_secs":5000}`, "input.timeout_secs", "maximum: 5000 is greater than 3600"},
		{`{"command":"ls","env":{"A":1}}`, "input.env", "string"},
		{`{"command":"ls","colour":"red"}`, "input", "colour"},
		{`[1]`, "input", "object"},
	}
	for _, c := range cases {
		_, err := checkInput(exec, json.RawMessage(c.input))
		e, ok := AsError(err)
		if !ok {
			t.Errorf("%.40s: %v, want a field error on %s", c.input, err, c.field)
			continue
		}
		if e.Field != c.field || !strings.Contains(e.Detail, c.says) || strings.Contains(e.Detail, long[:100]) {
			t.Errorf("%.40s: %v (field %q)", c.input, err, e.Field)
		}
	}
	if _, err := checkInput(exec, json.RawMessage(`{"command":"ls -la"}`)); err != nil {
		t.Errorf("a good input was refused: %v", err)
	}
}
