package sandbox

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// Limits of a forwarded stream. Each side may have at most streamWindow
// bytes in flight (sent, not acknowledged as read), sent in frames of at
// most streamChunk: a side that sends more is cut off.
const (
	streamWindow = 256 << 10
	streamChunk  = 32 << 10
	// streamAckEvery is how many bytes read make an acknowledgement.
	streamAckEvery = streamWindow / 4
	// MaxPortStreams bounds the open streams of one machine, each side.
	MaxPortStreams = 64
)

// ErrStreamClosed is what a stream the other side closed answers.
var ErrStreamClosed = errors.New("sandbox: port connection closed")

// streamEnd is one end of a byte stream carried in frames: a net.Conn.
type streamEnd struct {
	id   uint64
	send func(frame) error

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
	in      []byte        // received, not yet read
	inEOF   bool
	gone    error // the other side closed the stream, or it broke
	closed  bool  // closed here
	eofSent bool
	credit  int // bytes this side may still send
	unacked int // bytes read here, not yet acknowledged
	rdl     time.Time
	wdl     time.Time
	onClose func()
}

func newStreamEnd(id uint64, send func(frame) error) *streamEnd {
	return &streamEnd{id: id, send: send, changed: make(chan struct{}), credit: streamWindow}
}

// wake tells waiters something changed (mu held).
func (s *streamEnd) wake() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// deliver queues data from the other side; false when it sent past its window.
func (s *streamEnd) deliver(data []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.gone != nil {
		return true
	}
	if len(s.in)+len(data) > streamWindow || len(data) > streamChunk {
		return false
	}
	s.in = append(s.in, data...)
	s.wake()
	return true
}

func (s *streamEnd) remoteEOF() {
	s.mu.Lock()
	s.inEOF = true
	s.wake()
	s.mu.Unlock()
}

func (s *streamEnd) remoteClose(err error) {
	s.mu.Lock()
	if s.gone == nil {
		s.gone = err
	}
	s.wake()
	s.mu.Unlock()
}

func (s *streamEnd) ack(n int) {
	s.mu.Lock()
	if n > 0 && s.credit+n <= streamWindow {
		s.credit += n
	}
	s.wake()
	s.mu.Unlock()
}

// wait waits for a change or the deadline (mu held; released meanwhile).
func (s *streamEnd) wait(deadline time.Time) error {
	ch := s.changed
	s.mu.Unlock()
	defer s.mu.Lock()
	if deadline.IsZero() {
		<-ch
		return nil
	}
	d := time.Until(deadline)
	if d <= 0 {
		return os.ErrDeadlineExceeded
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		return os.ErrDeadlineExceeded
	}
}

func (s *streamEnd) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		switch {
		case s.closed:
			return 0, net.ErrClosed
		case len(s.in) > 0:
			n := copy(p, s.in)
			s.in = s.in[n:]
			if len(s.in) == 0 {
				s.in = nil
			}
			// Acknowledged in batches: the sender still holds at least
			// streamWindow-streamAckEvery of credit meanwhile.
			s.unacked += n
			if s.unacked < streamAckEvery {
				return n, nil
			}
			ack := s.unacked
			s.unacked = 0
			s.mu.Unlock()
			err := s.send(frame{Type: frameAck, ID: s.id, streamFields: streamFields{N: ack}})
			s.mu.Lock()
			if err != nil && s.gone == nil {
				s.gone = err
			}
			return n, nil
		case s.inEOF:
			return 0, io.EOF
		case s.gone != nil:
			return 0, s.gone
		case !s.rdl.IsZero() && !time.Now().Before(s.rdl):
			return 0, os.ErrDeadlineExceeded
		}
		if err := s.wait(s.rdl); err != nil {
			return 0, err
		}
	}
}

