package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/subako/subako/runtime/fn"
)

// runFunction executes an fn__ tool: one call of the grant's package in a
// fresh instance, reaching only the grant's origins, with the session vault's
// credentials attached on the host, and metered by the second.
func (r *Runtime) runFunction(ctx context.Context, c FunctionCall) (json.RawMessage, error) {
	e := r.functionEngine()
	if e == nil {
		return nil, fmt.Errorf("functions are %w", ErrNotAvailable)
	}
	pkg, err := r.loadedFunction(ctx, e, c.Grant.Package, c.Grant.Version)
	if err != nil {
		return nil, err
	}
	// No timeout or memory limit of our own: the engine takes the manifest's,
	// within the server's caps, and stops the instance at the deadline.
	res, err := e.Call(ctx, pkg, fn.CallRequest{Tool: c.Tool, Input: c.Input, Origins: c.Grant.Origins,
		Credentials: c.Credentials, Volume: r.volumeMount(ctx, c)})
	r.meterFunction(ctx, c, res.Duration)
	r.volumeAfterCall(ctx, c, res.Volume)
	var full *fn.CapacityError
	if errors.As(err, &full) {
		return nil, overCapacity(full.Detail, full.RetryAfter)
	}
	if err != nil {
		return nil, err
	}
	return res.Output, nil
}

// meterFunction records a call's run time, failed calls included: the
// instance ran either way. A call refused before it started ran for nothing.
func (r *Runtime) meterFunction(ctx context.Context, c FunctionCall, d time.Duration) {
	if d <= 0 {
		return
	}
	end := r.now()
	secs := d.Seconds()
	err := r.RecordUsage(context.WithoutCancel(ctx), Usage{Kind: UsageFunctionSeconds, SessionID: c.SessionID,
		AgentID: c.AgentID, Subject: c.CallID, Quantity: secs, Unit: "second", Credits: secs * PriceFunctionSecond,
		Start: end.Add(-d), End: end})
	if err != nil {
		r.opts.Log.Error("runtime: meter function call", "call", c.CallID, "err", err)
	}
}
