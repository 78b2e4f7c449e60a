package handlers

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"

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
//
// raw is read level by level, and only where t has field names below: a
// tool's input (any, a map of any, raw JSON) is never decoded here, so a
// large one costs a scan, not a tree of values. A raw value of the wrong
// type is left to the decoder, which names it.
func checkExactKeys(raw json.RawMessage, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if !namesFields(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return nil
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
		var arr []json.RawMessage
		if json.Unmarshal(raw, &arr) != nil {
			return nil
		}
		for i, val := range arr {
			if err := checkExactKeys(val, t.Elem(), tools.IndexPath(path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return nil
		}
		for key, val := range obj {
			if err := checkExactKeys(val, t.Elem(), tools.JoinPath(path, key)); err != nil {
				return err
			}
		}
	}
	return nil
}

// namesFields reports whether a value of t, decoded by encoding/json, may
// match an object key to a struct field's name: t is a struct, or holds
// one, that does not decode itself. Kept per type.
func namesFields(t reflect.Type) bool {
	if v, ok := fieldNamers.Load(t); ok {
		return v.(bool)
	}
	v := namesFieldsIn(t, map[reflect.Type]bool{})
	fieldNamers.Store(t, v)
	return v
}

var fieldNamers sync.Map // reflect.Type -> bool

func namesFieldsIn(t reflect.Type, seen map[reflect.Type]bool) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if seen[t] || reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Struct:
		return true
	case reflect.Slice, reflect.Array, reflect.Map:
		return namesFieldsIn(t.Elem(), seen)
	}
	return false
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
