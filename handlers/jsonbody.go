package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/tools"
)

// maxJSONDepth bounds how deep a request body nests: far beyond any real
// input, and it keeps a hostile body from costing a deep recursion.
const maxJSONDepth = 64

// checkJSONBody reads a request body as exactly one JSON value in which no
// object gives a key twice and every string, keys included, is text that
// can be stored (tools.BadJSONText). encoding/json would take the last of
// two keys, ignore what follows the value and mend broken text into U+FFFD;
// each of these is refused instead, naming the field by its JSON path.
func checkJSONBody(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := scanValue(dec, body, "", 0); err != nil {
		return err
	}
	off := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		return &runtime.Error{Kind: runtime.KindInvalid, Code: "trailing_data", Title: "Invalid body",
			Detail: fmt.Sprintf("the body holds more after its JSON value ends (at byte %d): send one value", off)}
	}
	return nil
}

func scanValue(dec *json.Decoder, body []byte, path string, depth int) error {
	if depth > maxJSONDepth {
		return bodyFieldError(path, "too_deep", fmt.Sprintf("the body nests deeper than %d levels", maxJSONDepth))
	}
	off := dec.InputOffset()
	tok, err := dec.Token()
	if err != nil {
		return jsonProblem(err)
	}
	switch t := tok.(type) {
	case string:
		if why := tools.BadJSONText(body[off:dec.InputOffset()], t); why != "" {
			return bodyFieldError(path, "invalid_text", fieldName(path)+" "+why)
		}
	case json.Delim:
		if t == '[' {
			for i := 0; dec.More(); i++ {
				if err := scanValue(dec, body, tools.IndexPath(path, i), depth+1); err != nil {
					return err
				}
			}
		} else if err := scanObject(dec, body, path, depth); err != nil {
			return err
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return jsonProblem(err)
		}
	}
	return nil
}

func scanObject(dec *json.Decoder, body []byte, path string, depth int) error {
	seen := map[string]bool{}
	for dec.More() {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return jsonProblem(err)
		}
		key, _ := tok.(string)
		field := tools.JoinPath(path, key)
		if why := tools.BadJSONText(body[off:dec.InputOffset()], key); why != "" {
			return bodyFieldError(field, "invalid_text", fmt.Sprintf("the key %q %s", key, why))
		}
		if seen[key] {
			return bodyFieldError(field, "duplicate_key", fmt.Sprintf("%s is given twice; give it once", field))
		}
		seen[key] = true
		if err := scanValue(dec, body, field, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func fieldName(path string) string {
	if path == "" {
		return "the body"
	}
	return path
}

func bodyFieldError(field, code, detail string) *runtime.Error {
	if field == "" {
		field = "body"
	}
	return &runtime.Error{Kind: runtime.KindInvalid, Code: code, Title: "Invalid body", Detail: detail, Field: field,
		Fields: []runtime.FieldError{{Field: field, Code: code, Detail: detail}}}
}

// decodeStrict decodes a JSON body into v: checkJSONBody's rules, then no
// field v does not have and no value of the wrong type. An empty body is {}.
func decodeStrict(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if err := checkJSONBody(body); err != nil {
		return err
	}
	var tree any
	if err := json.Unmarshal(body, &tree); err == nil {
		if err := checkExactKeys(tree, reflect.TypeOf(v), ""); err != nil {
			return err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonProblem(err)
	}
	return nil
}
