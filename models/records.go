package models

import "time"

// User is a person with access to the console and API.
type User struct {
	ID           string `gorm:"primaryKey"`
	Email        string
	Name         string
	Access       string
	PasswordHash string
	CreatedAt    time.Time
	UpdatedAt    time.Time
	TenantID     string // "" for the operator's people (migration 0025)
}

// Invite is a one-time link: the owner's setup link or an invitation. Only the
// hash of its token is stored, so a database dump cannot be turned into a login.
type Invite struct {
	ID        string `gorm:"primaryKey"`
	TokenHash string
	Kind      string // "setup" or "invite"
	Email     string
	Access    string
	CreatedBy string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
	TenantID  string
}

// WebSession is a signed-in browser. The cookie holds only its id; deleting the
// row (logout, removal of the person) ends it at the next request.
type WebSession struct {
	ID        string `gorm:"primaryKey"`
	UserID    string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Token is a person's API token; only its hash is kept.
type Token struct {
	ID         string `gorm:"primaryKey"`
	UserID     string
	Name       string
	Prefix     string
	TokenHash  string
	CreatedAt  time.Time
	ExpiresAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
	// Narrowed tokens hold only their own permissions rows (migration 0025).
	Narrowed bool
	ParentID string
	// Tools is what /mcp offers the token: "code" (search, fetch, do) or
	// "flat" (one tool a verb) (migration 0026).
	Tools string `gorm:"default:code"`
}

// Action is the record of one verb: who asked, what for, and the verdict.
type Action struct {
	ID         string `gorm:"primaryKey"`
	Verb       string
	ByKind     string
	ByID       string
	ByLabel    string
	Targets    string
	Verdict    string
	Reason     string
	Model      string
	Version    string
	ClientInfo string // the client that asked: an MCP client's name/version
	PolicyRule string // ToolCall.create: which rule decided the call (argument rules)
	// Permission is what allowed the verb (verb, scope, source, limit);
	// MissingPermission what a refusal lacked (migration 0025).
	Permission        string
	MissingPermission string
	CreatedAt         time.Time
	// ParentID is the code-mode program's Action a $ call ran inside;
	// Program is a program's text, at most 64 KiB (migration 0026).
	ParentID string
	Program  string
}

// Agent is a named agent; what it may call lives in its versions.
type Agent struct {
	ID          string `gorm:"primaryKey"`
	Name        string
	Description string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Version is one numbered version of an agent: a draft until published, then
// immutable. Config is the agent config JSON as Export writes it.
type Version struct {
	ID            string `gorm:"primaryKey"`
	AgentID       string
	Number        int
	State         string
	Config        string
	FromVersionID string
	CreatedBy     string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	PublishedAt   *time.Time
}

// Skill is a named set of files an agent may read (skill__<name>__read) and a
// sandbox sees at /skills/<name>.
type Skill struct {
	ID          string `gorm:"primaryKey"`
	Name        string
	Description string
	FileCount   int
	TotalBytes  int64
	CreatedBy   string
	CreatedAt   time.Time
}

// SkillFile is one file of a skill, by its checked relative path.
type SkillFile struct {
	SkillID string `gorm:"primaryKey"`
	Path    string `gorm:"primaryKey"`
	Content []byte
	Size    int64
	Mode    int
}

// FunctionPackage is one installed version of a WebAssembly function package.
type FunctionPackage struct {
	ID          string `gorm:"primaryKey"`
	Name        string
	Version     string
	Description string
	Manifest    string
	WasmSHA256  string `gorm:"column:wasm_sha256"`
	WasmSize    int64
	CompileMS   int64 `gorm:"column:compile_ms"`
	CreatedBy   string
	CreatedAt   time.Time
}

// Vault holds credentials a session presents on the agent's behalf.
type Vault struct {
	ID          string `gorm:"primaryKey"`
	Name        string
	Description string
	CreatedBy   string
	CreatedAt   time.Time
	TenantID    string
}

// Credential is one secret bound to a URL prefix; the secret is sealed
// (AES-256-GCM) and never leaves the runtime in the clear.
type Credential struct {
	ID         string `gorm:"primaryKey"`
	VaultID    string
	Prefix     string
	Type       string
	HeaderName string
	Username   string
	KeyID      string
	Ciphertext []byte
	CreatedAt  time.Time
	UpdatedAt  time.Time
	LastUsedAt *time.Time
	// OAuth credentials only (see oauth.go): a refresh replaces Ciphertext
	// where Version is unchanged, so concurrent refreshes never lose a token.
	Version      int64
	Status       string
	StatusDetail string
	OAuth        string `gorm:"column:oauth"`
	ExpiresAt    *time.Time
	RefreshedAt  *time.Time
}

// Session runs a published version with vaults; agents reach it with its token.
type Session struct {
	ID        string `gorm:"primaryKey"`
	VersionID string
	AgentID   string
	Title     string
	State     string
	TokenHash string
	CreatedBy string
	CreatedAt time.Time
	EndedAt   *time.Time
	TenantID  string
	// TokenExpiresAt ends the agent token before the session ends, when set.
	TokenExpiresAt *time.Time
}

// SessionVault binds a vault to a session; Position orders ties between vaults.
type SessionVault struct {
	SessionID string `gorm:"primaryKey"`
	VaultID   string `gorm:"primaryKey"`
	Position  int
}

// SessionRule is an approver's "allow for this session" for one exact tool.
type SessionRule struct {
	ID        string `gorm:"primaryKey"`
	SessionID string
	Tool      string
	Policy    string
	CreatedBy string
	CreatedAt time.Time
}

// Client is an app connected to a session, with the tools it declared.
type Client struct {
	SessionID   string `gorm:"primaryKey"`
	Name        string `gorm:"primaryKey"`
	Tools       string
	ConnectedAt time.Time
	LastSeenAt  time.Time
}

// MCPDiscovery caches an MCP server's tools/list by URL and the credential
// that discovered it ("" for none).
type MCPDiscovery struct {
	URL          string `gorm:"primaryKey;column:url"`
	CredentialID string `gorm:"primaryKey"`
	Tools        string
	Error        string
	DiscoveredAt time.Time
}

// ToolCall is one call of one tool in a session, from request to result.
type ToolCall struct {
	ID              string `gorm:"primaryKey"`
	SessionID       string
	VersionID       string
	Tool            string
	Kind            string
	GrantName       string
	ToolName        string
	Input           string
	InputTruncated  bool
	Output          string
	OutputTruncated bool
	Error           string
	Status          string
	Verdict         string
	PolicySource    string
	Reason          string
	Model           string
	ByKind          string
	ByID            string
	ByLabel         string
	Client          string
	ClientInfo      string // the client that made the call (MCP clientInfo name/version); Client runs client tools
	PolicyRule      string // which rule decided: "rule 2: allow command `git *`", "no rule matched …"
	ClaimedBy       string
	ClaimedAt       *time.Time
	CreatedAt       time.Time
	StartedAt       *time.Time
	FinishedAt      *time.Time
	DurationMS      int64 `gorm:"column:duration_ms"`
	// ReplicaID is the replica running the call (set when it starts
	// running), so recovery on another replica leaves a live one's calls.
	ReplicaID string
	// Program is the Action of the code-mode program (Program.run) the
	// call ran inside, as its ToolCall.create Action's parent_id (migration 0032).
	Program string
}

// Approval is the decision an ask-first call waits for.
type Approval struct {
	ID         string `gorm:"primaryKey"`
	ToolCallID string
	SessionID  string
	// TenantID, AgentID, Tool and GrantName are the call's (its session's
	// tenant and agent): the decided approvals' filters and a tenant's
	// people's lists seek them (migration 0039).
	TenantID       string
	AgentID        string
	Tool           string
	GrantName      string
	State          string
	Scope          string
	Reason         string
	DecidedBy      string
	DecidedByLabel string
	CreatedAt      time.Time
	DecidedAt      *time.Time
	ExpiresAt      time.Time
}

// UsageRecord is metered use: machine seconds, function seconds, archive storage.
type UsageRecord struct {
	ID        string `gorm:"primaryKey"`
	Kind      string
	SessionID string
	AgentID   string
	Subject   string
	Quantity  float64
	Unit      string
	Credits   float64
	StartedAt time.Time
	EndedAt   time.Time
}

// FunctionModule is the WebAssembly module of one installed function package,
// apart from FunctionPackage so that listing packages never reads the code.
type FunctionModule struct {
	PackageID string `gorm:"primaryKey"`
	Wasm      []byte
}

// Sandbox is a session's machine for one sandbox grant: its lifecycle state,
// its timestamps (the timers are derived from them) and its archive's size.
type Sandbox struct {
	ID             string `gorm:"primaryKey"`
	SessionID      string
	GrantName      string
	ReleaseName    string
	Network        string
	State          string
	Error          string
	StartedAt      *time.Time
	LastActiveAt   *time.Time
	SuspendedAt    *time.Time
	RetiredAt      *time.Time
	MachineSeconds float64
	ArchiveBytes   int64
	ArchiveAt      *time.Time
	ArchiveSHA256  string `gorm:"column:archive_sha256"`
	// ArchiveGen names the generation of the archive in the store ("":
	// the one archive per sandbox kept before generations).
	ArchiveGen   string
	ArchiveError string
	ArchiveNote  string
	// ReplicaID owns the running sandbox until LeaseExpiresAt, renewed by
	// its heartbeat (issue 19).
	ReplicaID      string
	LeaseExpiresAt *time.Time
	// CreatedAt orders the list of sandboxes; gorm sets it on insert and
	// never in the store's upsert.
	CreatedAt time.Time
}
