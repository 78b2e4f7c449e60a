package sandbox

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// Output keeps what a stream printed within MaxOutputBytes: the first half and
// the last half, so the model sees both how a build started and how it ended.
// The full byte count is always kept. Safe for one writer and concurrent readers.
type Output struct {
	mu    sync.Mutex
	head  []byte
	tail  []byte // grows to 2*keep, then is compacted to the last keep bytes
	total int64
}

const keepHalf = MaxOutputBytes / 2

// markerReserve is the room left for the marker line, so head + marker + tail
// never exceeds MaxOutputBytes.
const markerReserve = 64

// Write records p; it never fails, so a chatty command is never blocked.
func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.total += int64(len(p))
	rest := p
	if room := keepHalf - len(o.head); room > 0 {
		n := min(room, len(rest))
		o.head = append(o.head, rest[:n]...)
		rest = rest[n:]
	}
	if len(rest) == 0 {
		return len(p), nil
	}
	if len(rest) >= keepHalf {
		o.tail = append(o.tail[:0], rest[len(rest)-keepHalf:]...)
		return len(p), nil
	}
	o.tail = append(o.tail, rest...)
	if len(o.tail) > 2*keepHalf {
		o.tail = append(o.tail[:0], o.tail[len(o.tail)-keepHalf:]...)
	}
	return len(p), nil
}

// Result returns the kept text, whether anything was cut, and the full count.
func (o *Output) Result() (text string, truncated bool, total int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.total <= MaxOutputBytes {
		return string(o.head) + string(o.tail), false, o.total
	}
	keep := keepHalf - markerReserve/2
	head := o.head[:runeStart(o.head, keep)]
	tail := o.tail[len(o.tail)-keep:]
	tail = tail[runeFrom(tail):]
	omitted := o.total - int64(len(head)) - int64(len(tail))
	marker := fmt.Sprintf("\n[... %d bytes omitted ...]\n", omitted)
	return string(head) + marker + string(tail), true, o.total
}

// runeStart returns the largest cut <= n that does not split a UTF-8 sequence.
func runeStart(b []byte, n int) int {
	for i := 0; i < utf8.UTFMax && n > 0 && n < len(b) && !utf8.RuneStart(b[n]); i++ {
		n--
	}
	return n
}

// runeFrom returns the first index that starts a UTF-8 sequence.
func runeFrom(b []byte) int {
	i := 0
	for i < utf8.UTFMax && i < len(b) && !utf8.RuneStart(b[i]) {
		i++
	}
	return i
}
