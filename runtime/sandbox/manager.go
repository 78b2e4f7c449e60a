package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/subako/subako/runtime/sandbox/archive"
)

// Lifecycle defaults from the product spec.
const (
	DefaultIdleTimeout = 5 * time.Minute
	DefaultRetireAfter = 5 * time.Hour
)

// Config wires a Manager. Driver, Archives, Store and Dir are required.
type Config struct {
	Driver   Driver
	Archives archive.Store
	Store    Store
	Clock    Clock // default SystemClock
	// Dir holds one folder per sandbox, <Dir>/<id>/workspace. The local
	// driver needs every parent of Dir to be searchable by the sandbox uid.
	Dir             string
	IdleTimeout     time.Duration // default 5m
	RetireAfter     time.Duration // default 5h
	MaxArchiveBytes int64         // default 256 MiB
	// MaxExpandedBytes bounds what a restore writes (default 8 GiB).
	MaxExpandedBytes int64
	// MaxRunning bounds the machines running at once (0: no limit): an
	// exec that would start one more is refused with a *CapacityError.
	MaxRunning int
	// MinFreeDisk is the free space (bytes) the disk of Dir keeps: under
	// it, starts and archives are refused with a *DiskFullError (0: 1 GiB;
	// negative: no floor).
	MinFreeDisk int64
	Limits      Limits
	// Skills returns a session's skills as name -> host folder.
	Skills  func(ctx context.Context, sessionID string) (map[string]string, error)
	OnUsage func(UsageEvent)
	// OnChange, when set, is called with a sandbox's record after each
	// change of its state (started, suspended, retired, failed), in the
	// goroutine that made the change and possibly under the Manager's
	// locks: it must return at once and never call the Manager. Every
	// change is reported; none is dropped for a slow listener.
	OnChange func(Record)
	NewID    func() string
	Logger   *slog.Logger
	// Owner shares sandboxes between replicas of one database (nil: this
	// Manager's alone); RetireGate, when set, lets only one replica retire
	// suspended sandboxes at a tick (it reports whether this one may).
	Owner      Ownership
	RetireGate func(ctx context.Context) bool
}

// Key names a sandbox: one per grant in a session. Release and Network are
// the grant's settings, applied when the machine (re)starts.
type Key struct {
	SessionID string
	Grant     string
	Release   string
	Network   string
	// VolumeDir and VolumeWrite: the session's volume at /volume (see Spec).
	VolumeDir   string
	VolumeWrite bool
	// Limits override the Config's, field by field where not zero (the
	// grant's resources); IdleTimeout overrides Config.IdleTimeout.
	Limits      Limits
	IdleTimeout time.Duration
}

// Manager starts sandboxes on their first exec, suspends them when idle,
// retires them when suspended long enough, and restores them from their
// archive on the next exec. Safe for concurrent use.
type Manager struct {
	cfg   Config
	mu    sync.Mutex
	boxes map[string]*box // by session + "\x00" + grant
	slots *slots
	// recoverer is the Driver's WorkspaceRecoverer, if it is one.
	recoverer WorkspaceRecoverer
	// nextArchiveRetry is when folders kept for a store that was down are
	// archived again (rearchive.go); under mu.
	nextArchiveRetry time.Time
}

// box is one sandbox's in-memory state; its mutex serialises starts and
// suspensions, not execs.
type box struct {
	id      string // rec.ID, readable without mu
	mu      sync.Mutex
	rec     Record
	machine Machine
	active  int
	gone    bool // removed from the manager's map: look the sandbox up again
	// retryRetire is when a retirement held back by a failed archive is
	// tried again (zero: at once).
	retryRetire time.Time
	// storedActive is the LastActiveAt the Store holds: execs only move
	// rec.LastActiveAt, and Tick records it when it moved.
	storedActive time.Time
	// idle is this sandbox's idle timeout (zero: Config.IdleTimeout), from
	// the key of its last start.
	idle time.Duration
}

// NewManager checks cfg and fills in defaults.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Driver == nil || cfg.Archives == nil || cfg.Store == nil || cfg.Dir == "" {
		return nil, errors.New("sandbox: manager needs a Driver, Archives, a Store and a Dir")
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.RetireAfter <= 0 {
		cfg.RetireAfter = DefaultRetireAfter
	}
	if cfg.MaxArchiveBytes <= 0 {
		cfg.MaxArchiveBytes = archive.DefaultMaxBytes
	}
	if cfg.NewID == nil {
		cfg.NewID = newID
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := os.MkdirAll(cfg.Dir, 0o711); err != nil {
		return nil, fmt.Errorf("sandbox: create %s: %w", cfg.Dir, err)
	}
	if cfg.MaxRunning < 0 {
		return nil, fmt.Errorf("sandbox: max running %d: must be 0 (no limit) or more", cfg.MaxRunning)
	}
	recoverer, _ := cfg.Driver.(WorkspaceRecoverer)
	sl := &slots{max: cfg.MaxRunning, running: map[string]bool{}}
	cfg.Driver = slotDriver{Driver: cfg.Driver, slots: sl}
	return &Manager{cfg: cfg, boxes: map[string]*box{}, slots: sl, recoverer: recoverer}, nil
}

