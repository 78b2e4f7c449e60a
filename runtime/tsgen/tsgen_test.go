package tsgen

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

func schema(t testing.TB, src string) *jsonschema.Schema {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(src), &s); err != nil {
		t.Fatalf("schema %s: %v", src, err)
	}
	return &s
}

var typeCases = []struct {
	name, schema, want string
}{
	{"nil is unknown", ``, "unknown"},
	{"empty is unknown", `{}`, "unknown"},
	{"true", `true`, "unknown"},
	{"false", `false`, "never"},
	{"string", `{"type":"string"}`, "string"},
	{"integer is number", `{"type":"integer"}`, "number"},
	{"boolean", `{"type":"boolean"}`, "boolean"},
	{"nullable by types", `{"type":["string","null"]}`, "string | null"},
	{"nullable by OpenAPI 3.0", `{"type":"string","nullable":true}`, "string | null"},
	{"enum", `{"type":"string","enum":["pending","approved",3,null,true]}`, `"pending" | "approved" | 3 | null | true`},
	{"const", `{"const":"code"}`, `"code"`},
	{"const object has no literal", `{"const":{"a":1}}`, "unknown"},
	{"quotes in an enum", `{"enum":["a\"b","*/"]}`, `"a\"b" | "*/"`},
	{"array", `{"type":"array","items":{"type":"string"}}`, "string[]"},
	{"array of a union", `{"type":"array","items":{"type":["string","number"]}}`, "(string | number)[]"},
	{"array without items", `{"type":"array"}`, "unknown[]"},
	{"tuple", `{"type":"array","prefixItems":[{"type":"string"},{"type":"number"}],"items":false}`, "[string, number]"},
	{"tuple with a rest", `{"prefixItems":[{"type":"string"}]}`, "[string, ...unknown[]]"},
	{"object", `{"type":"object","properties":{"name":{"type":"string","description":"The agent's name."},"limit":{"type":"integer"}},"required":["name"]}`,
		"{\n  limit?: number;\n  /** The agent's name. */\n  name: string;\n}"},
	{"properties sorted without an order", `{"type":"object","properties":{"b":{},"a":{}},"required":["a","b"]}`, "{\n  a: unknown;\n  b: unknown;\n}"},
	{"any object", `{"type":"object"}`, "{\n  [key: string]: unknown;\n}"},
	{"closed empty object", `{"type":"object","additionalProperties":false}`, "{}"},
	{"map", `{"type":"object","additionalProperties":{"type":"integer"}}`, "{\n  [key: string]: number;\n}"},
	{"properties and a map", `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{"type":"integer"}}`,
		"{\n  a?: string;\n  [key: string]: unknown;\n}"},
	{"names that are not identifiers", `{"type":"object","properties":{"my-server":{},"2fa":{},"":{},"ok_1":{},"$x":{}},"required":["my-server"]}`,
		"{\n  \"\"?: unknown;\n  $x?: unknown;\n  \"2fa\"?: unknown;\n  \"my-server\": unknown;\n  ok_1?: unknown;\n}"},
	{"required without a property", `{"type":"object","required":["id"]}`, "{\n  id: unknown;\n}"},
	{"oneOf", `{"oneOf":[{"type":"string"},{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]}]}`,
		"string | {\n  x: number;\n}"},
	{"array of objects with unions inside", `{"type":"array","items":{"type":"object","properties":{"s":{"enum":["a","b"],"description":"\" | {"}},"required":["s"]}}`,
		"{\n  /** \" | { */\n  s: \"a\" | \"b\";\n}[]"},
	{"array of a oneOf", `{"type":"array","items":{"oneOf":[{"type":"string"},{"type":"null"}]}}`, "(string | null)[]"},
	{"anyOf beside a type", `{"type":"object","properties":{"a":{"type":"string"}},"anyOf":[{"required":["a"]},{"required":["b"]}]}`,
		"({\n  a?: string;\n}) & ({\n  a: unknown;\n} | {\n  b: unknown;\n})"},
	{"allOf", `{"allOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"object","properties":{"b":{"type":"string"}}}]}`,
		"({\n  a?: string;\n}) & ({\n  b?: string;\n})"},
	{"$ref to $defs", `{"$defs":{"Id":{"type":"string"}},"type":"object","properties":{"id":{"$ref":"#/$defs/Id"}},"required":["id"]}`,
		"{\n  id: string;\n}"},
	{"$ref to definitions", `{"definitions":{"N":{"type":"integer"}},"type":"array","items":{"$ref":"#/definitions/N"}}`, "number[]"},
	{"recursive $ref", `{"$defs":{"T":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/T"}}}}},"$ref":"#/$defs/T"}`,
		"{\n  kids?: unknown[];\n}"},
	{"unknown $ref", `{"$ref":"https://example.com/x.json"}`, "unknown"},
	{"unknown type", `{"type":"decimal"}`, "unknown"},
	{"doc comment cannot end early", `{"type":"object","properties":{"a":{"description":"ends */ here\nsecond line"}}}`,
		"{\n  /**\n   * ends *\\/ here\n   * second line\n   */\n  a?: unknown;\n}"},
}

