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

// FuzzPlainJSONVouchesOnlyForWhatTheScanAccepts: the quick pass may send a
// good body to the token-by-token scan, but never let through one the scan
// refuses; and the bodies people send are the quick pass's.
func FuzzPlainJSONVouchesOnlyForWhatTheScanAccepts(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `"x"`, `1`, `{"a":1,"a":2}`, `{"a":{"b":1},"b":{"a":1}}`, `{"a\u0062":1,"ab":2}`,
		`{"a":"\u0000"}`, `{"a":"\\u0000"}`, `{"a":"\\\u0000"}`, `{"a":"\ud83d\ude00"}`, `{"a":"\udc00"}`, `{"a":"C:\\users"}`,
		"{\"a\":\"\xff\"}", `{"a":1}{"b":2}`, `{"a":1} x`, strings.Repeat(`[`, 64) + strings.Repeat(`]`, 64),
		strings.Repeat(`[`, 65) + `1` + strings.Repeat(`]`, 65), `{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,` +
			`"k9":9,"k10":0,"k11":1,"k12":2,"k13":3,"k14":4,"k15":5,"k16":6,"k17":7,"k3":8}`,
		strings.Repeat(`[`, 64) + `1` + strings.Repeat(`]`, 64), strings.Repeat(`[`, 65) + strings.Repeat(`]`, 65),
		// An object past the linear keys, then holding objects past them too.
		`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":0,"k11":1,"k12":2,"k13":3,"k14":4,"k15":5,"k16":6,` +
			`"in":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":0,"k11":1,"k12":2,"k13":3,"k14":4,"k15":5,"k16":6,"k17":7},` +
			`"k17":7,"in2":{"k0":0,"k0x":1},"k18":8,"k0":9}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if plainJSON(body) {
			if err := scanJSONBody(body); err != nil {
				t.Fatalf("the quick pass let through %q, which the scan refuses: %v", body, err)
			}
		}
	})
}

// The quick pass takes what agents and people send, escapes and all, and
// leaves every doubtful body to the scan, which names its problem.
func TestPlainJSONTakesTheCommonBodiesAndLeavesTheDoubtful(t *testing.T) {
	for _, s := range []string{
		`{"tool":"sandbox__w__exec","input":{"command":"printf 'a\n\tb' > \"x y\""},"wait_seconds":30}`,
		`{"input":{"path":"C:\\users\\u00e9","text":"caf\u00e9 \u2014 ok","list":[1,2.5e3,-0,true,false,null,{}]}}`,
		`{"a":{"k":1},"b":{"k":2},"c":[{"k":3},{"k":3}]}`,
		`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":0,"k11":1,"k12":2,"k13":3,"k14":4,"k15":5,"k16":6,"k17":7}`,
		`{"a":"\\u0000 is how JSON writes a NUL"}`,
		strings.Repeat(`[`, 63) + strings.Repeat(`]`, 63),
	} {
		if !plainJSON([]byte(s)) {
			t.Errorf("the quick pass sent a plain body to the scan: %s", s)
		}
	}
	for _, c := range []struct{ body, code string }{
		{`{"a":1,"b":{"c":2,"c":3}}`, "duplicate_key"},
		{`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":0,"k11":1,"k12":2,"k13":3,"k14":4,"k15":5,"k16":6,"k17":7,"k9":8}`, "duplicate_key"},
		{`{"a":"x\u0000y"}`, "invalid_text"},
		{`{"a":"\\\u0000"}`, "invalid_text"},
		{`{"a":"\ud800"}`, "invalid_text"},
		{"{\"a\":\"\xff\"}", "invalid_text"},
		{`{"a":1} {}`, "trailing_data"},
		{strings.Repeat(`[`, 66) + strings.Repeat(`]`, 66), "too_deep"},
		{`{"a":1e400}`, "invalid_type"}, // beyond a float64, as the scan reads numbers
	} {
		if plainJSON([]byte(c.body)) {
			t.Errorf("the quick pass vouched for %q", c.body)
		}
		e, _ := runtime.AsError(checkJSONBody([]byte(c.body)))
		if e == nil || e.Code != c.code {
			t.Errorf("checkJSONBody(%q) = %v, want %s", c.body, e, c.code)
		}
	}
}
