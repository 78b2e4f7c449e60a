// Package tsgen writes TypeScript declarations from JSON Schemas: the types of
// the typed client `$` (GET /api/v1/$.d.ts, a session's $.d.ts in code mode).
// It only writes text; it never reads the network or decides who may call what
// (callers pass only the functions the caller holds).
//
// Every output is bounded: schemas nest at most MaxDepth deep and a type spends
// at most MaxNodes schema nodes ($ref chains that fan out would otherwise grow
// exponentially); past either, the type is `unknown`, which stays true.
package tsgen

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

const (
	// MaxDepth is how deep a schema's types nest before they read `unknown`.
	MaxDepth = 12
	// MaxNodes is how many schema nodes one Type spends before `unknown`.
	MaxNodes = 4000
)

// Type is a TypeScript type for a JSON Schema: objects with their required and
// optional properties (described ones with a doc comment), arrays and tuples,
// enum and const as literal unions, oneOf/anyOf as unions, allOf as an
// intersection, "null" among the types as `| null`, additionalProperties as an
// index signature, $ref resolved against the schema's $defs/definitions.
// Whatever it cannot say is `unknown`. A nil schema is `unknown`.
func Type(s *jsonschema.Schema) string {
	g := gen{root: s, budget: MaxNodes, expanding: map[string]bool{}}
	return g.typ(s, 0, "")
}

type gen struct {
	root      *jsonschema.Schema
	budget    int
	expanding map[string]bool // $refs being expanded: a cycle reads unknown
}

// typ writes s at nesting depth d; indent is the current line's indent, used
// for the properties of object types.
func (g *gen) typ(s *jsonschema.Schema, d int, indent string) string {
	if s == nil {
		return "unknown"
	}
	g.budget--
	if g.budget < 0 || d > MaxDepth {
		return "unknown"
	}
	if isFalse(s) {
		return "never"
	}
	if s.Ref != "" {
		t, ok := g.ref(s.Ref, d, indent)
		if !ok {
			t = "unknown"
		}
		// Beside $ref, 2020-12 applies the other keywords too; rarely used,
		// and the referenced type is the one a caller needs.
		return t
	}
	if s.Const != nil {
		return g.nullable(s, literal(*s.Const))
	}
	if len(s.Enum) > 0 {
		parts := make([]string, 0, len(s.Enum))
		for _, v := range s.Enum {
			parts = append(parts, literal(v))
		}
		return union(parts)
	}
	base := g.base(s, d, indent)
	var alts []string
	for _, list := range [][]*jsonschema.Schema{s.OneOf, s.AnyOf} {
		if len(list) == 0 {
			continue
		}
		parts := make([]string, 0, len(list))
		for _, m := range list {
			parts = append(parts, g.typ(m, d+1, indent))
		}
		alts = append(alts, "("+union(parts)+")")
	}
	for _, m := range s.AllOf {
		alts = append(alts, "("+g.typ(m, d+1, indent)+")")
	}
	if len(alts) == 0 {
		return base
	}
	if base == "unknown" && len(alts) == 1 {
		return alts[0][1 : len(alts[0])-1]
	}
	if base != "unknown" {
		alts = append([]string{"(" + base + ")"}, alts...)
	}
	return strings.Join(alts, " & ")
}

// base is the type s's "type" keyword (or, without one, its properties or
// items) says.
func (g *gen) base(s *jsonschema.Schema, d int, indent string) string {
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	if len(types) == 0 {
		switch {
		case s.Properties != nil || s.AdditionalProperties != nil || s.PatternProperties != nil || s.Required != nil:
			types = []string{"object"}
		case s.Items != nil || s.PrefixItems != nil:
			types = []string{"array"}
		default:
			return g.nullable(s, "unknown")
		}
	}
	// null last: "string[] | null", as Go's nil slices mean.
	if nonNull := slices.DeleteFunc(slices.Clone(types), func(t string) bool { return t == "null" }); len(nonNull) < len(types) {
		types = append(nonNull, "null")
	}
	parts := make([]string, 0, len(types))
	for _, t := range types {
		switch t {
		case "string":
			parts = append(parts, "string")
		case "number", "integer":
			parts = append(parts, "number")
		case "boolean":
			parts = append(parts, "boolean")
		case "null":
			parts = append(parts, "null")
		case "array":
			parts = append(parts, g.array(s, d, indent))
		case "object":
			parts = append(parts, g.object(s, d, indent))
		default:
			parts = append(parts, "unknown")
		}
	}
	return g.nullable(s, union(parts))
}

// nullable adds `| null` for OpenAPI 3.0's "nullable": true.
func (g *gen) nullable(s *jsonschema.Schema, t string) string {
	if n, _ := s.Extra["nullable"].(bool); n && t != "unknown" {
		return union([]string{t, "null"})
	}
	return t
}

