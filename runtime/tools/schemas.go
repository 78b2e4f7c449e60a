package tools

import (
	"encoding/json"
	"fmt"
	"slices"
)

// The fixed tools' names inside their grants.
const (
	SkillTool   = "read"
	AskUserTool = "ask"
	SessionTool = "rename"
)

// Limits of the fixed tools' inputs, as the seeds state them. The schema
// states them to the model; the executors must enforce them again, in bytes
// where the seed says MiB (JSON Schema counts characters).
const (
	MaxCommandLength   = 8192
	MaxStdinBytes      = 1 << 20
	MaxTimeoutSecs     = 3600
	DefaultTimeoutSecs = 300
	MaxTitleLength     = 200
)

// execSchema is what a model sees for sandbox exec; its wording follows the
// sandbox seed's argument table.
var execSchema = json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "maxLength": %d,
      "description": "The shell command to run through sh -c, so pipes and && work. Up to 8,192 characters. Required unless job or kill_job is given."},
    "cwd": {"type": "string", "default": "/workspace",
      "description": "Where to run it. /workspace by default."},
    "env": {"type": "object", "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
      "additionalProperties": {"type": "string"},
      "description": "Environment variables for the command, name to value."},
    "stdin": {"type": "string", "maxLength": %d,
      "description": "Text to feed the command on standard input, up to 1 MiB."},
    "timeout_secs": {"type": "integer", "minimum": 1, "maximum": %d, "default": %d,
      "description": "Seconds before the command is stopped: 300 by default, up to 3,600. A background job runs until it ends, is killed or the sandbox suspends unless this is given."},
    "background": {"type": "boolean", "default": false,
      "description": "Start the command as a background job (a dev server, a watcher) and answer at once with its job id and what it printed in its first second. At most 4 run at once per sandbox; they end when the sandbox suspends or stops, and do not keep it awake."},
    "job": {"type": "string",
      "description": "Instead of command: a background job's id, to read its status (running, exited, killed), exit code and output (the first and last 32 KiB of each stream)."},
    "kill_job": {"type": "string",
      "description": "Instead of command: a background job's id, to end it and everything it started."}
  },
  "additionalProperties": false
}`, MaxCommandLength, MaxStdinBytes, MaxTimeoutSecs, DefaultTimeoutSecs))

var readSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1,
      "description": "A file's path inside the skill, as the listing gives it. Leave it out to list the skill's files."}
  },
  "additionalProperties": false
}`)

var askSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "question": {"type": "string", "minLength": 1,
      "description": "The question, as the user will read it."},
    "choices": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1, "uniqueItems": true,
      "description": "Answers to offer the user. Leave it out to let them answer in their own words."}
  },
  "required": ["question"],
  "additionalProperties": false
}`)

var renameSchema = json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "title": {"type": "string", "minLength": 1, "maxLength": %d,
      "description": "The session's new title, 1 to 200 characters, saying what the session is about."}
  },
  "required": ["title"],
  "additionalProperties": false
}`, MaxTitleLength))

// SandboxTools is the one tool a sandbox grant offers, exec, described for
// that grant: its name, release and whether it reaches the Internet. Like
// SkillTools and BuiltinTools it returns fresh schema bytes on every call,
// so a caller may keep or change them.
func SandboxTools(g Sandbox) []ToolDef {
	network := networkSentence(g.Network) // sandbox_network.go
	return []ToolDef{{
		Name: SandboxTool,
		Description: fmt.Sprintf("Run one shell command in the sandbox %s, a Linux machine of this session's own "+
			"(platform release %s). Returns the exit code and up to 64 KiB each of stdout and stderr. "+
			"Only /workspace is kept between commands; the session's skills are unpacked at /skills/<name>. %s",
			g.Name, g.Environment.Release, network),
		InputSchema: slices.Clone(execSchema),
	}}
}

// SkillTools is the one tool a skill grant offers, read.
func SkillTools(g Skill) []ToolDef {
	return []ToolDef{{
		Name: SkillTool,
		Description: fmt.Sprintf("Read the skill %s. Without a path, lists the skill's files; "+
			"with a path, returns that file.", g.Skill),
		InputSchema: slices.Clone(readSchema),
	}}
}

// BuiltinTools is the tool a built-in grant offers: ask for ask_user, rename
// for session; nil for any other name.
func BuiltinTools(name string) []ToolDef {
	switch name {
	case BuiltinAskUser:
		return []ToolDef{{Name: AskUserTool, InputSchema: slices.Clone(askSchema),
			Description: "Ask the user a question in a form and wait for the answer. " +
				"Give choices to let the user pick one."}}
	case BuiltinSession:
		return []ToolDef{{Name: SessionTool, InputSchema: slices.Clone(renameSchema),
			Description: "Rename this session: give it a short title that says what it is about."}}
	}
	return nil
}
