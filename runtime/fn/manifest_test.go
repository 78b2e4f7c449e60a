package fn

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseManifest(t *testing.T) {
	tool := `{"name":"run","description":"Runs.","input_schema":{"type":"object"}}`
	with := func(fields string) string {
		return `{"name":"pkg","version":"1.0.0","tools":[` + tool + `]` + fields + `}`
	}
	tests := []struct {
		name  string
		json  string
		field string // empty: must parse
		want  string
	}{
		{"minimal", with(""), "", ""},
		{"limits within caps", with(`,"limits":{"timeout_ms":60000,"memory_mb":512}`), "", ""},
		{"prerelease version", `{"name":"pkg","version":"2.0.0-rc.1","tools":[` + tool + `]}`, "", ""},
		{"upper-case name", `{"name":"Pkg","version":"1.0.0","tools":[` + tool + `]}`, "name", "1-32 characters of a-z, 0-9 and -"},
		{"long name", `{"name":"` + strings.Repeat("a", 33) + `","version":"1.0.0","tools":[` + tool + `]}`, "name", "1-32"},
		{"empty name", `{"name":"","version":"1.0.0","tools":[` + tool + `]}`, "name", "1-32"},
		{"short version", `{"name":"pkg","version":"1.0","tools":[` + tool + `]}`, "version", "MAJOR.MINOR.PATCH"},
		{"v-prefixed version", `{"name":"pkg","version":"v1.0.0","tools":[` + tool + `]}`, "version", "MAJOR.MINOR.PATCH"},
		{"no tools", `{"name":"pkg","version":"1.0.0","tools":[]}`, "tools", "1-64 tools"},
		{"bad tool name", `{"name":"pkg","version":"1.0.0","tools":[{"name":"Run!","description":"d","input_schema":{"type":"object"}}]}`,
			"tools[0].name", "a-z, 0-9, _ and -"},
		{"double underscore", `{"name":"pkg","version":"1.0.0","tools":[{"name":"a__b","description":"d","input_schema":{"type":"object"}}]}`,
			"tools[0].name", "without __"},
		{"duplicate tool", `{"name":"pkg","version":"1.0.0","tools":[` + tool + `,` + tool + `]}`, "tools[1].name", "listed twice"},
		{"no description", `{"name":"pkg","version":"1.0.0","tools":[{"name":"run","input_schema":{"type":"object"}}]}`,
			"tools[0].description", "1-4096 characters"},
		{"schema not an object", `{"name":"pkg","version":"1.0.0","tools":[{"name":"run","description":"d","input_schema":[1]}]}`,
			"tools[0].input_schema", "must be a JSON object"},
		{"schema of a string", `{"name":"pkg","version":"1.0.0","tools":[{"name":"run","description":"d","input_schema":{"type":"string"}}]}`,
			"tools[0].input_schema", `"type": "object"`},
		{"schema missing", `{"name":"pkg","version":"1.0.0","tools":[{"name":"run","description":"d"}]}`,
			"tools[0].input_schema", "must be a JSON object"},
		{"broken schema", `{"name":"pkg","version":"1.0.0","tools":[{"name":"run","description":"d","input_schema":{"type":"object","properties":{"a":{"type":"string","pattern":"(unclosed"}}}}]}`,
			"tools[0].input_schema", "JSON Schema"},
		{"timeout over cap", with(`,"limits":{"timeout_ms":60001}`), "limits.timeout_ms", "must be 1-60000 (the server's cap)"},
		{"negative memory", with(`,"limits":{"memory_mb":-1}`), "limits.memory_mb", "must be 1-512"},
		{"memory over cap", with(`,"limits":{"memory_mb":513}`), "limits.memory_mb", "must be 1-512"},
		{"unknown field", with(`,"env":{"A":"b"}`), "manifest", `unknown field "env"`},
		{"not JSON", `name: pkg`, "manifest", "not a valid manifest"},
		{"NUL in the description", with(`,"description":"a\u0000b"`), "description", "NUL"},
		{"NUL in a tool's description", `{"name":"pkg","version":"1.0.0","tools":[{"name":"run","description":"a\u0000","input_schema":{"type":"object"}}]}`,
			"tools[0].description", "NUL"},
		{"schema that refers to itself", `{"name":"pkg","version":"1.0.0","tools":[{"name":"run","description":"d","input_schema":{"type":"object","$ref":"#"}}]}`,
			"tools[0].input_schema", "refers back to the top"},
		{"broken UTF-8", with(`,"description":"a` + "\xff" + `b"`), "manifest", "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseManifest([]byte(tt.json), DefaultCaps())
			if tt.field == "" {
				if err != nil {
					t.Fatalf("ParseManifest = %v, want success", err)
				}
				if m.Name != "pkg" || len(m.Tools) == 0 {
					t.Fatalf("parsed %+v", m)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field || !strings.Contains(fe.Detail, tt.want) {
				t.Fatalf("ParseManifest = %v, want field %s saying %q", err, tt.field, tt.want)
			}
		})
	}
}

func TestParseManifestHonoursServerCaps(t *testing.T) {
	caps := DefaultCaps()
	caps.MaxMemoryMB = 64
	_, err := ParseManifest([]byte(`{"name":"p","version":"1.0.0","tools":[{"name":"t","description":"d","input_schema":{"type":"object"}}],"limits":{"memory_mb":128}}`), caps)
	if err == nil || !strings.Contains(err.Error(), "limits.memory_mb: must be 1-64") {
		t.Fatalf("ParseManifest = %v, want the server's 64 MiB cap named", err)
	}
}

func TestManifestMatches(t *testing.T) {
	m := testManifest("github", "1.0.0")
	tests := []struct {
		name, version, field string
	}{
		{"github", "1.0.0", ""},
		{"gitlab", "1.0.0", "name"},
		{"github", "1.0.1", "version"},
	}
	for _, tt := range tests {
		t.Run(tt.name+"@"+tt.version, func(t *testing.T) {
			err := m.Matches(tt.name, tt.version)
			var fe *FieldError
			if tt.field == "" && err != nil || tt.field != "" && (!errors.As(err, &fe) || fe.Field != tt.field) {
				t.Fatalf("Matches = %v, want field %q", err, tt.field)
			}
		})
	}
}

// The shipped manifests must parse, so a typo fails here and not at install.
func TestShippedManifestsParse(t *testing.T) {
	dirs, err := filepath.Glob("packages/*/manifest.json")
	if err != nil || len(dirs) < 4 {
		t.Fatalf("found %d manifests (%v), want at least 4", len(dirs), err)
	}
	for _, path := range dirs {
		t.Run(filepath.Base(filepath.Dir(path)), func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			m, err := ParseManifest(raw, DefaultCaps())
			if err != nil {
				t.Fatal(err)
			}
			if m.Name != filepath.Base(filepath.Dir(path)) {
				t.Fatalf("manifest names %q in folder %s", m.Name, filepath.Dir(path))
			}
		})
	}
}