func (s *streamEnd) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	written := 0
	for len(p) > 0 {
		switch {
		case s.closed:
			return written, net.ErrClosed
		case s.gone != nil:
			return written, s.gone
		case s.eofSent:
			return written, errors.New("sandbox: write after CloseWrite")
		case !s.wdl.IsZero() && !time.Now().Before(s.wdl):
			return written, os.ErrDeadlineExceeded
		case s.credit > 0:
			n := min(s.credit, streamChunk, len(p))
			s.credit -= n
			chunk := append([]byte(nil), p[:n]...)
			s.mu.Unlock()
			err := s.send(frame{Type: frameData, ID: s.id, streamFields: streamFields{Data: chunk}})
			s.mu.Lock()
			if err != nil {
				return written, err
			}
			written += n
			p = p[n:]
			continue
		}
		if err := s.wait(s.wdl); err != nil {
			return written, err
		}
	}
	return written, nil
}

// CloseWrite tells the other side nothing more comes from this one.
func (s *streamEnd) CloseWrite() error {
	s.mu.Lock()
	if s.eofSent || s.closed {
		s.mu.Unlock()
		return nil
	}
	s.eofSent = true
	s.mu.Unlock()
	return s.send(frame{Type: frameEOF, ID: s.id})
}

func (s *streamEnd) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	tell := s.gone == nil
	s.wake()
	onClose := s.onClose
	s.mu.Unlock()
	if onClose != nil {
		onClose()
	}
	if tell {
		return s.send(frame{Type: frameClose, ID: s.id})
	}
	return nil
}

type streamAddr struct{}

func (streamAddr) Network() string { return "subako-agent" }
func (streamAddr) String() string  { return "sandbox" }

func (s *streamEnd) LocalAddr() net.Addr  { return streamAddr{} }
func (s *streamEnd) RemoteAddr() net.Addr { return streamAddr{} }

func (s *streamEnd) SetDeadline(t time.Time) error      { return s.deadline(&t, &t) }
func (s *streamEnd) SetReadDeadline(t time.Time) error  { return s.deadline(&t, nil) }
func (s *streamEnd) SetWriteDeadline(t time.Time) error { return s.deadline(nil, &t) }

func (s *streamEnd) deadline(read, write *time.Time) error {
	s.mu.Lock()
	if read != nil {
		s.rdl = *read
	}
	if write != nil {
		s.wdl = *write
	}
	s.wake()
	s.mu.Unlock()
	return nil
}

// streamTable holds one side's open streams.
type streamTable struct {
	mu   sync.Mutex
	ends map[uint64]*streamEnd
}

func (t *streamTable) add(s *streamEnd) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ends == nil {
		t.ends = map[uint64]*streamEnd{}
	}
	if len(t.ends) >= MaxPortStreams {
		return false
	}
	t.ends[s.id] = s
	s.onClose = func() { t.remove(s.id) }
	return true
}

func (t *streamTable) get(id uint64) *streamEnd {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ends[id]
}

func (t *streamTable) remove(id uint64) {
	t.mu.Lock()
	delete(t.ends, id)
	t.mu.Unlock()
}

// handle applies a stream frame from the other side; it never blocks.
func (t *streamTable) handle(f frame, send func(frame) error) {
	s := t.get(f.ID)
	if s == nil {
		return
	}
	switch f.Type {
	case frameData:
		if !s.deliver(f.Data) {
			s.remoteClose(errors.New("sandbox: the other side sent past its window"))
			t.remove(f.ID)
			go send(frame{Type: frameClose, ID: f.ID})
		}
	case frameAck:
		s.ack(f.N)
	case frameEOF:
		s.remoteEOF()
	case frameClose:
		s.remoteClose(ErrStreamClosed)
		t.remove(f.ID)
	}
}

// closeAll ends every stream (the connection is gone).
func (t *streamTable) closeAll(err error) {
	t.mu.Lock()
	ends := t.ends
	t.ends = nil
	t.mu.Unlock()
	for _, s := range ends {
		s.remoteClose(err)
	}
}
