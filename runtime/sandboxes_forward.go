package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/sandbox"
)

// Forwarding (issue 19): a request for a sandbox that another live replica
// runs is sent to that replica over the internal channel, which the server
// implements (SandboxPeer). The check, the limits and the Action happen
// once, on the replica the person or agent reached; the owner runs only
// the sandbox's part, and never forwards again.

// SandboxPeer reaches the replica at url (its --advertise-url). verb is the
// verb already checked on this replica, for the owner's log. An error that
// wraps ErrPeerNotReached means the request surely did not run there.
type SandboxPeer interface {
	Exec(ctx context.Context, url, verb string, e SandboxExec) (json.RawMessage, error)
	Files(ctx context.Context, url, verb, id, dir string) (sandbox.Listing, error)
	ReadFile(ctx context.Context, url, verb, id, path string) ([]byte, sandbox.FileEntry, error)
	WriteFile(ctx context.Context, url, verb, id, path string, body io.Reader) (sandbox.FileEntry, error)
	Ports(ctx context.Context, url, verb, id string) ([]sandbox.ListenPort, error)
	DialPort(ctx context.Context, url, verb, id string, port int) (net.Conn, error)
}

// ErrPeerNotReached wraps a forwarding failure before the owner ran
// anything (it refused the connection, or answered that it drains or no
// longer holds the sandbox): the request may be tried again.
var ErrPeerNotReached = errors.New("the replica holding the sandbox was not reached")

// clusterState is what a runtime keeps about its place among replicas.
type clusterState struct {
	peer      atomic.Pointer[peerHolder]
	draining  atomic.Bool
	failovers atomic.Int64
	forwarded atomic.Int64
}

type peerHolder struct{ SandboxPeer }

// clusters holds each runtime's clusterState (tests build many runtimes).
var clusters sync.Map // *Runtime → *clusterState

func (r *Runtime) cluster() *clusterState {
	if c, ok := clusters.Load(r); ok {
		return c.(*clusterState)
	}
	c, _ := clusters.LoadOrStore(r, &clusterState{})
	return c.(*clusterState)
}

// SetSandboxPeer gives the runtime its way to reach other replicas.
func (r *Runtime) SetSandboxPeer(p SandboxPeer) { r.cluster().peer.Store(&peerHolder{p}) }

// SetDraining marks this replica as stopping: /readyz answers 503 so the
// proxy sends it nothing new while it hands its sandboxes over.
func (r *Runtime) SetDraining() { r.cluster().draining.Store(true) }

// Draining reports whether SetDraining was called.
func (r *Runtime) Draining() bool { return r.cluster().draining.Load() }

// ClusterCounts are the replica figures /metrics shows.
type ClusterCounts struct {
	RunningSandboxes int   // machines this replica runs now
	Failovers        int64 // sandboxes taken over from dead replicas
	Forwarded        int64 // requests sent to the replica owning a sandbox
}

// ClusterCounts reads the figures.
func (r *Runtime) ClusterCounts() ClusterCounts {
	c := ClusterCounts{Failovers: r.cluster().failovers.Load(), Forwarded: r.cluster().forwarded.Load()}
	if set := r.sandboxes(); set != nil {
		c.RunningSandboxes = set.mgr.CountRunning()
	}
	return c
}

// errNoPeerURL: the owner cannot be reached for lack of an address.
func errNoPeerURL(m models.Sandbox) *Error {
	return &Error{Kind: KindTooMany, Code: "sandbox_elsewhere", Title: "Sandbox runs on another replica", RetryAfter: 5 * time.Second,
		Detail: fmt.Sprintf("sandbox %s runs on replica %s, which has no --advertise-url, so this replica cannot forward to it: "+
			"give every replica --advertise-url and the same --internal-secret", m.ID, m.ReplicaID)}
}

func errOwnerUnreachable(id string, err error) *Error {
	return &Error{Kind: KindTooMany, Code: "sandbox_owner_unreachable", Title: "Sandbox's replica unreachable", RetryAfter: 5 * time.Second,
		Detail: fmt.Sprintf("sandbox %s runs on a replica that did not answer within %s (%v); once its lease of %s runs out, "+
			"another replica restores the sandbox from its last archive: try again", id, ownedWait, err, SandboxLeaseTTL)}
}

