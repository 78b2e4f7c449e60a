package sandbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/subako/subako/runtime/sandbox"
)

// A full server's Retry-After follows the running sandboxes' own idle
// timeouts (a grant's idle_timeout_secs), not the server's default: a
// sandbox whose grant suspends it after 1 min frees its place in about a
// minute, one whose grant keeps it 1 h does not free it in the default's 5.
func TestRetryAfterFollowsTheGrantsIdleTimeout(t *testing.T) {
	for _, c := range []struct {
		idle     time.Duration
		min, max time.Duration
	}{
		{time.Minute, 45 * time.Second, time.Minute},
		{time.Hour, 59 * time.Minute, time.Hour},
	} {
		e := newEnv(t, func(cfg *sandbox.Config) { cfg.MaxRunning = 1 })
		k := key
		k.IdleTimeout = c.idle
		if _, err := e.mgr.Exec(context.Background(), k, sandbox.ExecRequest{Command: "true"}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(10 * time.Second)
		other := sandbox.Key{SessionID: "ses2", Grant: "workbench", Release: "2026", Network: sandbox.NetworkNone}
		_, err := e.mgr.Exec(context.Background(), other, sandbox.ExecRequest{Command: "true"})
		var full *sandbox.CapacityError
		if !errors.As(err, &full) {
			t.Fatalf("error = %v, want a CapacityError", err)
		}
		if full.RetryAfter < c.min || full.RetryAfter > c.max {
			t.Errorf("idle timeout %v, idle for 10 s: retry after %v, want %v to %v", c.idle, full.RetryAfter, c.min, c.max)
		}
	}
}
