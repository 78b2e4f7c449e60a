package tools

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// The fixed tools' schemas are what models see and what the runtime checks
// input against: these cases are inputs a model would send.
func TestFixedToolSchemas(t *testing.T) {
	exec := SandboxTools(Sandbox{Name: "b"})[0]
	read := SkillTools(Skill{Name: "s", Skill: "s"})[0]
	ask := BuiltinTools(BuiltinAskUser)[0]
	rename := BuiltinTools(BuiltinSession)[0]
	tests := []struct {
		name  string
		tool  ToolDef
		input string
		ok    bool
	}{
		{"exec: command only", exec, `{"command": "go test ./..."}`, true},
		{"exec: every argument", exec, `{"command": "cat", "cwd": "/workspace/app", "env": {"CI": "1", "_X": ""}, "stdin": "hi", "timeout_secs": 3600}`, true},
		// command is not required by the schema since job and kill_job
		// stand instead of it; the executor refuses an exec with neither.
		{"exec: background job", exec, `{"command": "python3 -m http.server", "background": true}`, true},
		{"exec: read a job", exec, `{"job": "job_0a1b2c3d"}`, true},
		{"exec: kill a job", exec, `{"kill_job": "job_0a1b2c3d"}`, true},
		{"exec: background not a boolean", exec, `{"command": "ls", "background": "yes"}`, false},
		{"exec: empty command", exec, `{"command": ""}`, false},
		{"exec: 8,192-character command", exec, `{"command": "` + strings.Repeat("x", 8192) + `"}`, true},
		{"exec: 8,193-character command", exec, `{"command": "` + strings.Repeat("x", 8193) + `"}`, false},
		{"exec: stdin over 1 MiB", exec, `{"command": "wc", "stdin": "` + strings.Repeat("x", 1<<20+1) + `"}`, false},
		{"exec: timeout 0", exec, `{"command": "true", "timeout_secs": 0}`, false},
		{"exec: timeout 3601", exec, `{"command": "true", "timeout_secs": 3601}`, false},
		{"exec: timeout 1.5", exec, `{"command": "true", "timeout_secs": 1.5}`, false},
		{"exec: env value a number", exec, `{"command": "env", "env": {"N": 1}}`, false},
		{"exec: env name with =", exec, `{"command": "env", "env": {"A=B": "x"}}`, false},
		{"exec: unknown argument", exec, `{"command": "ls", "shell": "bash"}`, false},
		{"read: list files", read, `{}`, true},
		{"read: one file", read, `{"path": "SKILL.md"}`, true},
		{"read: empty path", read, `{"path": ""}`, false},
		{"ask: question", ask, `{"question": "Refund the full amount?"}`, true},
		{"ask: with choices", ask, `{"question": "Which?", "choices": ["full", "half"]}`, true},
		{"ask: no question", ask, `{"choices": ["yes"]}`, false},
		{"ask: choice not a string", ask, `{"question": "Which?", "choices": [1]}`, false},
		{"ask: same choice twice", ask, `{"question": "Which?", "choices": ["a", "a"]}`, false},
		{"rename: title", rename, `{"title": "Refund for order 17"}`, true},
		{"rename: 200 characters", rename, `{"title": "` + strings.Repeat("é", 200) + `"}`, true},
		{"rename: 201 characters", rename, `{"title": "` + strings.Repeat("t", 201) + `"}`, false},
		{"rename: empty title", rename, `{"title": ""}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var schema jsonschema.Schema
			if err := json.Unmarshal(tt.tool.InputSchema, &schema); err != nil {
				t.Fatalf("schema of %s is not a JSON Schema: %v", tt.tool.Name, err)
			}
			resolved, err := schema.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
			if err != nil {
				t.Fatalf("schema of %s does not resolve: %v", tt.tool.Name, err)
			}
			var input any
			if err := json.Unmarshal([]byte(tt.input), &input); err != nil {
				t.Fatal(err)
			}
			err = resolved.Validate(input)
			if tt.ok && err != nil {
				t.Errorf("input refused: %v", err)
			}
			if !tt.ok && err == nil {
				t.Errorf("input accepted")
			}
		})
	}
}

func TestFixedToolsDescribed(t *testing.T) {
	tools := append(SandboxTools(Sandbox{Name: "b"}), SkillTools(Skill{Name: "s"})...)
	tools = append(tools, BuiltinTools(BuiltinAskUser)...)
	tools = append(tools, BuiltinTools(BuiltinSession)...)
	want := []string{SandboxTool, SkillTool, AskUserTool, SessionTool}
	for i, tl := range tools {
		if tl.Name != want[i] || tl.Description == "" {
			t.Errorf("tool %d = %q with description %q, want %q described", i, tl.Name, tl.Description, want[i])
		}
	}
	if BuiltinTools("shell") != nil {
		t.Error("an unknown built-in offers tools")
	}
}
