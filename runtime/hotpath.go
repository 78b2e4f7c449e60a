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

// The tool-call hot path (issue 11) keeps in memory what every call of a
// session reads and almost nothing changes: the session's row, its offered
// tools, and its vaults' credentials (sealed; a secret is opened per call).
//
// Invalidation is by event, not by time: every write through the database
// handle to a table those answers are built from (sessions, vaults,
// credentials, discoveries, clients, session rules, skills, versions,
// function packages) moves a generation counter, and an answer of an older
// generation is rebuilt. The hook sits on the database handle, so a verb
// added later cannot forget it. Another replica's writes publish nothing
// here (nor does a write inside a transaction that has not committed yet
// when a call rebuilds), so an answer is also rebuilt after hotTTL.
const hotTTL = 2 * time.Second

// hotMaxSessions bounds each cache; past it an arbitrary entry makes room.
const hotMaxSessions = 10000

// lastUsedFlushEvery is how often a credential's last use reaches its row;
// between flushes, pages read it from memory (Runtime.credentialLastUsed).
const lastUsedFlushEvery = time.Minute

// hotTables are the tables whose writes invalidate the caches.
var hotTables = []string{"sessions", "session_vaults", "vaults", "credentials", "mcp_discoveries", "clients",
	"session_rules", "skills", "skill_files", "versions", "function_packages", "agents"}

// quietColumns are columns whose writes change no cached answer: a client's
// heartbeat, a credential's last use.
var quietColumns = map[string]bool{"last_seen_at": true, "last_used_at": true}

type hotEntry[T any] struct {
	gen   uint64
	built time.Time
	val   T
	size  int64
}

// hotCache is one cache keyed by session id.
type hotCache[T any] struct {
	mu  sync.Mutex
	m   map[string]hotEntry[T]
	max int // entries; 0 is hotMaxSessions
	// maxBytes bounds the entries' sizes together (size tells an entry's);
	// 0: bounded by count alone. An entry over a quarter of it is not kept.
	maxBytes int64
	size     func(T) int64
	bytes    int64
}

func (c *hotCache[T]) get(h *hotPath, key string, now time.Time) (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || e.gen != h.gen.Load() || now.Sub(e.built) >= hotTTL || now.Before(e.built) {
		var zero T
		return zero, false
	}
	return e.val, true
}

// put keeps v if nothing was invalidated since gen was read (before v was built).
func (c *hotCache[T]) put(h *hotPath, key string, gen uint64, now time.Time, v T) {
	if gen != h.gen.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	limit := hotMaxSessions
	if c.max > 0 {
		limit = c.max
	}
	if c.m == nil {
		c.m = map[string]hotEntry[T]{}
	}
	var size int64
	if c.size != nil {
		size = c.size(v)
	}
	if old, ok := c.m[key]; ok {
		c.bytes -= old.size
		delete(c.m, key)
	}
	if c.maxBytes > 0 && size > c.maxBytes/4 {
		return // built again on every call rather than crowd out every other
	}
	// Full: entries go, whichever the map yields first, until this one fits.
	for k, e := range c.m {
		if len(c.m) < limit && (c.maxBytes == 0 || c.bytes+size <= c.maxBytes) {
			break
		}
		c.bytes -= e.size
		delete(c.m, k)
	}
	c.m[key] = hotEntry[T]{gen: gen, built: now, val: v, size: size}
	c.bytes += size
}

type hotPath struct {
	gen      atomic.Uint64
	sessions hotCache[models.Session]
	tools    hotCache[toolsReport]
	creds    hotCache[[]models.Credential]
	// codeMode: whether a version offers its tools as code, by version id.
	codeMode hotCache[bool]
	// Skill reads: skills by name, and their small files by skill and path.
	skills     hotCache[models.Skill]
	skillFiles hotCache[models.SkillFile]

	// lastUsed holds credentials' uses not yet written to their rows.
	usedMu   sync.Mutex
	lastUsed map[string]time.Time
	flushing bool

	// writeMu queues the hot path's writes on SQLite in this process: SQLite
	// has one writer, and a writer that finds the lock taken sleeps in the
	// driver's busy handler (1, 2, 5, 10 ms…) where a mutex hands over at once.
	writeMu sync.Mutex
	// batch groups the writes queued on writeMu into one transaction
	// (sqlitebatch.go).
	batch sqliteBatch

	// closing ends the waits of callers handed their result in memory.
	closing   chan struct{}
	closeOnce sync.Once
}