func newID() string {
	b := make([]byte, 10)
	rand.Read(b)
	return "sbx_" + hex.EncodeToString(b)
}

func (m *Manager) now() time.Time { return m.cfg.Clock.Now() }

// Exec runs req in the key's sandbox, starting or restoring it first when it
// is not running. A running exec keeps the sandbox awake; the idle clock
// starts when the last exec returns.
func (m *Manager) Exec(ctx context.Context, key Key, req ExecRequest) (ExecResult, error) {
	if err := req.Validate(); err != nil {
		return ExecResult{}, err
	}
	b, machine, err := m.acquire(ctx, key)
	if err != nil {
		return ExecResult{}, err
	}
	res, err := machine.Exec(ctx, req)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.active--
	b.rec.LastActiveAt = m.now()
	if errors.Is(err, ErrMachineExited) && b.machine == machine {
		b.rec.Error = err.Error()
		if serr := m.suspendLocked(context.WithoutCancel(ctx), b, b.rec.LastActiveAt); serr != nil {
			m.cfg.Logger.Error("sandbox: suspend after the machine exited", "sandbox", b.rec.ID, "err", serr)
		}
		return res, fmt.Errorf("sandbox %s: the machine stopped (for example at its memory limit); /workspace was kept and the next exec starts it again: %w", b.rec.ID, err)
	}
	// No write here: the last activity is kept in memory and recorded by
	// Tick (flushActivity), the only reader that needs it after a restart
	// (Recover bills a machine left running until then at the latest).
	return res, err
}

// acquire returns the key's box with a running machine and counts one more
// exec on it.
func (m *Manager) acquire(ctx context.Context, key Key) (*box, Machine, error) {
	for {
		b, err := m.lookup(ctx, key)
		if err != nil {
			return nil, nil, err
		}
		b.mu.Lock()
		if b.gone {
			b.mu.Unlock()
			continue
		}
		if b.machine == nil {
			if err := m.claimLocked(ctx, b); err != nil {
				b.mu.Unlock()
				return nil, nil, err
			}
			if err := m.recoverWorkspace(b); err != nil {
				b.mu.Unlock()
				return nil, nil, err
			}
			if err := m.reserve(b); err != nil {
				b.mu.Unlock()
				return nil, nil, err
			}
			if err := m.startLocked(ctx, b, key); err != nil {
				m.slots.give(b.id)
				b.mu.Unlock()
				return nil, nil, err
			}
		}
		b.active++
		b.rec.LastActiveAt = m.now()
		machine := b.machine
		b.mu.Unlock()
		return b, machine, nil
	}
}

// recoverWorkspace lets the driver put b's workspace folder back in shape
// (b.mu held, no machine running) before the start reads or restores it.
func (m *Manager) recoverWorkspace(b *box) error {
	if m.recoverer == nil {
		return nil
	}
	if err := m.recoverer.RecoverWorkspace(m.workspaceDir(b.id)); err != nil {
		return fmt.Errorf("sandbox: workspace of %s: %w", b.id, err)
	}
	return nil
}

func boxKey(sessionID, grant string) string { return sessionID + "\x00" + grant }

// lookup finds the key's box in memory, then in the Store, else makes a new
// one (persisted only once it starts).
func (m *Manager) lookup(ctx context.Context, key Key) (*box, error) {
	k := boxKey(key.SessionID, key.Grant)
	m.mu.Lock()
	b, ok := m.boxes[k]
	m.mu.Unlock()
	if ok {
		return b, nil
	}
	rec, err := m.cfg.Store.FindBySession(ctx, key.SessionID, key.Grant)
	if errors.Is(err, ErrNotFound) {
		rec, err = Record{ID: m.cfg.NewID(), SessionID: key.SessionID, Grant: key.Grant, Release: key.Release, Network: key.Network}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: find %s/%s: %w", key.SessionID, key.Grant, err)
	}
	return m.adopt(rec), nil
}

// adopt returns the in-memory box for rec, creating it if no other
// goroutine did meanwhile.
func (m *Manager) adopt(rec Record) *box {
	k := boxKey(rec.SessionID, rec.Grant)
	m.mu.Lock()
	defer m.mu.Unlock()
	if b, ok := m.boxes[k]; ok {
		return b
	}
	b := &box{id: rec.ID, rec: rec}
	m.boxes[k] = b
	return b
}

// forget drops a box from memory (b.mu held); a later lookup reloads it.
func (m *Manager) forget(b *box) {
	m.mu.Lock()
	delete(m.boxes, boxKey(b.rec.SessionID, b.rec.Grant))
	m.mu.Unlock()
	b.gone = true
}
