package handlers

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/subako/subako/runtime/tools"
)

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// checkExactKeys refuses an object key that names a field of t only when
// case is ignored. encoding/json matches keys case-insensitively and keeps
// the last, so {"name": "a", "NAME": "b"} passes the repeated-key check and
// takes "b", and {"Name": "a"} is taken though the API has no such field.
// Values the type decodes itself (json.RawMessage, maps, any) are free.
func checkExactKeys(v any, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil // a wrong type: the decoder names it
		}
		fields := map[string]reflect.Type{}
		jsonFields(t, fields)
		for key, val := range obj {
			field := tools.JoinPath(path, key)
			if ft, ok := fields[key]; ok {
				if err := checkExactKeys(val, ft, field); err != nil {
					return err
				}
				continue
			}
			for name := range fields {
				if strings.EqualFold(name, key) {
					return bodyFieldError(field, "unknown_field", fmt.Sprintf("unknown field %q: field names are case-sensitive; this one is %q", key, name))
				}
			}
		}
	case reflect.Slice, reflect.Array:
		arr, _ := v.([]any)
		for i, val := range arr {
			if err := checkExactKeys(val, t.Elem(), tools.IndexPath(path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		obj, _ := v.(map[string]any)
		for key, val := range obj {
			if err := checkExactKeys(val, t.Elem(), tools.JoinPath(path, key)); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonFields collects the JSON names of t's fields as encoding/json sees
// them, embedded structs' fields included.
func jsonFields(t reflect.Type, into map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				jsonFields(ft, into)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		into[name] = f.Type
	}
}
