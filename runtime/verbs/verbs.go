// Package verbs is the one registry of Subako's verbs (issue 14, seed 004 "One
// name on every Interface"). Each verb is declared once here — its name, route,
// input and output JSON Schemas, the permission it needs and a line of
// documentation — and every interface is generated from that declaration: the
// API route table (web/routes.go), `subako do`, the Action's name, the OpenAPI
// document (/api/v1/openapi.json), the typed client `$` (/api/v1/$.d.ts and
// /api/v1/$.js) and the flat and code-mode tools of /mcp.
//
// It declares; it never checks or runs. The one check stays in runtime (run).
package verbs

import (
	"sort"

	"github.com/google/jsonschema-go/jsonschema"
)

// Body says how a verb's input travels over HTTP.
type Body int

const (
	// BodyFields: path parameters from the input's fields of the same name;
	// the rest as a JSON object body (POST, PUT, PATCH) or the query (GET, DELETE).
	BodyFields Body = iota
	// BodyWhole: the input's "body" field is the whole JSON body (Version.update).
	BodyWhole
	// BodyRaw: the input's "body" is bytes sent as is (Archive.upload,
	// Volume.put, Sandbox.writeFile); not callable from a code-mode program.
	BodyRaw
)

// Verb is one verb as every interface names it.
type Verb struct {
	// Name is Noun.verb: the Action's verb, `subako do NAME`, $.Noun.verb.
	Name string
	// Method and Path are the canonical route under /api/v1, in echo's syntax
	// ("/sessions/:session/end"). Verbs that are not plain reads and writes of
	// a noun follow POST /nouns/{noun}/verb.
	Method, Path string
	// Aliases are older paths (same method) that keep working.
	Aliases []string
	// Permission is what the one check needs: the verb's own name unless said.
	Permission string
	// Doc is one line of documentation, shown in OpenAPI, $.d.ts and search.
	Doc string
	// Input is an object schema: path parameters and fields. Output is what a
	// 2xx answer holds (nil: no body, or bytes for raw downloads).
	Input, Output *jsonschema.Schema
	Body          Body
	// Read marks a verb that changes nothing (safe to call from search/fetch).
	Read bool
}

// Noun is the part before the dot; Short the part after.
func (v Verb) Noun() string  { n, _ := split(v.Name); return n }
func (v Verb) Short() string { _, s := split(v.Name); return s }

func split(name string) (string, string) {
	for i := 0; i < len(name); i++ {
		if name[i] == '.' {
			return name[:i], name[i+1:]
		}
	}
	return name, ""
}

// registry is declared in registry.go, in API.md's order.
var registry = declared()

// All is every verb, in API.md's order. Callers must not modify the schemas.
func All() []Verb { return registry }

// Get finds a verb by name.
func Get(name string) (Verb, bool) {
	for _, v := range registry {
		if v.Name == name {
			return v, true
		}
	}
	return Verb{}, false
}

// Names is every verb's name, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for _, v := range registry {
		out = append(out, v.Name)
	}
	sort.Strings(out)
	return out
}