func (g *gen) array(s *jsonschema.Schema, d int, indent string) string {
	if len(s.PrefixItems) > 0 {
		parts := make([]string, 0, len(s.PrefixItems)+1)
		for _, m := range s.PrefixItems {
			parts = append(parts, g.typ(m, d+1, indent))
		}
		if s.Items == nil || !isFalse(s.Items) {
			parts = append(parts, "..."+wrap(g.typ(s.Items, d+1, indent))+"[]")
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return wrap(g.typ(s.Items, d+1, indent)) + "[]"
}

func (g *gen) object(s *jsonschema.Schema, d int, indent string) string {
	names := propertyNames(s)
	inner := indent + "  "
	var b strings.Builder
	b.WriteString("{")
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	for _, name := range names {
		p := s.Properties[name]
		b.WriteString("\n")
		doc := ""
		if p != nil {
			doc = p.Description
		}
		if doc != "" {
			b.WriteString(inner + Comment(doc, inner) + "\n")
		}
		b.WriteString(inner + Key(name))
		if !required[name] {
			b.WriteString("?")
		}
		b.WriteString(": " + g.typ(p, d+1, inner) + ";")
	}
	// Required names without a property schema are still required.
	var bare []string
	for r := range required {
		if _, ok := s.Properties[r]; !ok {
			bare = append(bare, r)
		}
	}
	sort.Strings(bare)
	for _, r := range bare {
		b.WriteString("\n" + inner + Key(r) + ": unknown;")
	}
	if idx, ok := g.index(s, d, inner, len(names)+len(bare) > 0); ok {
		b.WriteString("\n" + inner + "[key: string]: " + idx + ";")
	}
	if b.Len() == 1 {
		return "{}"
	}
	b.WriteString("\n" + indent + "}")
	return b.String()
}

// index is the index signature's type, if the object has one. With named
// properties beside it the index reads unknown: TypeScript requires every
// property to fit the index type, and a schema's need not.
func (g *gen) index(s *jsonschema.Schema, d int, inner string, named bool) (string, bool) {
	switch {
	case s.AdditionalProperties != nil && isFalse(s.AdditionalProperties):
		return "", false
	case s.AdditionalProperties != nil && !named:
		return g.typ(s.AdditionalProperties, d+1, inner), true
	case s.AdditionalProperties != nil, len(s.PatternProperties) > 0:
		return "unknown", true
	case !named && s.Properties == nil:
		// {"type":"object"}: any object.
		return "unknown", true
	}
	return "", false
}

func propertyNames(s *jsonschema.Schema) []string {
	seen := map[string]bool{}
	var names []string
	for _, n := range s.PropertyOrder {
		if _, ok := s.Properties[n]; ok && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	var rest []string
	for n := range s.Properties {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(names, rest...)
}

// ref resolves a local reference (#, #/$defs/X, #/definitions/X, or any JSON
// pointer into the root). Others (remote documents, anchors) read unknown.
func (g *gen) ref(ref string, d int, indent string) (string, bool) {
	if g.expanding[ref] {
		return "unknown", true
	}
	target, ok := resolve(g.root, ref)
	if !ok {
		return "", false
	}
	g.expanding[ref] = true
	defer delete(g.expanding, ref)
	return g.typ(target, d+1, indent), true
}

func resolve(root *jsonschema.Schema, ref string) (*jsonschema.Schema, bool) {
	if root == nil || !strings.HasPrefix(ref, "#") {
		return nil, false
	}
	ptr := ref[1:]
	if ptr == "" {
		return root, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	cur := root
	segs := strings.Split(ptr[1:], "/")
	for i := 0; i < len(segs); i++ {
		seg := unescapePointer(segs[i])
		var next *jsonschema.Schema
		switch seg {
		case "$defs", "definitions", "properties", "patternProperties", "dependentSchemas":
			if i+1 >= len(segs) {
				return nil, false
			}
			key := unescapePointer(segs[i+1])
			i++
			m := map[string]map[string]*jsonschema.Schema{"$defs": cur.Defs, "definitions": cur.Definitions,
				"properties": cur.Properties, "patternProperties": cur.PatternProperties, "dependentSchemas": cur.DependentSchemas}[seg]
			next = m[key]
		case "items":
			next = cur.Items
		case "additionalProperties":
			next = cur.AdditionalProperties
		case "not":
			next = cur.Not
		case "allOf", "anyOf", "oneOf", "prefixItems":
			if i+1 >= len(segs) {
				return nil, false
			}
			n, err := strconv.Atoi(segs[i+1])
			i++
			list := map[string][]*jsonschema.Schema{"allOf": cur.AllOf, "anyOf": cur.AnyOf, "oneOf": cur.OneOf, "prefixItems": cur.PrefixItems}[seg]
			if err != nil || n < 0 || n >= len(list) {
				return nil, false
			}
			next = list[n]
		}
		if next == nil {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// isFalse reports the schema `false` ({"not": {}}), which nothing matches.
func isFalse(s *jsonschema.Schema) bool {
	return s != nil && s.Not != nil && reflect.DeepEqual(*s.Not, jsonschema.Schema{}) &&
		reflect.DeepEqual(*s, jsonschema.Schema{Not: s.Not})
}

// literal is a TypeScript literal type for a JSON value; objects and arrays,
// which have no literal type, read unknown.
func literal(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case string:
		return Quote(v)
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return "number"
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	case int, int64, json.Number:
		b, _ := json.Marshal(v)
		return string(b)
	}
	return "unknown"
}

// union joins types with |, dropping repeats; unknown absorbs the rest.
func union(parts []string) string {
	var out []string
	for _, p := range parts {
		if p == "unknown" {
			return "unknown"
		}
		if p == "never" || slices.Contains(out, p) {
			continue
		}
		out = append(out, p)
	}
	switch len(out) {
	case 0:
		return "never"
	case 1:
		return out[0]
	}
	return strings.Join(out, " | ")
}

// wrap parenthesizes a union or intersection before [] (a missing pair
// changes the meaning); | and & inside braces, brackets, strings or comments
// do not count.
func wrap(t string) string {
	depth, quoted := 0, false
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case !quoted && strings.HasPrefix(t[i:], "/*"):
			end := strings.Index(t[i+2:], "*/")
			if end < 0 {
				return "(" + t + ")"
			}
			i += end + 3
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '{' || c == '[' || c == '(' || c == '<':
			depth++
		case c == '}' || c == ']' || c == ')' || c == '>':
			depth--
		case depth == 0 && (c == '|' || c == '&'):
			return "(" + t + ")"
		}
	}
	return t
}
