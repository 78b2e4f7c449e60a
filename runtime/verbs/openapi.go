package verbs

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// OpenAPI is the API's OpenAPI 3.1 document, generated from the registry:
// one operation a verb (operationId the verb's name, summary its Doc), its
// aliases as deprecated operations of the same verb, bearer security and
// problem-JSON errors (docs/api.md "Errors"). Served at /api/v1/openapi.json.
func OpenAPI() ([]byte, error) {
	paths := map[string]map[string]any{}
	for _, v := range All() {
		for i, p := range append([]string{v.Path}, v.Aliases...) {
			op := operation(v)
			if i > 0 {
				// operationIds are unique: an alias is the same verb, deprecated.
				delete(op, "operationId")
				op["deprecated"] = true
				op["description"] = "An older path of " + v.Name + " (" + v.Method + " /api/v1" + templated(v.Path) + "); it keeps working."
			}
			t := templated(p)
			if paths[t] == nil {
				paths[t] = map[string]any{}
			}
			paths[t][strings.ToLower(v.Method)] = op
		}
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   "Subako API",
			"version": "v1",
			"description": "Every verb is Noun.verb: the operationId here, `subako do Noun.verb`, the Action on the Audit page, " +
				"$.Noun.verb in /api/v1/$.d.ts and the permission a 403 names. Verbs that are not plain reads and writes are " +
				"POST /nouns/{noun}/verb; older paths are kept, marked deprecated.",
		},
		"servers":  []any{map[string]any{"url": "/api/v1"}},
		"security": []any{map[string]any{"bearer": []any{}}},
		"paths":    paths,
		"components": map[string]any{
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer",
					"description": "A person's API token (sbk_…) or a session's token (sbs_…)."},
			},
			"schemas":   map[string]any{"Problem": problemSchema()},
			"responses": problemResponses(),
		},
	}
	return json.MarshalIndent(doc, "", " ")
}

// templated turns echo's path into OpenAPI's: ":agent" is "{agent}", the
// wildcard "*" is "{path}" (a relative path, its slashes included).
func templated(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		switch {
		case s == "*":
			segs[i] = "{path}"
		case strings.HasPrefix(s, ":"):
			segs[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(segs, "/")
}

func operation(v Verb) map[string]any {
	op := map[string]any{
		"operationId":         v.Name,
		"summary":             v.Doc,
		"tags":                []string{v.Noun()},
		"x-subako-permission": v.Permission,
	}
	inPath := map[string]bool{}
	var params []any
	for _, p := range PathParams(v.Path) {
		inPath[p] = true
		params = append(params, map[string]any{"name": p, "in": "path", "required": true,
			"description": v.Input.Properties[p].Description, "schema": map[string]any{"type": "string"}})
	}
	rest := fieldsBut(v.Input, inPath)
	query := v.Method == http.MethodGet || v.Method == http.MethodDelete
	switch {
	case v.Body == BodyRaw:
		op["requestBody"] = map[string]any{"required": true, "description": "the bytes, sent as is",
			"content": map[string]any{"application/octet-stream": map[string]any{}}}
	case v.Body == BodyWhole:
		op["requestBody"] = map[string]any{"required": true,
			"content": map[string]any{"application/json": map[string]any{"schema": v.Input.Properties["body"]}}}
	case query:
		for _, name := range sortedKeys(rest.Properties) {
			s := rest.Properties[name]
			params = append(params, map[string]any{"name": name, "in": "query", "required": contains(rest.Required, name),
				"description": s.Description, "schema": s})
		}
	default:
		op["requestBody"] = map[string]any{"required": len(rest.Required) > 0,
			"content": map[string]any{"application/json": map[string]any{"schema": rest}}}
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	responses := map[string]any{}
	switch {
	case v.Output != nil:
		responses["2XX"] = map[string]any{"description": "done",
			"content": map[string]any{"application/json": map[string]any{"schema": v.Output}}}
	case v.Read:
		responses["200"] = map[string]any{"description": "the bytes",
			"content": map[string]any{"application/octet-stream": map[string]any{}}}
	default:
		responses["204"] = map[string]any{"description": "done; no body"}
	}
	for _, code := range []string{"401", "403", "404", "409", "413", "422", "429"} {
		responses[code] = map[string]any{"$ref": "#/components/responses/" + code}
	}
	op["responses"] = responses
	return op
}

// fieldsBut is the input without the named (path) fields: the body or query.
func fieldsBut(in *jsonschema.Schema, skip map[string]bool) *jsonschema.Schema {
	out := &jsonschema.Schema{Type: "object", Description: in.Description, Properties: map[string]*jsonschema.Schema{}}
	for k, s := range in.Properties {
		if !skip[k] {
			out.Properties[k] = s
		}
	}
	for _, r := range in.Required {
		if !skip[r] {
			out.Required = append(out.Required, r)
		}
	}
	return out
}

func problemSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:        "object",
		Description: "RFC 9457 problem details, with Subako's code, field and missing_permission",
		Required:    []string{"status", "code"},
		Properties: map[string]*jsonschema.Schema{
			"type":               str("about:blank"),
			"title":              str("a short title"),
			"status":             integer("the HTTP status"),
			"code":               str("what went wrong, e.g. permission_denied, not_found, name_invalid, limit_reached"),
			"detail":             str("a sentence naming the field and the limit"),
			"field":              str("the input field at fault, as a JSON path"),
			"missing_permission": str("on a refusal: the permission that would have allowed the call, e.g. \"Agent.create\""),
			"errors":             arr(obj(prop("field", str("")), prop("code", str("")), prop("detail", str("")))),
		},
	}
}

func problemResponses() map[string]any {
	words := map[string]string{
		"401": "unauthenticated, an expired or revoked token, or an ended session's token",
		"403": "refused: permission_denied with missing_permission, or another refusal",
		"404": "not_found (or not visible to the caller)",
		"409": "a conflict: version_published, session_ended, name_taken, …",
		"413": "request_entity_too_large: the body is over its limit",
		"422": "bad input: the code and the field name what and where",
		"429": "limit_reached or too many attempts; Retry-After says when to try again",
	}
	out := map[string]any{}
	for code, d := range words {
		out[code] = map[string]any{"description": d, "content": map[string]any{
			"application/problem+json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Problem"}}}}
	}
	return out
}

func sortedKeys(m map[string]*jsonschema.Schema) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
