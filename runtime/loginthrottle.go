package runtime

import (
	"container/list"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// LoginThrottle bounds failed sign-ins, per account and per client address.
// Its state is in memory: each replica throttles on its own, so behind N
// replicas an attacker gets up to N times the limits (still a few guesses an
// hour against a bcrypt hash, not a dictionary).
type LoginThrottle struct {
	// PerAccount and PerAddress are the failed sign-ins allowed in Window.
	PerAccount, PerAddress int
	Window                 time.Duration
	// MaxKeys bounds the accounts and addresses remembered at once; past it
	// the least recently failed one is forgotten, so memory stays bounded.
	MaxKeys int
}

// DefaultLoginThrottle is what `subako serve` starts with.
var DefaultLoginThrottle = LoginThrottle{PerAccount: 10, PerAddress: 50, Window: 15 * time.Minute, MaxKeys: 10000}

// throttle is a generic cell rate limiter per key (one "theoretical arrival
// time" each): a key may fail `limit` times at once, then once per
// window/limit. One timestamp per key keeps the memory per key fixed.
type throttle struct {
	mu    sync.Mutex
	cfg   LoginThrottle
	order *list.List // of *throttleKey, most recently failed first
	keys  map[string]*list.Element
}

type throttleKey struct {
	key   string
	tat   time.Time
	noted time.Time // when a refusal of this key was last recorded
}

func newThrottle(cfg LoginThrottle) *throttle {
	if cfg.PerAccount <= 0 {
		cfg.PerAccount = DefaultLoginThrottle.PerAccount
	}
	if cfg.PerAddress <= 0 {
		cfg.PerAddress = DefaultLoginThrottle.PerAddress
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultLoginThrottle.Window
	}
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = DefaultLoginThrottle.MaxKeys
	}
	return &throttle{cfg: cfg, order: list.New(), keys: map[string]*list.Element{}}
}

func (t *throttle) limit(key string) int {
	if strings.HasPrefix(key, "addr:") {
		return t.cfg.PerAddress
	}
	return t.cfg.PerAccount
}

// wait is how long key must wait before its next attempt; 0 lets it try.
func (t *throttle) wait(key string, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	el, ok := t.keys[key]
	if !ok {
		return 0
	}
	step := t.cfg.Window / time.Duration(t.limit(key))
	if w := el.Value.(*throttleKey).tat.Sub(now) - (t.cfg.Window - step); w > 0 {
		return w
	}
	return 0
}

// refuse says whether keys (an account, then an address) must wait, for
// which one ("account" or "address") and how long, and whether this
// refusal is to be recorded. A refused attempt is cheap (no password
// check), so a client can send thousands a second: only the first refusal
// of each key per step (window ÷ limit) is recorded, so the audit log grows
// no faster than the failures it allows.
func (t *throttle) refuse(now time.Time, keys ...string) (what string, wait time.Duration, record bool) {
	for _, key := range keys {
		if wait = t.wait(key, now); wait <= 0 {
			continue
		}
		what = "account"
		if strings.HasPrefix(key, "addr:") {
			what = "address"
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		if el, ok := t.keys[key]; ok {
			k := el.Value.(*throttleKey)
			if step := t.cfg.Window / time.Duration(t.limit(key)); k.noted.IsZero() || now.Sub(k.noted) >= step {
				k.noted, record = now, true
			}
		}
		return what, wait, record
	}
	return "", 0, false
}

// fail counts one failed attempt against key.
func (t *throttle) fail(key string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	step := t.cfg.Window / time.Duration(t.limit(key))
	el, ok := t.keys[key]
	if !ok {
		if t.order.Len() >= t.cfg.MaxKeys {
			t.evict(now)
		}
		el = t.order.PushFront(&throttleKey{key: key, tat: now})
		t.keys[key] = el
	}
	k := el.Value.(*throttleKey)
	k.tat = later(k.tat, now).Add(step)
	t.order.MoveToFront(el)
}

// evictScan is how many of the least recently failed keys evict looks at.
const evictScan = 64

// evict forgets one key to make room. A key whose failures have all expired
// throttles nothing, so the least recently failed of those goes first; only
// when the oldest keys all still count against something is the oldest
// forgotten. So a locked account is not unlocked by others' failures while
// the table still holds keys that no longer matter.
func (t *throttle) evict(now time.Time) {
	victim := t.order.Back()
	for el, n := t.order.Back(), 0; el != nil && n < evictScan; el, n = el.Prev(), n+1 {
		if !el.Value.(*throttleKey).tat.After(now) {
			victim = el
			break
		}
	}
	delete(t.keys, victim.Value.(*throttleKey).key)
	t.order.Remove(victim)
}

// forget clears key, after a successful sign-in.
func (t *throttle) forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if el, ok := t.keys[key]; ok {
		delete(t.keys, key)
		t.order.Remove(el)
	}
}

func (t *throttle) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.order.Len()
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// addressKey is the throttle key of a client address: an IPv6 client
// usually holds a whole /64, so that is the unit.
func addressKey(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return "addr:" + truncate(addr, 64)
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return "addr:" + p.String()
	}
	return "addr:" + ip.String()
}

func accountKey(email string) string {
	return "acct:" + truncate(strings.ToLower(strings.TrimSpace(email)), 320)
}

// errThrottled refuses a sign-in until wait has passed.
func errThrottled(what string, wait time.Duration) *Error {
	secs := int((wait + time.Second - 1) / time.Second)
	return &Error{Kind: KindTooMany, Code: "too_many_attempts", Title: "Too many sign-in attempts", RetryAfter: wait,
		Detail: fmt.Sprintf("too many failed sign-ins for this %s: try again in %d seconds", what, secs)}
}
