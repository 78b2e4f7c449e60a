package fn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"golang.org/x/mod/semver"

	"github.com/subako/subako/runtime/tools"
)

// Manifest is a package's manifest.json.
type Manifest struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
	// Engine is "wasm" (the default when absent) or "native": a command in
	// a fresh bubblewrap sandbox per call (native.go).
	Engine string `json:"engine,omitempty"`
	Tools  []Tool `json:"tools"`
	Limits Limits `json:"limits"`
}

// Tool is one tool a package offers; it reaches the model as
// fn__<grant>__<name>.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Limits are what a package asks for; zero means the server's default.
type Limits struct {
	TimeoutMS int `json:"timeout_ms,omitempty"`
	MemoryMB  int `json:"memory_mb,omitempty"`
}

// Limits on the manifest's own fields.
const (
	maxNameLen        = 32
	maxVersionLen     = 64
	maxDescriptionLen = 1024
	maxToolDescLen    = 4096
	maxTools          = 64
	maxSchemaBytes    = 64 << 10
)

var (
	namePattern     = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)
	toolNamePattern = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)
)

// ParseManifest decodes and checks manifest.json against the server's caps.
// Unknown fields are refused; every error is a *FieldError naming the field.
func ParseManifest(data []byte, caps Caps) (Manifest, error) {
	caps = caps.orDefault()
	if len(data) > caps.MaxManifestBytes {
		return Manifest{}, fieldErr("manifest", "is %d bytes; the limit is %d", len(data), caps.MaxManifestBytes)
	}
	// A multipart upload reaches here unchecked: encoding/json would mend
	// broken UTF-8 into U+FFFD without a word, and PostgreSQL refuses a NUL
	// in the description's column (a 500 that loses the install's Action).
	if !utf8.Valid(data) {
		return Manifest{}, fieldErr("manifest", "is not valid UTF-8")
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, fieldErr("manifest", "not a valid manifest: %v", err)
	}
	if err := m.Check(caps); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// Check validates a manifest already decoded, e.g. one read back from a store.
func (m Manifest) Check(caps Caps) error {
	caps = caps.orDefault()
	if !namePattern.MatchString(m.Name) {
		return fieldErr("name", "must be 1-%d characters of a-z, 0-9 and -", maxNameLen)
	}
	if err := checkVersion(m.Version); err != nil {
		return err
	}
	if why := tools.BadText(m.Description); why != "" {
		return fieldErr("description", "%s", why)
	}
	if len(m.Description) > maxDescriptionLen {
		return fieldErr("description", "is %d characters; the limit is %d", len(m.Description), maxDescriptionLen)
	}
	if m.Engine != "" && m.Engine != EngineWasm && m.Engine != EngineNative {
		return fieldErr("engine", "must be %q (the default) or %q", EngineWasm, EngineNative)
	}
	if err := checkTools(m.Tools); err != nil {
		return err
	}
	return m.Limits.check(caps)
}

func checkVersion(v string) error {
	core, _, _ := strings.Cut(strings.SplitN(v, "+", 2)[0], "-")
	if len(v) > maxVersionLen || !semver.IsValid("v"+v) || strings.Count(core, ".") != 2 {
		return fieldErr("version", "must be a semantic version MAJOR.MINOR.PATCH (e.g. 1.0.0), at most %d characters", maxVersionLen)
	}
	return nil
}

func checkTools(list []Tool) error {
	if len(list) == 0 || len(list) > maxTools {
		return fieldErr("tools", "must list 1-%d tools; it lists %d", maxTools, len(list))
	}
	seen := map[string]bool{}
	for i, t := range list {
		path := fmt.Sprintf("tools[%d]", i)
		if !toolNamePattern.MatchString(t.Name) || strings.Contains(t.Name, "__") {
			return fieldErr(path+".name", "must be 1-32 characters of a-z, 0-9, _ and -, without __")
		}
		if seen[t.Name] {
			return fieldErr(path+".name", "%q is listed twice", t.Name)
		}
		seen[t.Name] = true
		if why := tools.BadText(t.Description); why != "" {
			return fieldErr(path+".description", "%s", why)
		}
		if t.Description == "" || len(t.Description) > maxToolDescLen {
			return fieldErr(path+".description", "must be 1-%d characters", maxToolDescLen)
		}
		if _, err := resolveSchema(t.InputSchema); err != nil {
			return fieldErr(path+".input_schema", "%v", err)
		}
	}
	return nil
}

// resolveSchema checks that raw is a JSON Schema for an object, which is what
// MCP requires of a tool's input, and prepares it for validating calls.
func resolveSchema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	if len(raw) > maxSchemaBytes {
		return nil, fmt.Errorf("is %d bytes; the limit is %d", len(raw), maxSchemaBytes)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil || probe == nil {
		return nil, fmt.Errorf("must be a JSON object")
	}
	var typ string
	if err := json.Unmarshal(probe["type"], &typ); err != nil || typ != "object" {
		return nil, fmt.Errorf(`must have "type": "object"`)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %w", err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("not a usable JSON Schema: %w", err)
	}
	if why := tools.SchemaLoop(raw); why != "" {
		return nil, fmt.Errorf("not a usable JSON Schema: %s", why)
	}
	return r, nil
}

func (l Limits) check(caps Caps) error {
	maxMS := int(caps.MaxTimeout / time.Millisecond)
	if l.TimeoutMS < 0 || l.TimeoutMS > maxMS {
		return fieldErr("limits.timeout_ms", "must be 1-%d (the server's cap); 0 or absent means %d",
			maxMS, caps.DefaultTimeout.Milliseconds())
	}
	if l.MemoryMB < 0 || l.MemoryMB > caps.MaxMemoryMB {
		return fieldErr("limits.memory_mb", "must be 1-%d (the server's cap); 0 or absent means %d",
			caps.MaxMemoryMB, caps.DefaultMemoryMB)
	}
	return nil
}

// Matches checks that the manifest is the package the caller asked to install.
func (m Manifest) Matches(name, version string) error {
	if m.Name != name {
		return fieldErr("name", "the manifest names %q, but %q was requested", m.Name, name)
	}
	if m.Version != version {
		return fieldErr("version", "the manifest says %q, but %q was requested", m.Version, version)
	}
	return nil
}

// Tool returns the named tool.
func (m Manifest) Tool(name string) (Tool, bool) {
	for _, t := range m.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}
