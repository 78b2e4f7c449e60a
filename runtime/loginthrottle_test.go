package runtime

import (
	"fmt"
	"testing"
	"time"
)

// The throttle remembers at most MaxKeys keys: a flood of new accounts or
// addresses forgets the least recently failed ones, never grows past it.
func TestLoginThrottleBounded(t *testing.T) {
	th := newThrottle(LoginThrottle{PerAccount: 2, PerAddress: 3, Window: time.Minute, MaxKeys: 3})
	now := time.Unix(1_000_000, 0)
	th.fail("acct:a", now)
	th.fail("acct:a", now)
	if th.wait("acct:a", now) <= 0 {
		t.Fatal("two failures of a limit of two do not throttle")
	}
	for i := range 100 {
		th.fail(fmt.Sprintf("addr:10.0.0.%d", i), now)
		if n := th.size(); n > 3 {
			t.Fatalf("the throttle holds %d keys, more than its 3", n)
		}
	}
	if th.wait("acct:a", now) != 0 {
		t.Fatal("the least recently failed key was not the one forgotten")
	}
	// A key's wait ends with time: one failure more is allowed after window/limit.
	th.fail("acct:b", now)
	th.fail("acct:b", now)
	if w := th.wait("acct:b", now); w != 30*time.Second {
		t.Fatalf("wait %s, want 30s", w)
	}
	if th.wait("acct:b", now.Add(30*time.Second)) != 0 {
		t.Fatal("still throttled once the wait has passed")
	}
}

// Making room forgets keys whose failures have expired before a locked
// account: others failing cannot unlock it while such keys remain.
func TestLoginThrottleKeepsLockedKeysWhileExpiredOnesRemain(t *testing.T) {
	th := newThrottle(LoginThrottle{PerAccount: 2, PerAddress: 100, Window: 10 * time.Minute, MaxKeys: 3})
	t0 := time.Unix(1_000_000, 0)
	th.fail("acct:a", t0)
	th.fail("acct:a", t0) // locked for 5 minutes
	th.fail("addr:10.0.0.1", t0.Add(time.Minute))
	th.fail("addr:10.0.0.2", t0.Add(time.Minute)) // each expires 6 s later
	now := t0.Add(2 * time.Minute)
	th.fail("addr:10.0.0.3", now) // the table is full: one key must go
	if th.wait("acct:a", now) <= 0 {
		t.Fatal("a locked account was forgotten while keys whose failures had expired were kept")
	}
	if n := th.size(); n != 3 {
		t.Fatalf("the throttle holds %d keys, want 3", n)
	}
}
