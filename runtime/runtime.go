// Package runtime is Subako's one enforcement layer: every verb of the product
// (Noun.verb) is a method here that takes a Principal, checks the permission in
// one place, runs, and records an Action. It must never import HTTP or HTML
// packages (echo, templ, handlers, views, web): the console, the API, the CLI and
// MCP are adapters over it and hold no rules of their own.
package runtime

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/fn"
	"github.com/subako/subako/runtime/mcpclient"
	"github.com/subako/subako/runtime/vault"
)

// Clock is injected so timers (expiry, lifecycles) can be tested without waiting.
type Clock interface{ Now() time.Time }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now().UTC() }

// SystemClock is the wall clock.
var SystemClock Clock = systemClock{}

// Options configures a Runtime; the zero value of each field has a working default.
type Options struct {
	Clock Clock
	Log   *slog.Logger
	// SetupTTL bounds how long a setup or invitation link stays valid.
	SetupTTL time.Duration
	// WebSessionTTL bounds how long a browser stays signed in.
	WebSessionTTL time.Duration
	// Releases are the sandbox platform releases this server offers.
	Releases []string
	// ReleaseInfo describes a release for the console (releases.go; nil:
	// nothing is shown).
	ReleaseInfo func(name string) string
	// Keys seal vault secrets; without them a fresh in-memory key is made,
	// which suits tests and nothing else.
	Keys *vault.Keyring
	// ApprovalTimeout is how long an ask-first call may wait for a decision.
	ApprovalTimeout time.Duration
	// MCPTimeout bounds one call to an MCP server.
	MCPTimeout time.Duration
	// ClientTimeout is how long a client tool call waits for its client.
	ClientTimeout time.Duration
	// AllowPrivateEgress lets MCP servers on loopback, private and
	// link-local addresses be reached (--egress-allow-private); by default
	// a version's URLs cannot lead into the server's own network.
	AllowPrivateEgress bool
	// MCPLimits bound what an MCP server may send: one answer's bytes, and
	// the tools, descriptions and schemas discovery keeps.
	MCPLimits mcpclient.Limits
	// LoginThrottle bounds failed sign-ins per account and per address;
	// zero fields take DefaultLoginThrottle's.
	LoginThrottle LoginThrottle
	// ReadyWriteTimeout bounds /readyz's write probe; past it the replica
	// is not ready. Zero is DefaultReadyWriteTimeout.
	ReadyWriteTimeout time.Duration
	// Notify configures how approvals reach approvers (notifications.go).
	Notify NotifyOptions
	// PermissionDecayDays removes a seat's permission unused this many days
	// each night when its role sets no decay of its own (decay.go); 0 is off.
	PermissionDecayDays int
	// ReplicaID names this replica among those sharing the database
	// (--replica-id); "" is a random id. A restart under the same id
	// interrupts the calls its earlier run left running (replicas.go).
	ReplicaID string
	// ReplicaURL is where peers reach this replica (--advertise-url),
	// stored in its replicas row.
	ReplicaURL string
	// ReadyChecks are further parts /readyz reflects (the archive store,
	// the sandbox driver …), each named; see ReadyParts.
	ReadyChecks []ReadyCheck
}

// Runtime holds what every verb needs.
type Runtime struct {
	db      *models.DB
	opts    Options
	mcp     *mcpclient.Pool
	events  *hub
	runners Runners
	stop    context.CancelFunc
	// Set by the wiring; nil on a server that runs no functions or sandboxes.
	fnEngine   atomic.Pointer[fn.Engine]
	sandboxSet atomic.Pointer[sandboxSet]
	volumes    atomic.Pointer[volumeSet] // volumes.go
	logins     *throttle
	ready      readiness
	notifier   notifier
	oauth      oauthState // OAuth credentials' tokens in memory (vault_oauth.go)
	auth       authCache  // what bearer tokens resolved to (authcache.go)
	hot        *hotPath   // the tool-call hot path's caches (hotpath.go)
	grantCache grantCache // what people hold, per auth generation (grants_load.go)

	replica    ReplicaInfo           // replicas.go
	registered atomic.Bool           // the replicas row was written (Start)
	bus        atomic.Pointer[pgBus] // events across replicas (events_pg.go); nil on SQLite
	running    sync.Map              // the calls this replica runs: id → their context's cancel (toolcallcancel.go)
	dbClock    Clock                 // tests' stand-in for the database's clock (dbclock.go); nil: the database's
	readyExtra readyChecks           // ready_parts.go

	// decayDay is the UTC day decay last ran (decay.go).
	decayDay atomic.Int64
}

// New builds a Runtime over an open, migrated database.
func New(db *models.DB, opts Options) *Runtime {
	if opts.Clock == nil {
		opts.Clock = SystemClock
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.SetupTTL == 0 {
		opts.SetupTTL = 72 * time.Hour
	}
	if opts.WebSessionTTL == 0 {
		opts.WebSessionTTL = 7 * 24 * time.Hour
	}
	if len(opts.Releases) == 0 {
		opts.Releases = DefaultReleases
	}
	if opts.Keys == nil {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		opts.Keys, _ = vault.NewKeyringFromSecret(hex.EncodeToString(b))
	}
	if opts.ApprovalTimeout == 0 {
		opts.ApprovalTimeout = 24 * time.Hour
	}
	if opts.MCPTimeout == 0 {
		opts.MCPTimeout = 30 * time.Second
	}
	if opts.ClientTimeout == 0 {
		opts.ClientTimeout = 5 * time.Minute
	}
	if opts.ReplicaID == "" {
		opts.ReplicaID = newID("rep")
	}
	r := &Runtime{db: db, opts: opts, replica: ReplicaInfo{ID: opts.ReplicaID, URL: opts.ReplicaURL}, logins: newThrottle(opts.LoginThrottle), mcp: mcpclient.NewPool(mcpclient.Options{Timeout: opts.MCPTimeout, AllowPrivate: opts.AllowPrivateEgress, Limits: opts.MCPLimits}), events: newHub(), hot: newHotPath()}
	for _, c := range opts.ReadyChecks {
		r.AddReadyCheck(c)
	}
	r.watch()
	r.watchAuthWrites() // before any statement runs: gorm's callbacks are not safe to change under way
	return r
}

// Close stops what the runtime runs in the background.
func (r *Runtime) Close() {
	if r.stop != nil {
		r.stop()
	}
	r.stopReplica(context.Background())
	r.CloseEvents()
	r.mcp.Close()
	r.hot.close()
	r.flushCredentialUse(context.Background())
}

// DB exposes the database for wiring (health checks); verbs never go around the runtime.
func (r *Runtime) DB() *models.DB { return r.db }

func (r *Runtime) now() time.Time { return r.opts.Clock.Now().UTC() }

// Now is the runtime's clock in UTC, so pages count "today" as the runtime does.
func (r *Runtime) Now() time.Time { return r.now() }

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newID returns a record's id (models.NewID): its kind's prefix, then
// characters that sort by the time it was made.
func newID(prefix string) string { return models.NewID(prefix) }

// newSecret returns a prefixed random secret and the hash under which it is stored.
func newSecret(prefix string) (secret, hash string) {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	secret = prefix + "_" + idEncoding.EncodeToString(b)
	return secret, hashSecret(secret)
}

func hashSecret(s string) string {
	sum := sha256.Sum256([]byte(strings.TrimSpace(s)))
	return hex.EncodeToString(sum[:])
}
