package handlers

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/subako/subako/runtime"
)

// fuzzBody stands for a verb's input: strings, a list, a number, and an
// opaque JSON value as tool inputs are.
type fuzzBody struct {
	Name  string          `json:"name"`
	Tags  []string        `json:"tags"`
	Wait  int             `json:"wait_seconds"`
	Input json.RawMessage `json:"input"`
}

// FuzzDecodeStrict feeds request bodies to the strict decoder. A refusal is
// a 422 with a code (and a field for what sits in one); an accepted body is
// one valid JSON value of valid UTF-8 with no NUL in what was decoded, and
// encoding what was decoded and decoding it again gives the same input.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"name":"a","tags":["x"],"wait_seconds":3,"input":{"q":1}}`,
		`{"name":"a"}{"name":"b"}`, `{"name":"a","name":"b"}`, `{"input":{"a":1,"a":2}}`, `{"name":"\u0000"}`,
		"{\"name\":\"\xff\"}", `{"name":"\ud800"}`, `{"name":"\ufffd"}`, `{"nope":1}`, `{"wait_seconds":"3"}`,
		`[` + strings.Repeat(`[`, 70) + strings.Repeat(`]`, 70) + `]`, `{"input":[1,"x",null,true,{"b":"\u00e9"}]}`} {
		f.Add([]byte(s))
	}
	withField := map[string]bool{"invalid_text": true, "duplicate_key": true, "too_deep": true, "unknown_field": true}
	f.Fuzz(func(t *testing.T, body []byte) {
		var v fuzzBody
		err := decodeStrict(body, &v)
		if err != nil {
			e, ok := runtime.AsError(err)
			if !ok || e.Kind != runtime.KindInvalid || e.Code == "" || e.Detail == "" || (withField[e.Code] && e.Field == "") {
				t.Fatalf("refusal %#v is not a 422 that names its problem", err)
			}
			return
		}
		if len(bytes.TrimSpace(body)) > 0 && (!json.Valid(body) || !utf8.Valid(body)) {
			t.Fatalf("accepted a body that is not one valid JSON value: %q", body)
		}
		for _, s := range append([]string{v.Name, string(v.Input)}, v.Tags...) {
			if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
				t.Fatalf("accepted text that cannot be stored: %q", s)
			}
		}
		again, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("what was accepted does not encode: %v", err)
		}
		var w fuzzBody
		if err := decodeStrict(again, &w); err != nil {
			t.Fatalf("the accepted input, encoded again, is refused: %v\n%s", err, again)
		}
		// RawMessage keeps the bytes as sent; compare it as JSON (absent is null).
		var a, b any
		_ = json.Unmarshal(v.Input, &a)
		_ = json.Unmarshal(w.Input, &b)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("input changed: %s vs %s", v.Input, w.Input)
		}
		v.Input, w.Input = nil, nil
		if !reflect.DeepEqual(v, w) {
			t.Fatalf("decode, encode, decode changed the input: %+v vs %+v", v, w)
		}
	})
}
