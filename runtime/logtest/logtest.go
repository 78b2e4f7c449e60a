// Package logtest holds what tests need to read what a server logged.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is a log sink that the server's goroutines write and a test reads
// while they run.
type Buffer struct {
	// Limit, when set, has the buffer start over once it holds more than
	// this many bytes (a long run's log kept from growing as a leak would).
	Limit int
	mu    sync.Mutex
	b     bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Limit > 0 && l.b.Len() > l.Limit {
		l.b.Reset()
	}
	return l.b.Write(p)
}

// String is everything logged so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Reset forgets what was logged so far.
func (l *Buffer) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Reset()
}