func newHotPath() *hotPath {
	h := &hotPath{lastUsed: map[string]time.Time{}, closing: make(chan struct{})}
	h.skillFiles.max = hotMaxSkillFiles
	h.tools.max = hotMaxToolReports
	// A report or a session's credentials can be large (a server's 1,000
	// tools of 64 KiB schemas; a vault of many credentials), and every
	// session holds its own copy: the count alone does not bound memory.
	h.tools.maxBytes, h.tools.size = hotMaxToolBytes, toolsReportSize
	h.creds.maxBytes, h.creds.size = hotMaxCredBytes, credentialsSize
	return h
}

// Bytes the offered tools and the credentials of all sessions may hold together.
const (
	hotMaxToolBytes = 256 << 20
	hotMaxCredBytes = 64 << 20
)

// toolsReportSize is about what a report holds in memory.
func toolsReportSize(rep toolsReport) int64 {
	n := int64(256)
	for _, t := range rep.all {
		n += int64(256 + len(t.Name) + len(t.Grant) + len(t.Tool.Tool) + len(t.Description) + len(t.InputSchema) + len(t.Title) + len(t.Annotations) + len(t.OutputSchema) + len(t.Meta) + len(t.URL) + len(t.Skill) + len(t.Client))
	}
	for k, v := range rep.failed {
		n += int64(64 + len(k) + len(v))
	}
	for _, sk := range rep.skipped {
		n += int64(128 + len(sk.Grant) + len(sk.Name) + len(sk.Tool) + len(sk.Reason))
	}
	return n
}

// credentialsSize is about what a session's credentials hold in memory.
func credentialsSize(recs []models.Credential) int64 {
	n := int64(64)
	for _, c := range recs {
		n += int64(256 + len(c.ID) + len(c.VaultID) + len(c.Prefix) + len(c.Ciphertext) + len(c.HeaderName) + len(c.Username) + len(c.OAuth) + len(c.KeyID))
	}
	return n
}

// hotMaxToolReports bounds the sessions whose offered tools are kept: a
// report holds every tool's schema, so it is the largest entry.
const hotMaxToolReports = 1000

// A skill file is kept in memory when at most hotSkillFileBytes, and at
// most hotMaxSkillFiles of them: 64 MiB at worst.
const (
	hotSkillFileBytes = 64 << 10
	hotMaxSkillFiles  = 1024
)

// hotSkill is loadSkill answered from memory when it can be.
func (r *Runtime) hotSkill(ctx context.Context, ref string) (models.Skill, error) {
	now := r.now()
	if rec, ok := r.hot.skills.get(r.hot, ref, now); ok {
		return rec, nil
	}
	gen := r.hot.gen.Load()
	rec, err := r.loadSkill(ctx, ref)
	if err == nil {
		r.hot.skills.put(r.hot, ref, gen, now, rec)
	}
	return rec, err
}

// hotSkillFile is a skill's file by path, from memory when it can be.
func (r *Runtime) hotSkillFile(ctx context.Context, skillID, path string) (models.SkillFile, error) {
	key := skillID + "\x00" + path
	now := r.now()
	if f, ok := r.hot.skillFiles.get(r.hot, key, now); ok {
		return f, nil
	}
	gen := r.hot.gen.Load()
	var f models.SkillFile
	if err := r.db.WithContext(ctx).Where("skill_id = ? AND path = ?", skillID, path).First(&f).Error; err != nil {
		return f, err
	}
	if len(f.Content) <= hotSkillFileBytes {
		r.hot.skillFiles.put(r.hot, key, gen, now, f)
	}
	return f, nil
}

func (h *hotPath) close() { h.closeOnce.Do(func() { close(h.closing) }) }

func (h *hotPath) invalidate() { h.gen.Add(1) }

type quietKey struct{}

// quiet marks ctx's writes as changing no cached answer.
func quiet(ctx context.Context) context.Context { return context.WithValue(ctx, quietKey{}, true) }

// watch registers the invalidation hook on the database handle. Each
// Runtime has its own name, so several Runtimes over one handle (tests)
// each hear every write.
func (r *Runtime) watch() {
	name := fmt.Sprintf("subako:hot_invalidate_%p", r.hot)
	hook := func(create bool) func(db *gorm.DB) {
		return func(db *gorm.DB) {
			if db.Error != nil || db.Statement == nil {
				return
			}
			if ctx := db.Statement.Context; ctx != nil && ctx.Value(quietKey{}) != nil {
				return
			}
			if hotWrite(db.Statement, create) {
				r.hot.invalidate()
				// Inside a transaction this runs before the commit: a read
				// in between still sees the old rows and may fill the cache
				// with them at the new generation. Move it on again once
				// the transaction has committed.
				models.AfterCommit(db, name, r.hot.invalidate)
			}
		}
	}
	cb := r.db.Callback()
	_ = cb.Create().After("gorm:create").Register(name, hook(true))
	_ = cb.Update().After("gorm:update").Register(name, hook(false))
	_ = cb.Delete().After("gorm:delete").Register(name, hook(false))
	_ = cb.Raw().After("gorm:raw").Register(name, hook(false))
}

