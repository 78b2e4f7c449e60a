package runtime

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/archive"
	"github.com/subako/subako/runtime/tools"
)

// SandboxOptions is what the server hands the runtime to run sandboxes: the
// driver and archive store it chose, and the folders it prepared.
type SandboxOptions struct {
	Driver   sandbox.Driver
	Archives archive.Store
	// Dir holds one folder per machine; SkillsDir the skills unpacked for
	// them. The sandbox uid must be able to search every parent of both.
	Dir, SkillsDir  string
	IdleTimeout     time.Duration // default 5m
	RetireAfter     time.Duration // default 5h
	MaxArchiveBytes int64         // default 256 MiB
	Limits          sandbox.Limits
	// MaxRunning bounds the sandboxes running at once (0: no limit).
	MaxRunning int
	// MinFreeDisk is the free space (bytes) under which the disk of Dir
	// takes no new sandbox start nor archive (0: 1 GiB; negative: no floor).
	MinFreeDisk int64
	// Ceilings bound what a sandbox grant's resources and idle timeout may
	// ask (zero fields: tools.DefaultSandboxCeilings).
	Ceilings tools.SandboxCeilings
	// EgressRootCAs verify the certificates of the hosts a sandbox's network
	// exit forwards to with a credential (nil: the system's; tests set theirs).
	EgressRootCAs *x509.CertPool
	// EgressResolver resolves names for the exits (nil: the system's).
	EgressResolver *net.Resolver
}

// sandboxSet is one runtime's sandboxes: the lifecycle Manager and what the
// verbs around it need.
type sandboxSet struct {
	mgr       *sandbox.Manager
	skillsDir string
	skillsMu  sync.Mutex
	stop      context.CancelFunc
	done      sync.WaitGroup

	accrualMu   sync.Mutex
	lastAccrual time.Time

	ceilings tools.SandboxCeilings

	exits *exitLog // what the machines' network exits refused and added
}

func (r *Runtime) sandboxes() *sandboxSet { return r.sandboxSet.Load() }

var errNoSandboxes = &Error{Kind: KindConflict, Code: "sandboxes_unavailable", Title: "Sandboxes unavailable",
	Detail: "this server runs no sandboxes, so it has none to show or archive"}

// StartSandboxes builds the lifecycle Manager over the sandboxes table,
// recovers what a restart left running (archived and suspended), and makes
// it the executor of sandbox__ tools. Call StopSandboxes at shutdown.
func (r *Runtime) StartSandboxes(ctx context.Context, o SandboxOptions) error {
	if r.sandboxes() != nil {
		return errors.New("runtime: sandboxes already started")
	}
	if o.SkillsDir == "" {
		return errors.New("runtime: sandboxes need a SkillsDir")
	}
	if err := prepareSkillsDir(o.SkillsDir); err != nil {
		return err
	}
	set := &sandboxSet{skillsDir: o.SkillsDir, ceilings: withCeilings(o.Ceilings)}
	set.exits = &exitLog{log: r.opts.Log.Warn}
	store := sandboxStore{db: r.db}
	var owner sandbox.Ownership
	var retireGate func(context.Context) bool
	if r.multiReplica() {
		// Replicas share the database: a running sandbox names its replica
		// (sandboxes_owner.go), and one replica at a time retires.
		store.owner = func() string { return r.Replica().ID }
		store.clock = r.dbNow
		owner = sandboxOwnership{r}
		retireGate = func(ctx context.Context) bool { return r.onceEvery(ctx, "sandbox-retire") }
	}
	mgr, err := sandbox.NewManager(sandbox.Config{
		Driver: &egressDriver{Driver: o.Driver, log: r.opts.Log, rt: r, exits: set.exits, rootCAs: o.EgressRootCAs, resolver: o.EgressResolver}, Archives: o.Archives, Store: store,
		Clock: r.opts.Clock, Dir: o.Dir,
		IdleTimeout: o.IdleTimeout, RetireAfter: o.RetireAfter, MaxArchiveBytes: o.MaxArchiveBytes, Limits: o.Limits,
		MaxRunning: o.MaxRunning, MinFreeDisk: o.MinFreeDisk,
		Skills: r.sandboxSkills, OnUsage: r.sandboxUsage, OnChange: r.sandboxChanged, Logger: r.opts.Log,
		Owner: owner, RetireGate: retireGate,
	})
	if err != nil {
		return err
	}
	set.mgr = mgr
	// Recover before the first exec can run: a sandbox left "running" by a
	// crash is archived from its folder and recorded as suspended.
	if err := mgr.Recover(ctx); err != nil {
		r.opts.Log.Error("runtime: recover sandboxes", "err", err)
	}
	loopCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	set.stop = stop
	r.sandboxSet.Store(set)
	set.done.Add(1)
	go func() { defer set.done.Done(); r.suspendOnSessionEnd(loopCtx, mgr) }()
	r.SetSandboxRunner(r.runSandbox)
	return nil
}