// errMoved answers a forwarded request for a sandbox this replica no
// longer runs: the sender looks its owner up again.
func errMoved(id string) *Error {
	return conflict("sandbox_moved", fmt.Sprintf("sandbox %s is not running on this replica any more", id))
}

// sandboxElsewhere returns the URL of the live replica that runs m, or ""
// when this replica acts on it (it runs it, nobody does, or its owner is
// dead: then starting it here takes it over).
func (r *Runtime) sandboxElsewhere(ctx context.Context, m models.Sandbox) (string, SandboxPeer, error) {
	// A suspended sandbox whose newest /workspace is a folder kept on its
	// replica (the store was down) goes there too (sandbox.KeptOn).
	kept := sandbox.KeptOn(recordOf(m)) != ""
	if !r.multiReplica() || m.State != string(sandbox.StateRunning) && !kept || m.ReplicaID == "" || m.ReplicaID == r.Replica().ID {
		return "", nil, nil
	}
	url, alive, err := r.ReplicaAlive(ctx, m.ReplicaID)
	if err != nil {
		return "", nil, fmt.Errorf("runtime: find replica %s: %w", m.ReplicaID, err)
	}
	if !alive {
		return "", nil, nil
	}
	ph := r.cluster().peer.Load()
	if url == "" || ph == nil {
		return "", nil, errNoPeerURL(m)
	}
	r.cluster().forwarded.Add(1)
	return url, ph.SandboxPeer, nil
}

// forwardable reports whether err says the owner did not run the request.
func forwardable(err error) bool {
	var owned *sandbox.OwnedError
	var re *Error
	return errors.Is(err, ErrPeerNotReached) || errors.As(err, &owned) || errors.As(err, &re) && re.Code == "sandbox_moved"
}

