package tools

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// MaxConfigBytes is the largest config Parse reads. Far beyond any real
// version, and it bounds the work and the error list of a hostile one.
const MaxConfigBytes = 1 << 20

// Parse reads an agent config strictly: every unknown field, bad name, bad
// policy, credential and reference the Catalog does not know is reported, all
// of them, in document order, as a *ValidationError. On error the Config is
// the zero value. cat must not be nil.
func Parse(data []byte, cat Catalog) (Config, error) {
	if len(data) > MaxConfigBytes {
		return Config{}, &ValidationError{Errors: []FieldError{fieldError("", "config_too_large", fmt.Sprintf(
			"config must be at most %d bytes (1 MiB); it has %d", MaxConfigBytes, len(data)))}}
	}
	root, err := parseTree(data)
	if err != nil {
		return Config{}, &ValidationError{Errors: []FieldError{
			fieldError("", "invalid_json", syntaxDetail(data, err))}}
	}
	v := &validator{cat: cat}
	v.text("", root)
	cfg := v.config(root)
	if len(v.errs) > 0 {
		// Stable: errors at one offset keep the order the checks ran in.
		slices.SortStableFunc(v.errs, func(a, b placedError) int { return cmp.Compare(a.off, b.off) })
		fes := make([]FieldError, len(v.errs))
		for i, pe := range v.errs {
			fes[i] = pe.FieldError
		}
		return Config{}, &ValidationError{Errors: fes}
	}
	return cfg, nil
}

// validator collects problems with the offset they were found at, so they
// can be sorted into document order whatever order the checks run in.
type validator struct {
	cat  Catalog
	errs []placedError
}

type placedError struct {
	off int64
	FieldError
}

func (v *validator) add(off int64, errs ...FieldError) {
	for _, fe := range errs {
		v.errs = append(v.errs, placedError{off: off, FieldError: fe})
	}
}

// obj is a checked JSON object: its path, its node and its known fields.
type obj struct {
	path string
	n    *node
	fs   map[string]*node
}

// at is the path of one field of the object.
func (o obj) at(key string) string { return joinPath(o.path, key) }

// off places a field's errors at its value, or a missing field's at the end
// of the object, after the problems of the fields that are there.
func (o obj) off(key string) int64 {
	if f, ok := o.fs[key]; ok {
		return f.off
	}
	return o.n.end
}

// object checks that n is an object holding only the known fields, each
// once. what names the object in messages ("a sandbox grant"). ok is false
// when n is not an object at all.
func (v *validator) object(path string, n *node, what string, known ...string) (obj, bool) {
	o := obj{path: path, n: n, fs: map[string]*node{}}
	if n.kind != objectNode {
		v.add(n.off, wrongType(path, "an object", n))
		return o, false
	}
	for _, m := range n.fields {
		field := joinPath(path, m.key)
		switch {
		case !slices.Contains(known, m.key):
			v.add(m.val.off, unknownField(field, m.key, what, known))
		case o.fs[m.key] != nil:
			v.add(m.val.off, fieldError(field, "duplicate_field", fmt.Sprintf(
				"field %s is given twice; give it once", quoteShort(m.key))))
		default:
			o.fs[m.key] = m.val
		}
	}
	return o, true
}

func unknownField(field, key, what string, known []string) FieldError {
	if looksLikeCredentialField(key) {
		return fieldError(field, "credential_in_config", credentialDetail)
	}
	return fieldError(field, "unknown_field", fmt.Sprintf(
		"unknown field %s; %s has %s", quoteShort(key), what, listWords(known, "and")))
}

// str reads an optional string field: absent is "", any other type is reported.
func (v *validator) str(o obj, key string) string {
	n, ok := o.fs[key]
	if !ok {
		return ""
	}
	if n.kind != stringNode {
		v.add(n.off, wrongType(o.at(key), "a string", n))
		return ""
	}
	return n.str
}

// array reads a list; null counts as empty, as a Go exporter writes a nil slice.
func (v *validator) array(path string, n *node) []*node {
	switch n.kind {
	case nullNode:
		return nil
	case arrayNode:
		return n.items
	}
	v.add(n.off, wrongType(path, "an array", n))
	return nil
}

func wrongType(path, want string, n *node) FieldError {
	return fieldError(path, "invalid_type", fmt.Sprintf(
		"%s must be %s; found %s", lastSegment(path), want, n.kind.typeName()))
}

// plainKey is a key that reads unambiguously after a dot in a path.
var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// joinPath appends a key to a JSON path: a.b for plain keys, a["x.y"] otherwise.
func joinPath(path, key string) string {
	if !plainKey.MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func indexPath(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// lastSegment names a field in its own message: "name" for
// "sandboxes[0].name", `["a.b"]` for `tool_rules["a.b"]`.
func lastSegment(path string) string {
	if path == "" {
		return "config"
	}
	if strings.HasSuffix(path, `"]`) {
		return path[strings.LastIndex(path, `["`):]
	}
	return path[strings.LastIndexByte(path, '.')+1:]
}

// listWords writes "a, b and c" for messages.
func listWords(words []string, conj string) string {
	switch len(words) {
	case 0:
		return "nothing"
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conj + " " + words[len(words)-1]
}
