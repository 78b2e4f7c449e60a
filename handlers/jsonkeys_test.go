package handlers

import (
	"encoding/json"
	"testing"

	"github.com/subako/subako/runtime"
)

// A key in the wrong case is refused wherever the body has field names,
// nested in lists and maps too, and named by its path; what a verb takes as
// it comes (a tool's input) keeps its keys, whatever their case.
func TestKeysInTheWrongCaseAreRefusedWhereTheyNameFields(t *testing.T) {
	type item struct {
		Name string `json:"name"`
	}
	type body struct {
		Items  []item          `json:"items"`
		ByName map[string]item `json:"by_name"`
		Ptr    *item           `json:"ptr"`
		Input  map[string]any  `json:"input"`
		Raw    json.RawMessage `json:"raw"`
		Any    any             `json:"any"`
	}
	for _, c := range []struct{ in, field string }{
		{`{"Items":[]}`, "Items"},
		{`{"items":[{"name":"a"},{"NAME":"b"}]}`, "items[1].NAME"},
		{`{"by_name":{"x":{"Name":"c"}}}`, "by_name.x.Name"},
		{`{"ptr":{"nAme":"d"}}`, "ptr.nAme"},
	} {
		var v body
		e, _ := runtime.AsError(decodeStrict([]byte(c.in), &v))
		if e == nil || e.Code != "unknown_field" || e.Field != c.field {
			t.Errorf("%s: %v; want unknown_field at %s", c.in, e, c.field)
		}
	}
	var v body
	in := `{"items":[{"name":"a"}],"input":{"Name":1,"NAME":{"Items":2}},"raw":{"Name":3},"any":[{"Name":4}],"ptr":null}`
	if err := decodeStrict([]byte(in), &v); err != nil || v.Items[0].Name != "a" || v.Input["NAME"] == nil {
		t.Errorf("free-form values: %v %+v", err, v)
	}
}
