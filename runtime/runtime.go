// Package runtime is Subako's one enforcement layer: every verb of the product
// (Noun.verb) is a method here that takes a Principal, checks the permission in
// one place, runs, and records an Action. It must never import HTTP or HTML
// packages (echo, templ, handlers, views, web): the console, the API, the CLI and
// MCP are adapters over it and hold no rules of their own.
package runtime

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"log/slog"
	"strings"
	"time"

	"github.com/subako/subako/models"
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
}

// Runtime holds what every verb needs.
type Runtime struct {
	db   *models.DB
	opts Options
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
	return &Runtime{db: db, opts: opts}
}

// DB exposes the database for wiring (health checks); verbs never go around the runtime.
func (r *Runtime) DB() *models.DB { return r.db }

func (r *Runtime) now() time.Time { return r.opts.Clock.Now().UTC() }

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newID returns a prefixed random id such as "ag_k3j…": the prefix tells a
// person reading a log what kind of record an id names.
func newID(prefix string) string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return prefix + "_" + idEncoding.EncodeToString(b)
}

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
