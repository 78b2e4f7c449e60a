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
		ports, err := set.mgr.ListPorts(lctx, id)
		if errors.Is(err, sandbox.ErrNotRunning) {
			return nil
		}
		if err != nil {
			return err
		}
		out = append(out, ports...)
		return nil
	}, id)
	return out, err
}
