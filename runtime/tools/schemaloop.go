package tools

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
)

// inPlace are the keywords that apply a subschema to the same value the
// schema is applied to. A cycle through them (and $ref) never reaches
// into the value, so a validator following it recurses until the process
// dies of a stack overflow: github.com/google/jsonschema-go has no guard,
// and a Go stack overflow cannot be recovered. Every other applicator
// (properties, items, …) moves to a part of the value, which ends.
var inPlace = []string{"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies"}

var refKeywords = []string{"$ref", "$dynamicRef", "$recursiveRef"}

// SchemaLoop says why validating against the JSON Schema raw might never
// end, or "" when it cannot loop: a reference that leads back to where it
// started without reading into the value ("$ref": "#" at the top, two
// allOf that name each other). Anchors ("#name"), references by URI in a
// schema that names itself with "$id", and nested "$id"s that move what "#"
// means are not followed and count as a possible loop. A reference to
// another document is no loop: with no loader the validator refuses the
// whole schema, and the input is not validated against it.
func SchemaLoop(raw json.RawMessage) string {
	var root any
	if err := json.Unmarshal(raw, &root); err != nil {
		return ""
	}
	top, _ := root.(map[string]any)
	_, named := top["$id"]
	nodes := map[string]map[string]any{}
	if why := indexSchemas(root, "", nodes, true); why != "" {
		return why
	}
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var visit func(ptr string) string
	visit = func(ptr string) string {
		switch state[ptr] {
		case onPath:
			return fmt.Sprintf("it refers back to %s without reading into the value, so validating against it would never end", pointerName(ptr))
		case done:
			return ""
		}
		state[ptr] = onPath
		next, why := inPlaceTargets(nodes[ptr], ptr, nodes, named)
		if why != "" {
			return why
		}
		for _, n := range next {
			if why := visit(n); why != "" {
				return why
			}
		}
		state[ptr] = done
		return ""
	}
	ptrs := make([]string, 0, len(nodes))
	for p := range nodes {
		ptrs = append(ptrs, p)
	}
	sort.Strings(ptrs)
	for _, p := range ptrs {
		if why := visit(p); why != "" {
			return why
		}
	}
	return ""
}

// indexSchemas records every object in v by its JSON pointer.
func indexSchemas(v any, ptr string, nodes map[string]map[string]any, top bool) string {
	switch t := v.(type) {
	case map[string]any:
		if _, ok := t["$id"]; ok && !top {
			return fmt.Sprintf("it sets $id at %s, which this server does not follow", pointerName(ptr))
		}
		nodes[ptr] = t
		for k, c := range t {
			if why := indexSchemas(c, ptr+"/"+escapePointer(k), nodes, false); why != "" {
				return why
			}
		}
	case []any:
		for i, c := range t {
			if why := indexSchemas(c, fmt.Sprintf("%s/%d", ptr, i), nodes, false); why != "" {
				return why
			}
		}
	}
	return ""
}

// inPlaceTargets lists the pointers of the schemas s applies to its own value.
func inPlaceTargets(s map[string]any, ptr string, nodes map[string]map[string]any, named bool) ([]string, string) {
	var out []string
	for _, k := range inPlace {
		switch c := s[k].(type) {
		case map[string]any:
			if k == "dependentSchemas" || k == "dependencies" {
				for name, d := range c {
					if _, ok := d.(map[string]any); ok {
						out = append(out, ptr+"/"+k+"/"+escapePointer(name))
					}
				}
				continue
			}
			out = append(out, ptr+"/"+k)
		case []any:
			for i := range c {
				out = append(out, fmt.Sprintf("%s/%s/%d", ptr, k, i))
			}
		}
	}
	for _, k := range refKeywords {
		ref, ok := s[k].(string)
		if !ok {
			continue
		}
		if !strings.HasPrefix(ref, "#") && !named {
			continue // another document: never loaded, so never validated against
		}
		target, ok := localPointer(ref)
		if !ok {
			return nil, fmt.Sprintf("it has %s %q at %s, which this server does not follow", k, cut(ref, 80), pointerName(ptr))
		}
		if _, ok := nodes[target]; ok {
			out = append(out, target)
		}
	}
	return out, ""
}

// localPointer turns "#" or "#/a/b" into the pointer "" or "/a/b".
func localPointer(ref string) (string, bool) {
	if ref == "#" {
		return "", true
	}
	if !strings.HasPrefix(ref, "#/") {
		return "", false
	}
	p, err := url.PathUnescape(ref[1:])
	if err != nil {
		return "", false
	}
	return p, true
}

func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func pointerName(ptr string) string {
	if ptr == "" {
		return "the top"
	}
	return "#" + cut(ptr, 80)
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
