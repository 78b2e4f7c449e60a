package verbs

import "github.com/google/jsonschema-go/jsonschema"

// Small builders for hand-written schemas: each call returns a fresh schema,
// so finish may add path parameters to an Input without touching another's.

type field struct {
	name     string
	s        *jsonschema.Schema
	required bool
}

func prop(name string, s *jsonschema.Schema) field { return field{name, s, false} }
func req(name string, s *jsonschema.Schema) field  { return field{name, s, true} }

// obj is an object of fields; other fields are refused by the API
// (unknown_field), so the schema says so too.
func obj(fs ...field) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	for _, f := range fs {
		s.Properties[f.name] = f.s
		if f.required {
			s.Required = append(s.Required, f.name)
		}
	}
	return s
}

// out is an answer's object: the fields named, and possibly more (answers
// grow; a client must not break on a new field).
func out(doc string, fs ...field) *jsonschema.Schema {
	s := obj(fs...)
	s.Description = doc
	return s
}

func str(doc string) *jsonschema.Schema { return &jsonschema.Schema{Type: "string", Description: doc} }
func integer(doc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "integer", Description: doc}
}
func number(doc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "number", Description: doc}
}
func boolean(doc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "boolean", Description: doc}
}
func nullable(s *jsonschema.Schema) *jsonschema.Schema {
	c := *s
	c.Types = []string{s.Type, "null"}
	c.Type = ""
	return &c
}

// bytes is a body sent as is (BodyRaw): in JSON, its base64 or text.
func bytes(doc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: doc, ContentMediaType: "application/octet-stream"}
}

func enum(doc string, vals ...string) *jsonschema.Schema {
	s := str(doc)
	for _, v := range vals {
		s.Enum = append(s.Enum, v)
	}
	return s
}

func arr(items *jsonschema.Schema) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Items: items}
}

// list is a list verb's answer: the array (a request naming cursor gets
// {items, next_cursor, prev_cursor} instead, docs/api.md "Lists by cursor").
func list(items *jsonschema.Schema) *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{arr(items), obj(
		req("items", arr(items.CloneSchemas())), req("next_cursor", str("where the next page starts; empty on the last")), prop("prev_cursor", str("")))}}
}

// anyObj is an object whose fields this registry does not spell out.
func anyObj(doc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Description: doc}
}

// anyValue is any JSON value.
func anyValue(doc string) *jsonschema.Schema { return &jsonschema.Schema{Description: doc} }

func anyOf(doc string, ss ...*jsonschema.Schema) *jsonschema.Schema {
	return &jsonschema.Schema{Description: doc, AnyOf: ss}
}

// pageIn is a list verb's input: its filters and the cursor.
func pageIn(fs ...field) *jsonschema.Schema {
	return obj(append(fs,
		prop("cursor", str("where to continue, exactly as a previous answer's next_cursor gave it; empty for the first page")),
		prop("limit", &jsonschema.Schema{Type: "integer", Description: "rows a page, 1 to 500", Minimum: ptr(1.0), Maximum: ptr(500.0)}))...)
}

func decisionIn() *jsonschema.Schema {
	return obj(prop("reason", str("the approver's reason, shown to the agent")),
		prop("scope", enum("call (default) or session: allow this tool for the rest of the session", "call", "session")))
}

func agentIn(creating bool) *jsonschema.Schema {
	s := obj(prop("name", str("1-100 characters")), prop("description", str("")))
	if creating {
		s.Required = []string{"name"}
	}
	return s
}

func roleIn() *jsonschema.Schema {
	return obj(prop("name", str("")), prop("description", str("")),
		prop("decay_days", &jsonschema.Schema{Type: "integer", Description: "a seat's permission unused this many days is removed (0: the server's default)", Minimum: ptr(0.0), Maximum: ptr(3650.0)}),
		prop("permissions", arr(obj(req("verb", str("Noun.verb or Noun.*")), prop("scope", str("*, tenant:<id>, agent:<id>, vault:<id> or session:<id>")),
			prop("limit", anyObj("{count, period, field, values, spend_sc}"))))))
}

