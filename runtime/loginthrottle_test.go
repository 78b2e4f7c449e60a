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