func TestType(t *testing.T) {
	for _, c := range typeCases {
		t.Run(c.name, func(t *testing.T) {
			var s *jsonschema.Schema
			if c.schema != "" {
				s = schema(t, c.schema)
			}
			got := Type(s)
			if got != c.want {
				t.Errorf("Type(%s)\n got: %s\nwant: %s", c.schema, got, c.want)
			}
			if err := parseType(got); err != nil {
				t.Errorf("output does not parse: %v\n%s", err, got)
			}
		})
	}
}

func TestTypeIsBounded(t *testing.T) {
	// Each definition refers to the next twice: expanded whole, 2^30 nodes.
	defs := map[string]any{}
	for i := range 30 {
		next := map[string]any{"$ref": "#/$defs/d" + string(rune('a'+i+1))}
		defs["d"+string(rune('a'+i))] = map[string]any{"type": "object", "properties": map[string]any{"l": next, "r": next}}
	}
	defs["d"+string(rune('a'+30))] = map[string]any{"type": "string"}
	src, _ := json.Marshal(map[string]any{"$defs": defs, "$ref": "#/$defs/da"})
	got := Type(schema(t, string(src)))
	if len(got) > 1<<20 {
		t.Fatalf("a fanning $ref chain wrote %d bytes", len(got))
	}
	if !strings.Contains(got, "unknown") {
		t.Errorf("past its bounds the type should read unknown:\n%.300s", got)
	}
	if err := parseType(got); err != nil {
		t.Fatal(err)
	}

	deep := `{"type":"string"}`
	for range 100 {
		deep = `{"type":"array","items":` + deep + `}`
	}
	got = Type(schema(t, deep))
	if !strings.HasPrefix(got, "unknown[]") && !strings.Contains(got, "unknown") {
		t.Errorf("100 nested arrays: %s", got)
	}
	if strings.Count(got, "[]") > MaxDepth+1 {
		t.Errorf("nests %d deep, more than MaxDepth %d", strings.Count(got, "[]"), MaxDepth)
	}
}

func TestClient(t *testing.T) {
	in := schema(t, `{"type":"object","properties":{"session":{"type":"string"}},"required":["session"]}`)
	out := schema(t, `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)
	got := Client([]Func{
		{Path: []string{"Session", "end"}, Doc: "End a session; its token stops working.", Input: in, Output: out},
		{Path: []string{"Session", "list"}, Doc: "List sessions.", Input: schema(t, `{"type":"object","properties":{"limit":{"type":"integer"}}}`), Output: out},
		{Path: []string{"Session", "end"}, Doc: "a second declaration is ignored"},
		{Path: []string{"sandbox", "my-box", "exec"}, Doc: "Run */ a command", Input: schema(t, `{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)},
		{Path: []string{"Archive", "upload"}, InputType: "{ sandbox: string; body: Blob | Uint8Array }", OutputType: "void"},
		{Path: nil, Doc: "no path: dropped"},
	})
	for _, want := range []string{
		"interface SubakoError extends Error {",
		"readonly missing_permission?: string;",
		"declare const $: {\n  Session: {\n    /** End a session; its token stops working. */\n    end(input: {\n      session: string;\n    }): Promise<{\n      id: string;\n    }>;\n",
		"    list(input?: {\n",
		"  sandbox: {\n    \"my-box\": {\n      /** Run *\\/ a command */\n      exec(input: {\n        command: string;\n      }): Promise<unknown>;\n",
		"    upload(input: { sandbox: string; body: Blob | Uint8Array }): Promise<void>;\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Client lacks\n%s\nin\n%s", want, got)
		}
	}
	if strings.Contains(got, "second declaration") || strings.Contains(got, "no path") {
		t.Errorf("Client kept a duplicate or a pathless func:\n%s", got)
	}
	// A path that is both a function and a namespace: a call signature.
	both := Client([]Func{{Path: []string{"a"}, Doc: "call a"}, {Path: []string{"a", "b"}}})
	if !strings.Contains(both, "  a: {\n    /** call a */\n    (input?: unknown): Promise<unknown>;\n    b(input?: unknown): Promise<unknown>;\n  };") {
		t.Errorf("function and namespace at once:\n%s", both)
	}
	for _, src := range []string{got, both} {
		if err := parseClient(src); err != nil {
			t.Errorf("Client output does not parse: %v\n%s", err, src)
		}
	}
}