// StopSandboxes suspends every running sandbox (archiving its workspace) and
// stops the runtime's sandbox loops.
func (r *Runtime) StopSandboxes(ctx context.Context) error {
	set := r.sandboxes()
	if set == nil {
		return nil
	}
	set.stop()
	set.done.Wait()
	// Archiving can outlast a lease: this replica keeps holding what it
	// suspends, or another would restore an older archive meanwhile.
	renewCtx, stopRenew := context.WithCancel(ctx)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		for {
			select {
			case <-renewCtx.Done():
				return
			case <-time.After(SandboxLeaseTTL / 4):
				if err := r.renewSandboxLeases(renewCtx); err != nil && renewCtx.Err() == nil {
					r.opts.Log.Warn("runtime: renew sandbox leases while draining", "err", err)
				}
			}
		}
	}()
	err := set.mgr.Close(ctx)
	stopRenew()
	<-renewed
	r.sandboxSet.Store(nil)
	return err
}

// SandboxTick runs the lifecycle's timers (idle → suspended → retired),
// suspends sandboxes whose session ended, and meters archive storage. The
// server calls it every few seconds; timers come from the database, so a
// missed tick only delays them.
func (r *Runtime) SandboxTick(ctx context.Context) error {
	set := r.sandboxes()
	if set == nil {
		return nil
	}
	errs := []error{r.renewSandboxLeases(ctx), set.mgr.Tick(ctx), r.suspendEnded(ctx, set.mgr)}
	if r.multiReplica() && r.onceEvery(ctx, "sandbox-orphans") {
		errs = append(errs, r.suspendOrphans(ctx))
	}
	set.accrualMu.Lock()
	due := r.now().Sub(set.lastAccrual) >= time.Minute
	if due {
		set.lastAccrual = r.now()
	}
	set.accrualMu.Unlock()
	if due {
		// One replica meters (leases.go): two reading the same last record
		// would each add the same hour of archive storage.
		r.runOnce(ctx, "archive-usage", 5*time.Minute, func(ctx context.Context) {
			errs = append(errs, r.accrueArchives(ctx, archiveAccrualEvery))
		})
	}
	return errors.Join(errs...)
}

// sandboxChanged turns the Manager's state changes into runtime events
// (its Config.OnChange), so live pages hear about sandboxes on the same hub
// as calls and approvals. Publishing never blocks, and the hub itself tells
// a subscriber that falls behind to re-read (a resync).
func (r *Runtime) sandboxChanged(rec sandbox.Record) {
	r.publish(Event{Kind: "sandbox", ID: rec.ID, SessionID: rec.SessionID, State: string(rec.State)})
}

// suspendOnSessionEnd suspends a session's sandboxes as soon as it ends; a
// missed event (a resync in its place) is caught by SandboxTick, which
// sweeps every ended session's sandboxes every few seconds.
//
// The subscription takes session ends only. The suspensions run one after
// another in a goroutine of their own, and this one only notes which
// sessions ended: archiving a sandbox takes a while, and a subscription
// read only between archivings would fill when many sessions end at once
// and lose the next end (the hub drops what a full subscriber cannot
// take, leaving a resync).
func (r *Runtime) suspendOnSessionEnd(ctx context.Context, mgr *sandbox.Manager) {
	events, unsubscribe := r.Subscribe(sessionEnded)
	defer unsubscribe()
	ended := make(chan string, maxPendingSuspensions)
	done := make(chan struct{})
	defer func() { close(ended); <-done }()
	go func() {
		defer close(done)
		for id := range ended {
			if ctx.Err() != nil {
				return
			}
			if err := r.suspendSession(ctx, mgr, id); err != nil {
				r.opts.Log.Error("runtime: suspend the sandboxes of an ended session", "session", id, "err", err)
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-events:
			if !ok {
				return
			}
			if !sessionEnded(e) {
				continue // a resync: SandboxTick sweeps
			}
			select {
			case ended <- e.SessionID:
			default: // SandboxTick suspends it
			}
		}
	}
}

func sessionEnded(e Event) bool { return e.Kind == "session" && e.State == SessionEnded }

// maxPendingSuspensions bounds the ended sessions waiting for their
// sandboxes to be suspended; beyond it SandboxTick suspends them.
const maxPendingSuspensions = 1024

// suspendEnded suspends running sandboxes whose session has ended.
func (r *Runtime) suspendEnded(ctx context.Context, mgr *sandbox.Manager) error {
	var ids []string
	err := r.db.WithContext(ctx).Table("sandboxes").Distinct("sandboxes.session_id").
		Joins("JOIN sessions ON sessions.id = sandboxes.session_id").
		Where("sandboxes.state = ? AND sessions.state = ?", string(sandbox.StateRunning), SessionEnded).
		Pluck("sandboxes.session_id", &ids).Error
	if err != nil {
		return fmt.Errorf("runtime: find sandboxes of ended sessions: %w", err)
	}
	var errs []error
	for _, id := range ids {
		errs = append(errs, r.suspendSession(ctx, mgr, id))
	}
	return errors.Join(errs...)
}

func (r *Runtime) suspendSession(ctx context.Context, mgr *sandbox.Manager, sessionID string) error {
	var grants []string
	err := r.db.WithContext(ctx).Table("sandboxes").Where("session_id = ? AND state = ?", sessionID, string(sandbox.StateRunning)).
		Pluck("grant_name", &grants).Error
	if err != nil {
		return fmt.Errorf("runtime: sandboxes of session %s: %w", sessionID, err)
	}
	var errs []error
	for _, g := range grants {
		errs = append(errs, mgr.Suspend(ctx, sessionID, g))
	}
	return errors.Join(errs...)
}
