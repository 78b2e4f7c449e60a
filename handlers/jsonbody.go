package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

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
//
// Most bodies are checked in one quick pass over their bytes (plainJSON);
// only one it cannot vouch for is read token by token, which finds and
// names the problem, if there is one.
func checkJSONBody(body []byte) error {
	if plainJSON(body) {
		return nil
	}
	return scanJSONBody(body)
}

// scanJSONBody is checkJSONBody token by token: the first problem in the
// body's order, named by its JSON path.
func scanJSONBody(body []byte) error {
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

// plainJSON reports whether body is sure to pass checkJSONBody's rules: one
// valid JSON value of valid UTF-8, nested no deeper than maxJSONDepth, no
// \u escape that could decode to a NUL or a lone surrogate, and no object
// giving a key twice. It errs only towards false: a key holding an escape,
// a \u0000 or any surrogate escape (a valid pair included), a number beyond
// a float64, or nesting near the limit sends the body to the token-by-token
// check. It allocates nothing for objects of up to plainKeysLinear keys.
func plainJSON(body []byte) bool {
	if !json.Valid(body) || !utf8.Valid(body) {
		return false
	}
	for at := 0; ; {
		i := bytes.Index(body[at:], []byte(`\u`))
		if i < 0 {
			break
		}
		at += i + 2
		// A \u is an escape when an odd run of backslashes ends at it (in
		// "\\u" the backslash is escaped); valid JSON puts four hex digits
		// after one.
		run := 1
		for j := at - 3; j >= 0 && body[j] == '\\'; j-- {
			run++
		}
		if run%2 == 0 {
			continue
		}
		if r := hex4(body[at:]); r <= 0 || (r >= 0xd800 && r <= 0xdfff) {
			return false
		}
	}
	type open struct {
		object  bool
		wantKey bool
		keys    int // where its keys start in keys
		set     map[string]struct{}
	}
	var stackBuf [16]open
	var keysBuf [32][]byte
	stack, keys := stackBuf[:0], keysBuf[:0]
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '{', '[':
			// A value nested maxJSONDepth deep is still allowed; inside
			// this one it would not be: leave the exact line to the check.
			if len(stack) >= maxJSONDepth {
				return false
			}
			stack = append(stack, open{object: body[i] == '{', wantKey: body[i] == '{', keys: len(keys)})
		case '}', ']':
			top := stack[len(stack)-1]
			keys = keys[:top.keys]
			stack = stack[:len(stack)-1]
		case ',':
			if top := &stack[len(stack)-1]; top.object {
				top.wantKey = true
			}
		case '"':
			end := i + 1
			for body[end] != '"' {
				if body[end] == '\\' {
					end++
				}
				end++
			}
			if n := len(stack); n > 0 && stack[n-1].wantKey {
				top := &stack[n-1]
				top.wantKey = false
				key := body[i+1 : end]
				if bytes.IndexByte(key, '\\') >= 0 {
					return false // compared as decoded by the check
				}
				if top.set != nil {
					if _, dup := top.set[string(key)]; dup {
						return false
					}
					top.set[string(key)] = struct{}{}
				} else {
					for _, k := range keys[top.keys:] {
						if bytes.Equal(k, key) {
							return false
						}
					}
					keys = append(keys, key)
					if len(keys)-top.keys > plainKeysLinear {
						top.set = make(map[string]struct{}, 2*plainKeysLinear)
						for _, k := range keys[top.keys:] {
							top.set[string(k)] = struct{}{}
						}
					}
				}
			}
			i = end
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			end := i + 1
			for end < len(body) && strings.IndexByte("0123456789+-.eE", body[end]) >= 0 {
				end++
			}
			// The scan reads numbers as float64s and refuses one beyond
			// their range (1e400); only a long one or one with an exponent
			// can be.
			if num := body[i:end]; len(num) > 300 || bytes.IndexAny(num, "eE") >= 0 {
				if _, err := strconv.ParseFloat(string(num), 64); err != nil {
					return false
				}
			}
			i = end - 1
		}
	}
	return true
}

// plainKeysLinear is how many keys of one object plainJSON compares one by
// one before it keeps them in a map.
const plainKeysLinear = 16

// hex4 is the value of the four hex digits b starts with, or -1.
func hex4(b []byte) int {
	if len(b) < 4 {
		return -1
	}
	v := 0
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c|0x20 >= 'a' && c|0x20 <= 'f':
			c = (c | 0x20) - 'a' + 10
		default:
			return -1
		}
		v = v<<4 | int(c)
	}
	return v
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
	if err := checkExactKeys(body, reflect.TypeOf(v), ""); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonProblem(err)
	}
	return nil
}