// TestTypesCompileWithTsc checks the table's outputs, and Client's, with the
// real compiler, so the fuzz target's parser and tsc agree on what tsgen writes.
func TestTypesCompileWithTsc(t *testing.T) {
	tsc, err := filepath.Abs("../../web/testdata/typescript/node_modules/.bin/tsc")
	if err == nil {
		_, err = os.Stat(tsc)
	}
	if err != nil {
		t.Fatal("typescript is not installed: npm ci --prefix web/testdata/typescript (make deps does it)")
	}
	var b strings.Builder
	for i, c := range typeCases {
		var s *jsonschema.Schema
		if c.schema != "" {
			s = schema(t, c.schema)
		}
		b.WriteString("type T" + string(rune('A'+i/26)) + string(rune('A'+i%26)) + " = " + Type(s) + ";\n")
	}
	b.WriteString("export {};\n")
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	types := write("types.ts", b.String())
	client := write("client.d.ts", Client([]Func{
		{Path: []string{"Session", "end"}, Doc: "End */ it", Input: schema(t, `{"type":"object","properties":{"session":{"type":"string"}},"required":["session"]}`)},
		{Path: []string{"mcp", "my-server", "echo"}, Input: schema(t, typeCases[len(typeCases)-1].schema)},
		{Path: []string{"a"}}, {Path: []string{"a", "b"}},
	}))
	use := write("use.ts", `/// <reference path="./client.d.ts" />
async function main(): Promise<void> {
  await $.Session.end({ session: "ses_1" });
  await $.mcp["my-server"].echo({ a: 1 });
  await $.a(); await $.a.b();
  try { await $.Session.end({ session: "x" }); } catch (e) { const m: string | undefined = (e as SubakoError).missing_permission; void m; }
}
void main;
export {};
`)
	cmd := exec.Command(tsc, "--strict", "--noEmit", "--target", "es2022", "--lib", "es2022", types, client, use)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s\n--- types.ts\n%s", err, out, b.String())
	}
}

// FuzzType: whatever schema, Type never panics and writes a type that parses.
func FuzzType(f *testing.F) {
	for _, c := range typeCases {
		if c.schema != "" {
			f.Add(c.schema)
		}
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 4096 {
			return
		}
		var s jsonschema.Schema
		if json.Unmarshal([]byte(src), &s) != nil {
			return
		}
		got := Type(&s)
		if err := parseType(got); err != nil {
			t.Fatalf("Type(%s) = %s: %v", src, got, err)
		}
		c := Client([]Func{{Path: []string{"x", src}, Doc: src, Input: &s, Output: &s}})
		if err := parseClient(c); err != nil {
			t.Fatalf("Client over %s: %v\n%s", src, err, c)
		}
	})
}

// A schema made from a Go type keeps the fields' order, and omitempty ones
// are optional.
func TestTypeOfAGoType(t *testing.T) {
	type agent struct {
		Name        string   `json:"name" jsonschema:"1-100 characters"`
		Description string   `json:"description,omitempty"`
		Tags        []string `json:"tags,omitempty"`
	}
	s, err := jsonschema.For[agent](nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  /** 1-100 characters */\n  name: string;\n  description?: string;\n  tags?: string[] | null;\n}"
	if got := Type(s); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