// runSandbox is the executor of sandbox__<name>__exec: here when this
// replica runs (or may start) the sandbox, else on its owner.
func (r *Runtime) runSandbox(ctx context.Context, e SandboxExec) (json.RawMessage, error) {
	if !r.multiReplica() {
		return r.runSandboxHere(ctx, e)
	}
	if r.leaseHeld(e) { // sandboxes_owner.go: no read of its row
		out, err := r.runSandboxHere(ctx, e)
		if !forwardable(err) {
			return out, err
		}
		r.leases().drop(e.SessionID, e.Grant.Name)
	}
	deadline := time.Now().Add(ownedWait)
	for {
		var m models.Sandbox
		err := r.db.WithContext(ctx).Where("session_id = ? AND grant_name = ?", e.SessionID, e.Grant.Name).First(&m).Error
		if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, fmt.Errorf("runtime: find the sandbox of %s: %w", e.Grant.Name, err)
		}
		url, peer, err := r.sandboxElsewhere(ctx, m)
		if err != nil {
			return nil, err
		}
		var out json.RawMessage
		if url != "" {
			out, err = r.forwardExec(ctx, peer, url, e)
		} else {
			out, err = r.runSandboxHere(ctx, e)
		}
		if !forwardable(err) {
			return out, err
		}
		if time.Now().After(deadline) {
			return nil, errOwnerUnreachable(m.ID, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// forwardExec runs e on its owner, its live output relayed as it comes.
func (r *Runtime) forwardExec(ctx context.Context, peer SandboxPeer, url string, e SandboxExec) (json.RawMessage, error) {
	var command string
	if req, err := decodeExec(e.Input); err == nil {
		command = req.Command
	}
	ctx, liveDone := r.liveExec(ctx, e, command)
	defer liveDone()
	return peer.Exec(ctx, url, "ToolCall.create", e)
}

// ForwardedExec runs an exec another replica forwarded after its check:
// only here, never forwarded again.
func (r *Runtime) ForwardedExec(ctx context.Context, verb string, e SandboxExec) (json.RawMessage, error) {
	r.opts.Log.Debug("forwarded sandbox exec", "verb", verb, "session", e.SessionID, "grant", e.Grant.Name)
	if r.multiReplica() {
		// The sender read the record before another replica took the
		// sandbox over: a machine still here is stale, so the exec goes
		// back to be sent to the new owner.
		var m models.Sandbox
		err := r.db.WithContext(ctx).Where("session_id = ? AND grant_name = ?", e.SessionID, e.Grant.Name).Limit(1).Find(&m).Error
		if err != nil {
			return nil, fmt.Errorf("runtime: find the sandbox of %s: %w", e.Grant.Name, err)
		}
		if m.State == string(sandbox.StateRunning) && m.ReplicaID != "" && m.ReplicaID != r.Replica().ID {
			return nil, errMoved(m.ID)
		}
	}
	out, err := r.runSandboxHere(ctx, e)
	var owned *sandbox.OwnedError
	if errors.As(err, &owned) {
		return nil, errMoved(owned.ID)
	}
	return out, err
}

// forwardedSandbox loads sandbox id for a forwarded request: this replica
// must still run it.
func (r *Runtime) forwardedSandbox(ctx context.Context, id string) (*sandboxSet, error) {
	set := r.sandboxes()
	if set == nil {
		return nil, errNoSandboxes
	}
	m, err := r.loadSandbox(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.multiReplica() && m.State == string(sandbox.StateRunning) && m.ReplicaID != r.Replica().ID {
		return nil, errMoved(id)
	}
	return set, nil
}

// ForwardedFiles is Sandbox.files's part on the owner.
func (r *Runtime) ForwardedFiles(ctx context.Context, id, dir string) (sandbox.Listing, error) {
	set, err := r.forwardedSandbox(ctx, id)
	if err != nil {
		return sandbox.Listing{}, err
	}
	l, err := set.mgr.ListFiles(ctx, id, dir)
	return l, filesError(id, err)
}

// ForwardedReadFile is Sandbox.readFile's part on the owner.
func (r *Runtime) ForwardedReadFile(ctx context.Context, id, path string) ([]byte, sandbox.FileEntry, error) {
	set, err := r.forwardedSandbox(ctx, id)
	if err != nil {
		return nil, sandbox.FileEntry{}, err
	}
	data, e, err := set.mgr.ReadFile(ctx, id, path)
	return data, e, filesError(id, err)
}

// ForwardedWriteFile is Sandbox.writeFile's part on the owner.
func (r *Runtime) ForwardedWriteFile(ctx context.Context, id, path string, body io.Reader) (sandbox.FileEntry, error) {
	set, err := r.forwardedSandbox(ctx, id)
	if err != nil {
		return sandbox.FileEntry{}, err
	}
	e, err := set.mgr.WriteFile(ctx, id, path, body)
	return e, filesError(id, err)
}

// ForwardedPorts is Sandbox.ports's part on the owner.
func (r *Runtime) ForwardedPorts(ctx context.Context, id string) ([]sandbox.ListenPort, error) {
	set, err := r.forwardedSandbox(ctx, id)
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, portListTimeout)
	defer cancel()
	ports, err := set.mgr.ListPorts(lctx, id)
	if errors.Is(err, sandbox.ErrNotRunning) {
		return []sandbox.ListenPort{}, nil
	}
	return ports, err
}

// ForwardedDialPort is a preview's connection on the owner.
func (r *Runtime) ForwardedDialPort(ctx context.Context, id string, port int) (net.Conn, error) {
	if _, err := r.forwardedSandbox(ctx, id); err != nil {
		return nil, err
	}
	return r.dialHere(ctx, PreviewTarget{Sandbox: id, Port: port})
}

// WaitingCalls counts the calls waiting across the database, by status
// (queued, awaiting_approval, waiting_client), for /metrics.
func (r *Runtime) WaitingCalls(ctx context.Context) (map[string]int64, error) {
	var rows []struct {
		Status string
		N      int64
	}
	err := r.db.WithContext(ctx).Model(&models.ToolCall{}).Select("status, COUNT(*) AS n").
		Where("status IN ?", []string{CallQueued, CallAwaitingApproval, CallWaitingClient}).Group("status").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("runtime: count waiting calls: %w", err)
	}
	out := map[string]int64{CallQueued: 0, CallAwaitingApproval: 0, CallWaitingClient: 0}
	for _, row := range rows {
		out[row.Status] = row.N
	}
	return out, nil
}
