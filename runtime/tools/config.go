package tools

import "encoding/json"

// Kinds of tool source, as they appear first in a full tool name.
const (
	KindMCP     = "mcp"
	KindSkill   = "skill"
	KindSandbox = "sandbox"
	KindFn      = "fn"
	KindBuiltin = "builtin"
	KindClient  = "client"
)

// Policies a grant or a tool rule may carry.
const (
	PolicyAllow = "allow"
	PolicyAsk   = "ask"
	PolicyDeny  = "deny"
)

// Network types of a sandbox grant.
const (
	NetworkUnrestricted = "unrestricted"
	NetworkNone         = "none"
)

// Built-in grant names; the only two a config may grant.
const (
	BuiltinAskUser = "ask_user"
	BuiltinSession = "session"
)

// Config is an agent version's tools, field for field as API.md's "Agent
// config". Parse returns nil (never empty) slices and maps for absent or empty
// kinds, tool_rules and origins, so configs compare with reflect.DeepEqual.
type Config struct {
	MCPServers []MCPServer `json:"mcp_servers,omitempty"`
	Skills     []Skill     `json:"skills,omitempty"`
	Sandboxes  []Sandbox   `json:"sandboxes,omitempty"`
	Functions  []Function  `json:"functions,omitempty"`
	Builtins   []Builtin   `json:"builtins,omitempty"`
	// ToolsAs is how a session of the version offers its tools over MCP:
	// "" (written "flat" too: one MCP tool per offered tool) or "code"
	// (search, fetch and do over a typed $ of them: tools_as.go).
	ToolsAs string `json:"tools_as,omitempty"`
}

// MCPServer grants the tools of a remote MCP server reached at URL.
type MCPServer struct {
	Name          string              `json:"name"`
	URL           string              `json:"url"`
	DefaultPolicy string              `json:"default_policy"`
	ToolRules     map[string]ToolRule `json:"tool_rules,omitempty"`
	// NewTools is what a session does with a tool the server lists that the
	// version did not pin at publish: deny ("" too), ask or allow.
	NewTools string `json:"new_tools,omitempty"`
}

// Skill grants read access to one installed skill.
type Skill struct {
	Name  string `json:"name"`
	Skill string `json:"skill"`
}

// Sandbox grants a Linux machine of the session's own, with one tool: exec.
// Its JSON is the sandbox seed's own format.
type Sandbox struct {
	Name          string              `json:"name"`
	Environment   Environment         `json:"environment"`
	Network       Network             `json:"network"`
	DefaultPolicy string              `json:"default_policy"`
	ToolRules     map[string]ToolRule `json:"tool_rules,omitempty"`
	// Volume mounts the session's volume at /volume in the sandbox: "none"
	// (the default, also written ""), "read" (read-only) or "write". An
	// extension of the seed's format.
	Volume string `json:"volume,omitempty"`
	// Resources and IdleTimeoutSecs size the machine and its idle timer
	// (0: the server's defaults), within the server's ceilings. Extensions
	// of the seed's format.
	Resources       *Resources `json:"resources,omitempty"`
	IdleTimeoutSecs int        `json:"idle_timeout_secs,omitempty"`
}

// Environment is what a sandbox boots: Type "platform" and a release line.
type Environment struct {
	Type    string `json:"type"`
	Release string `json:"release"`
}

// Network says whether a sandbox reaches the Internet ("unrestricted", also
// written "internet"), nothing ("none"), or only what Allow lists
// ("allowlist": domains, *.domain wildcards and CIDRs; sandbox_network.go).
type Network struct {
	Type  string   `json:"type"`
	Allow []string `json:"allow,omitempty"`
}

// Function grants the tools of an installed function package version; Origins
// are the only places (scheme://host[:port]) its http_fetch may reach.
type Function struct {
	Name          string              `json:"name"`
	Package       string              `json:"package"`
	Version       string              `json:"version"`
	Origins       []string            `json:"origins,omitempty"`
	DefaultPolicy string              `json:"default_policy"`
	ToolRules     map[string]ToolRule `json:"tool_rules,omitempty"`
	// Volume is what the package's calls may do with the session's volume,
	// mounted at /volume: "none" (the default, also written ""), "read" or
	// "write" (read and write). An extension of the seed's format.
	Volume string `json:"volume,omitempty"`
}

// Builtin grants one of Subako's own tool sets: "ask_user" or "session".
type Builtin struct {
	Name string `json:"name"`
}

// ToolDef is one tool as a model sees it: its short name inside the grant, a
// description and a JSON Schema for its input.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	// An MCP server's tool also carries what its tools/list said of it,
	// passed on whole to the session's MCP clients: its title, annotations
	// (hints such as readOnlyHint), output schema and _meta, each as listed.
	Title        string          `json:"title,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Meta         json.RawMessage `json:"meta,omitempty"`
}

// Catalog is what Parse and List need to know about the installation. The
// caller implements it over its store; it must not be nil.
type Catalog interface {
	// HasSkill reports whether a skill of that name is installed.
	HasSkill(name string) bool
	// Releases lists the platform releases a sandbox may boot, e.g. ["2026"].
	Releases() []string
	// FunctionTools returns the tools of an installed package version's
	// manifest; false means no such package version is installed.
	FunctionTools(pkg, version string) ([]ToolDef, bool)
}
