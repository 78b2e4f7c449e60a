package runtime

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
)

// authCache remembers what a bearer token resolved to, so an agent's every
// MCP message does not look its token up again. It is keyed by the token's
// hash (the secret itself is never kept) and bounded.
//
// Every entry carries the generation it was read under; anything that can
// change what a token means (a token revoked, a session ended or renamed, a
// person's access changed or the person removed) moves the generation on,
// which drops every entry at once: a revoked token is refused on the very
// next request of this process. The generation is taken before the
// database is read, so a read racing a revocation is never remembered as
// valid. Another replica's cache knows nothing of this one's writes: its
// entries live at most authCacheTTL, the bound on how long a token revoked
// elsewhere still works there.
type authCache struct {
	gen     atomic.Uint64
	mu      sync.Mutex
	entries map[string]authEntry
}

type authEntry struct {
	p   Principal
	gen uint64
	// until is the earlier of the token's own expiry and the entry's TTL.
	until time.Time
	// lastUsed is the API token's last_used_at as last written (zero for sessions).
	lastUsed time.Time
}

const (
	// authCacheSize bounds the entries; past it the cache starts over.
	authCacheSize = 10000
	// authCacheTTL bounds how long an entry is trusted without a read.
	authCacheTTL = time.Second
)

// generation is taken before reading what a token means.
func (c *authCache) generation() uint64 { return c.gen.Load() }

// reset forgets every entry: call it after a change to tokens, sessions or
// people is committed.
func (c *authCache) reset() {
	c.gen.Add(1)
	c.mu.Lock()
	c.entries = nil
	c.mu.Unlock()
}

func (c *authCache) get(hash string, now time.Time) (authEntry, bool) {
	c.mu.Lock()
	e, ok := c.entries[hash]
	c.mu.Unlock()
	if !ok || e.gen != c.gen.Load() || !now.Before(e.until) {
		return authEntry{}, false
	}
	return e, true
}

func (c *authCache) put(hash string, e authEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.gen != c.gen.Load() {
		return // something changed while it was read
	}
	if c.entries == nil || len(c.entries) >= authCacheSize {
		c.entries = make(map[string]authEntry, 64)
	}
	c.entries[hash] = e
}

// authTables are the tables whose changes can change what a token means.
// Who may do what (issue 13) is read through it too: roles, permissions,
// seats, their removals and tenants, created as well as changed.
var authTables = map[string]bool{"tokens": true, "sessions": true, "users": true,
	"roles": true, "permissions": true, "seats": true, "seat_permissions": true, "tenants": true}

// grantTables are the tables whose new rows change what someone holds.
var grantTables = map[string]bool{"roles": true, "permissions": true, "seats": true, "seat_permissions": true, "tenants": true}

// watchAuthWrites (called by New) moves the generation on after any update
// or delete of tokens, sessions or people made through this runtime's database handle,
// so a path that forgets to reset the cache still drops it. (The explicit
// resets after commits are what make a revocation race-free: this hook runs
// before a surrounding transaction commits.)
func (r *Runtime) watchAuthWrites() {
	if r.db == nil || r.db.DB == nil {
		return
	}
	name := fmt.Sprintf("subako:authcache:%p", r)
	hook := func(tx *gorm.DB) {
		if tx.Statement != nil && authTables[tx.Statement.Table] && tx.Statement.Context.Value(authTouch{}) == nil {
			r.auth.reset()
			// Again after the commit: a token resolved between this write
			// and the commit read the old rows. Open live pages then check
			// their person again (EventAccess).
			changed := func() {
				r.auth.reset()
				r.publish(Event{Kind: EventAccess})
			}
			if !models.AfterCommit(tx, name, changed) {
				changed()
			}
		}
	}
	cb := r.db.DB.Callback()
	_ = cb.Create().After("gorm:create").Register(name, func(tx *gorm.DB) {
		if tx.Statement != nil && grantTables[tx.Statement.Table] {
			hook(tx)
		}
	})
	_ = cb.Update().After("gorm:update").Register(name, hook)
	_ = cb.Delete().After("gorm:delete").Register(name, hook)
}

// EventAccess is published after any change to who may do what (people,
// tokens, sessions, roles, permissions, seats, tenants): a live page checks
// its person again and ends when they are refused.
const EventAccess = "access"

// authTouch marks the write of a token's last_used_at, which changes nothing
// a token means and must not empty the cache once a minute per token.
type authTouch struct{}

// authenticateCached is Authenticate through the cache.
func (r *Runtime) authenticateCached(ctx context.Context, secret string) (Principal, error) {
	hash := hashSecret(secret)
	now := r.now()
	if e, ok := r.auth.get(hash, now); ok {
		if e.p.TokenID != "" && now.Sub(e.lastUsed) > time.Minute {
			r.touchToken(ctx, e.p.TokenID, now)
			e.lastUsed = now
			r.auth.put(hash, e)
		}
		return e.p, nil
	}
	gen := r.auth.generation()
	e := authEntry{gen: gen, until: now.Add(authCacheTTL)}
	if strings.HasPrefix(secret, "sbs_") {
		p, err := r.AuthenticateSessionToken(ctx, secret)
		if err != nil {
			return p, err
		}
		e.p = p
	} else {
		p, t, err := r.lookupToken(ctx, hash)
		if err != nil {
			return p, err
		}
		e.p = p
		if t.ExpiresAt.Before(e.until) {
			e.until = t.ExpiresAt
		}
		if t.LastUsedAt != nil {
			e.lastUsed = *t.LastUsedAt
		}
		// last_used_at is a hint for people tidying tokens; a minute's precision is plenty.
		if now.Sub(e.lastUsed) > time.Minute {
			r.touchToken(ctx, t.ID, now)
			e.lastUsed = now
		}
	}
	r.auth.put(hash, e)
	return e.p, nil
}

func (r *Runtime) touchToken(ctx context.Context, id string, now time.Time) {
	r.db.WithContext(context.WithValue(ctx, authTouch{}, true)).Model(&models.Token{}).Where("id = ?", id).UpdateColumn("last_used_at", now)
}
