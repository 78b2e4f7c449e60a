package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/subako/subako/runtime/sandbox"
)

// portListTimeout bounds how long Sandbox.ports waits for the agent.
const portListTimeout = 5 * time.Second

// SandboxPortList is Sandbox.ports: what listens inside a running sandbox,
// as the Sandboxes tab lists it; empty when the sandbox is not running (its
// servers ended with its machine). It never starts a sandbox.
func (r *Runtime) SandboxPortList(ctx context.Context, p Principal, id string) ([]sandbox.ListenPort, error) {
	out := []sandbox.ListenPort{}
	err := r.run(ctx, p, "Sandbox.ports", func(a *act) error {
		set := r.sandboxes()
		if set == nil {
			return errNoSandboxes
		}
		m, err := r.loadSandbox(ctx, id)
		if err != nil {
			return err
		}
		if m.State != string(sandbox.StateRunning) {
			return nil
		}
		lctx, cancel := context.WithTimeout(ctx, portListTimeout)
		defer cancel()
		ports, err := r.listPorts(lctx, set, id)
		out = append(out, ports...)
		return err
	}, id)
	return out, err
}

// listPorts asks a sandbox's agent what listens, on the replica that runs
// it; a sandbox that stopped meanwhile listens on nothing.
func (r *Runtime) listPorts(ctx context.Context, set *sandboxSet, id string) ([]sandbox.ListenPort, error) {
	if r.multiReplica() {
		m, err := r.loadSandbox(ctx, id)
		if err != nil {
			return nil, err
		}
		if url, peer, err := r.sandboxElsewhere(ctx, m); err != nil {
			return nil, err
		} else if url != "" {
			return peer.Ports(ctx, url, "Sandbox.ports", id)
		}
	}
	ports, err := set.mgr.ListPorts(ctx, id)
	if errors.Is(err, sandbox.ErrNotRunning) {
		return nil, nil
	}
	return ports, err
}
