package mcpclient

import "strings"

// Forget ends every cached session whose key starts with keyPrefix, for
// callers whose sessions have ended: left to the idle timer, every ended
// session would hold its upstream MCP sessions (a connection and goroutines
// each) for IdleTimeout, and a busy server would pile them up. Sessions in
// use are closed by their last release, as after Close.
func (p *Pool) Forget(keyPrefix string) {
	p.mu.Lock()
	var idle []*entry
	for k, e := range p.entries {
		if !strings.HasPrefix(k.sessionKey, keyPrefix) {
			continue
		}
		if e.idle != nil {
			e.idle.Stop()
			e.idle = nil
		}
		p.evictLocked(e)
		if e.users == 0 {
			idle = append(idle, e)
		}
	}
	p.mu.Unlock()
	for _, e := range idle {
		closeWhenReady(e)
	}
}