// newSessionTables hold rows that, when inserted, belong to a session being
// created: no cached answer of another session depends on them, so a busy
// server starting sessions does not empty every session's cache.
var newSessionTables = map[string]bool{"sessions": true, "session_vaults": true}

func hotWrite(st *gorm.Statement, create bool) bool {
	table := st.Table
	if create && newSessionTables[table] {
		return false
	}
	if table == "" {
		// Raw SQL: any statement naming a watched table counts.
		sql := strings.ToLower(st.SQL.String())
		for _, t := range hotTables {
			if strings.Contains(sql, t) {
				return true
			}
		}
		return false
	}
	watched := false
	for _, t := range hotTables {
		if t == table {
			watched = true
			break
		}
	}
	if !watched {
		return false
	}
	if m, ok := st.Dest.(map[string]any); ok && len(m) > 0 {
		for k := range m {
			if !quietColumns[k] {
				return true
			}
		}
		return false
	}
	return true
}

// hotSession is loadSession answered from memory when it can be.
func (r *Runtime) hotSession(ctx context.Context, p Principal, id string) (models.Session, error) {
	if p.Kind == PrincipalSession && p.SessionID != id {
		return r.loadSession(ctx, p, id) // refuses, as it always did
	}
	now := r.now()
	if s, ok := r.hot.sessions.get(r.hot, id, now); ok {
		return s, nil
	}
	gen := r.hot.gen.Load()
	s, err := r.loadSession(ctx, p, id)
	if err == nil {
		r.hot.sessions.put(r.hot, id, gen, now, s)
	}
	return s, err
}

// sessionCredentials is the session's vaults' credentials, earlier vaults
// first, sealed as stored.
func (r *Runtime) sessionCredentials(ctx context.Context, sessionID string) ([]models.Credential, error) {
	now := r.now()
	if recs, ok := r.hot.creds.get(r.hot, sessionID, now); ok {
		return recs, nil
	}
	gen := r.hot.gen.Load()
	var recs []models.Credential
	err := r.db.WithContext(ctx).Table("credentials").Select("credentials.*").
		Joins("JOIN session_vaults ON session_vaults.vault_id = credentials.vault_id").
		Where("session_vaults.session_id = ?", sessionID).Order("session_vaults.position, credentials.prefix").Find(&recs).Error
	if err != nil {
		return nil, err
	}
	r.hot.creds.put(r.hot, sessionID, gen, now, recs)
	return recs, nil
}

// credentialUsed notes a credential's use; its row learns it at the next
// flush, at most once a minute, so no call writes the credential's row (one
// row shared by every session of the vault).
func (r *Runtime) credentialUsed(id string) {
	h := r.hot
	h.usedMu.Lock()
	defer h.usedMu.Unlock()
	h.lastUsed[id] = r.now()
	if !h.flushing {
		h.flushing = true
		time.AfterFunc(lastUsedFlushEvery, func() { r.flushCredentialUse(context.Background()) })
	}
}

// credentialLastUsed is a credential's last use: the newer of its row's and memory's.
func (r *Runtime) credentialLastUsed(id string, stored *time.Time) *time.Time {
	h := r.hot
	h.usedMu.Lock()
	t, ok := h.lastUsed[id]
	h.usedMu.Unlock()
	if ok && (stored == nil || t.After(*stored)) {
		return &t
	}
	return stored
}

// flushCredentialUse writes the uses noted since the last flush; Close runs
// it too, so a clean stop loses none. A kill -9 loses at most a minute's.
func (r *Runtime) flushCredentialUse(ctx context.Context) {
	h := r.hot
	h.usedMu.Lock()
	pending := h.lastUsed
	h.lastUsed = map[string]time.Time{}
	h.flushing = false
	h.usedMu.Unlock()
	for id, t := range pending {
		err := r.db.WithContext(quiet(ctx)).Model(&models.Credential{}).
			Where("id = ? AND (last_used_at IS NULL OR last_used_at < ?)", id, t).UpdateColumn("last_used_at", t).Error
		if err != nil {
			r.opts.Log.Warn("runtime: record credential use", "credential", id, "err", err)
		}
	}
}

// hotWriteTx runs a hot-path write, one at a time on SQLite (see writeMu).
func (r *Runtime) hotWriteTx(fn func() error) error {
	if r.db.Dialect == models.SQLite {
		r.hot.writeMu.Lock()
		defer r.hot.writeMu.Unlock()
	}
	return fn()
}
