package sandbox

import (
	"context"
	"io"
	"sync"
	"time"
)

// Live output of an exec (issue 16 item 8): when the host asks (Live on the
// exec frame), what the command prints also goes back as output frames
// while it runs. They are bounded in rate and bytes: at most one frame per
// stream every liveEvery, of at most LiveChunkBytes, and LiveMaxBytes per
// stream in all; the result keeps its own shape and limits.
const (
	liveEvery      = 250 * time.Millisecond
	LiveChunkBytes = 8 << 10
	LiveMaxBytes   = 256 << 10
)

type liveKey struct{}

// liveContext has runCommand stream exec f's output when the host asked.
func (a *agent) liveContext(ctx context.Context, f frame) context.Context {
	if !f.Live {
		return ctx
	}
	return context.WithValue(ctx, liveKey{}, &liveOutput{send: a.send, id: f.ID})
}

// liveWriters returns the writers an exec's output goes to: stdout and
// stderr, with the live sender ctx carries when the host asked, and what to
// call before the result is sent: the last chunks go out first.
func liveWriters(ctx context.Context, stdout, stderr io.Writer) (io.Writer, io.Writer, func()) {
	l, ok := ctx.Value(liveKey{}).(*liveOutput)
	if !ok {
		return stdout, stderr, func() {}
	}
	l.pending = map[string][]byte{}
	l.sent = map[string]int{}
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go l.loop()
	return io.MultiWriter(stdout, liveWriter{l, "stdout"}), io.MultiWriter(stderr, liveWriter{l, "stderr"}), func() {
		close(l.stop)
		<-l.done
	}
}

type liveOutput struct {
	send    func(frame) error
	id      uint64
	mu      sync.Mutex
	pending map[string][]byte
	sent    map[string]int // bytes queued or sent, per stream
	stop    chan struct{}
	done    chan struct{}
}

type liveWriter struct {
	l      *liveOutput
	stream string
}

// Write keeps what fits within LiveMaxBytes; it never blocks on the host.
func (w liveWriter) Write(p []byte) (int, error) {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	if room := LiveMaxBytes - w.l.sent[w.stream]; room > 0 {
		n := min(room, len(p))
		w.l.pending[w.stream] = append(w.l.pending[w.stream], p[:n]...)
		w.l.sent[w.stream] += n
	}
	return len(p), nil
}

func (l *liveOutput) loop() {
	defer close(l.done)
	t := time.NewTicker(liveEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			l.flush(false)
		case <-l.stop:
			l.flush(true)
			return
		}
	}
}

// flush sends one chunk per stream, or everything at the end; a chunk ends
// on a UTF-8 boundary unless it is the last.
func (l *liveOutput) flush(all bool) {
	for _, stream := range []string{"stdout", "stderr"} {
		for {
			l.mu.Lock()
			buf := l.pending[stream]
			n := min(len(buf), LiveChunkBytes)
			if n < len(buf) || !all {
				if cut := runeStart(buf, n); cut > 0 {
					n = cut
				}
			}
			if !all && n == len(buf) && n > 0 {
				// hold back an incomplete last rune
				k := n
				for k > 0 && k > n-4 && buf[k-1]&0xC0 == 0x80 {
					k--
				}
				if k > 0 && buf[k-1] >= 0xC0 && n-(k-1) < utf8Len(buf[k-1]) {
					n = k - 1
				}
			}
			chunk := append([]byte(nil), buf[:n]...)
			l.pending[stream] = buf[n:]
			l.mu.Unlock()
			if len(chunk) == 0 {
				break
			}
			_ = l.send(frame{Type: frameOutput, ID: l.id, streamFields: streamFields{Stream: stream, Data: chunk}})
			if !all {
				break
			}
		}
	}
}

func utf8Len(b byte) int {
	switch {
	case b >= 0xF0:
		return 4
	case b >= 0xE0:
		return 3
	case b >= 0xC0:
		return 2
	}
	return 1
}