var (
	timeField = func(name string) field { return prop(name, str("RFC 3339 time")) }
	// nullTime is a time a record may not have yet (answered null).
	nullTime = func(name string) field { return prop(name, nullable(str("RFC 3339 time, null until it happens"))) }

	agentOut = out("an agent", req("id", str("")), req("name", str("")), prop("description", str("")),
		timeField("created_at"), prop("published_version", str("the id of the agent's newest published version")))
	versionOut = out("a version", req("id", str("")), req("agent", str("")), req("number", integer("")),
		req("state", enum("", "draft", "published")), prop("config", anyObj("the agent config")), timeField("created_at"), nullTime("published_at"))
	toolOut = out("a version's tool", req("name", str("")), prop("kind", str("")), prop("grant", str("")), prop("tool", str("")),
		prop("policy", enum("", "allow", "ask", "deny")), prop("offered", boolean("")))
	offeredToolOut = out("an offered tool", req("name", str("")), prop("description", str("")), prop("input_schema", anyObj("JSON Schema")),
		prop("policy", enum("", "allow", "ask", "deny")))
	skillOut    = out("a skill", req("id", str("")), req("name", str("")), prop("description", str("")), prop("files", arr(anyObj("{path, size, mode}"))))
	functionOut = out("a function package", req("id", str("")), req("name", str("")), req("version", str("")), prop("description", str("")),
		prop("engine", enum("", "wasm", "native")), prop("tools", arr(anyObj("a tool"))), prop("sha256", str("")), timeField("created_at"))
	credentialOut = out("a credential, never its secret", req("id", str("")), prop("vault", str("")), req("prefix", str("")), req("type", str("")),
		prop("header_name", str("")), prop("username", str("")), prop("secret_set", boolean("")), timeField("created_at"), timeField("updated_at"))
	vaultOut = out("a vault", req("id", str("")), req("name", str("")), prop("description", str("")), prop("tenant", str("")),
		prop("credentials", arr(credentialOut)))
	sessionOut = out("a session", req("id", str("")), prop("agent", str("")), prop("version", str("")), prop("title", str("")),
		prop("state", str("")), prop("tenant", str("")), prop("token", str("the session's token: only in Session.create's answer")),
		timeField("created_at"), nullTime("ended_at"))
	toolCallOut = out("a tool call", req("id", str("")), prop("session", str("")), prop("tool", str("")),
		prop("status", str("succeeded, failed, refused, awaiting_approval, running, cancelled")), prop("verdict", enum("", "allow", "ask", "deny")),
		prop("reason", str("")), prop("output", anyValue("")), prop("error", str("")), prop("model", str("")), prop("version", str("")),
		prop("by", str("")), prop("approval", str("")), nullTime("started_at"), nullTime("finished_at"), prop("duration_ms", integer("")))
	sessionRuleOut = out("a session rule", req("id", str("")), prop("session", str("")), prop("tool", str("")), prop("policy", str("")),
		prop("created_by", str("")), timeField("created_at"))
	approvalOut = out("an approval", req("id", str("")), prop("state", str("")), prop("tool", str("")), prop("session", str("")),
		prop("agent", str("")), prop("input", anyValue("")), prop("reason", str("")), prop("decided_by", str("")), timeField("created_at"), nullTime("decided_at"))
	sandboxOut = out("a sandbox", req("id", str("")), prop("session", str("")), prop("grant", str("")),
		prop("state", enum("", "running", "suspended", "retired")), prop("machine_seconds", number("")), prop("credits", number("")),
		prop("archive", nullable(anyObj("{bytes, created_at}"))), prop("archive_error", str("")), prop("archive_note", str("")))
	userOut   = out("a person", req("id", str("")), req("email", str("")), prop("access", str("")), prop("tenant", str("")))
	tenantOut = out("a tenant", req("id", str("")), req("name", str("")), prop("sessions", integer("")), prop("vaults", integer("")), prop("people", integer("")))
	roleOut   = out("a role", req("id", str("")), req("name", str("")), prop("description", str("")), prop("builtin", boolean("")),
		prop("permissions", arr(anyObj("{verb, scope, limit}"))))
	seatOut  = out("a seat", req("id", str("")), prop("user", str("")), prop("role", str("")))
	tokenOut = out("an API token", req("id", str("")), prop("name", str("")), prop("token", str("the token: only in Token.create's answer")),
		prop("narrowed", boolean("")), prop("permissions", arr(str(""))), prop("parent", str("")), timeField("expires_at"))
	actionOut = out("an Action", req("id", str("")), req("verb", str("Noun.verb")), prop("by", str("")), prop("verdict", str("allowed, refused or failed")),
		prop("reason", str("")), prop("permission", str("")), prop("missing_permission", str("")), prop("client_info", str("who called: console, subako do, API (…), MCP …, code mode")),
		prop("model", str("")), prop("version", str("")), prop("parent_id", str("the code-mode program's Action this call ran inside")),
		prop("program", str("a code-mode program's text (Program.run)")), timeField("created_at"))
)
