package handlers

import (
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// A secret a creating form makes (a session's token, an invitation link, an
// API token) is shown once, on the page its POST redirects to, so a reload
// re-sends a GET and creates nothing. Between the two requests the secret waits
// here: in this process's memory, keyed by the browser's console session, never
// in the URL (history, logs, Referer) nor in a cookie the browser could replay.
// A redirect lands on the process that answered the POST in every deployment
// Subako has today (one console process); several replicas would need sticky
// sessions or a shared store.

// The defaults of --reveal-for and --reveal-max.
const (
	// DefaultRevealFor is how long a secret waits for its page: a redirect is
	// followed at once, so an unclaimed secret is a browser that went elsewhere.
	DefaultRevealFor = 5 * time.Minute
	// DefaultRevealMax bounds the memory held: past it, the oldest secrets are
	// dropped (their creator sees the page without them and must make another).
	DefaultRevealMax = 4096
)

type revealEntry struct {
	value string
	at    time.Time
}

// reveals holds the secrets waiting to be shown; the zero value is ready.
type reveals struct {
	mu sync.Mutex
	m  map[string]revealEntry
}

// put keeps a secret for the next page of this browser that asks for slot,
// for at most d, with at most max secrets kept in all.
func (r *reveals) put(sid, slot, value string, now time.Time, d time.Duration, max int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]revealEntry{}
	}
	for k, e := range r.m {
		if now.Sub(e.at) > d {
			delete(r.m, k)
		}
	}
	for len(r.m) >= max {
		oldest, at := "", now
		for k, e := range r.m {
			if !e.at.After(at) {
				oldest, at = k, e.at
			}
		}
		delete(r.m, oldest)
	}
	r.m[sid+"\x00"+slot] = revealEntry{value: value, at: now}
}

// take returns the secret waiting for slot and forgets it: it shows once.
func (r *reveals) take(sid, slot string, now time.Time, d time.Duration) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := sid + "\x00" + slot
	e, ok := r.m[k]
	if !ok {
		return "", false
	}
	delete(r.m, k)
	if now.Sub(e.at) > d {
		return "", false
	}
	return e.value, true
}

// reveal keeps value for the page this browser is redirected to next.
func (h *Handlers) reveal(c echo.Context, slot, value string) {
	if sid, _ := c.Get(webSIDKey).(string); sid != "" {
		h.revealed.put(sid, slot, value, time.Now(), h.revealFor(), h.revealMax())
	}
}

// takeRevealed takes what a creating POST left for this page, once.
func (h *Handlers) takeRevealed(c echo.Context, slot string) (string, bool) {
	sid, _ := c.Get(webSIDKey).(string)
	if sid == "" {
		return "", false
	}
	return h.revealed.take(sid, slot, time.Now(), h.revealFor())
}

func (h *Handlers) revealFor() time.Duration {
	if h.RevealFor <= 0 {
		return DefaultRevealFor
	}
	return h.RevealFor
}

func (h *Handlers) revealMax() int {
	if h.RevealMax <= 0 {
		return DefaultRevealMax
	}
	return h.RevealMax
}
