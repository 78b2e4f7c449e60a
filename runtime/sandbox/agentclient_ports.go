package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// The host's half of port forwarding and live output (see agent_ports.go,
// agent_live.go). The agent runs as the sandbox's user, so code in the
// sandbox could answer in its place: every answer is bounded here too.

// portAnswerTimeout bounds the wait for a dial's or a port list's answer.
const portAnswerTimeout = 10 * time.Second

// clientExtra is the AgentClient's state for streams, port lists and live
// output.
type clientExtra struct {
	streams streamTable
	mu      sync.Mutex
	waiting map[uint64]chan frame    // dial and ports answers
	outputs map[uint64]*liveReceiver // execs that asked for live output
}

// OutputFunc receives a chunk of a running exec's output ("stdout" or
// "stderr"). It must not block.
type OutputFunc func(stream string, data []byte)

type outputKey struct{}

// WithOutput has the execs run with ctx send their output to fn as it is
// printed (bounded: LiveChunkBytes a chunk, LiveMaxBytes a stream).
func WithOutput(ctx context.Context, fn OutputFunc) context.Context {
	return context.WithValue(ctx, outputKey{}, fn)
}

type liveReceiver struct {
	fn   OutputFunc
	seen map[string]int
}

// liveExec marks exec frame f live when ctx asks for output; the returned
// function forgets it.
func (c *AgentClient) liveExec(ctx context.Context, f *frame) func() {
	fn, ok := ctx.Value(outputKey{}).(OutputFunc)
	if !ok || fn == nil {
		return func() {}
	}
	f.Live = true
	c.extra.mu.Lock()
	if c.extra.outputs == nil {
		c.extra.outputs = map[uint64]*liveReceiver{}
	}
	c.extra.outputs[f.ID] = &liveReceiver{fn: fn, seen: map[string]int{}}
	c.extra.mu.Unlock()
	return func() {
		c.extra.mu.Lock()
		delete(c.extra.outputs, f.ID)
		c.extra.mu.Unlock()
	}
}

// other handles the frames readLoop does not know itself; it never blocks.
func (c *AgentClient) other(f frame) {
	switch f.Type {
	case frameDialed, framePorts:
		c.extra.mu.Lock()
		ch := c.extra.waiting[f.ID]
		delete(c.extra.waiting, f.ID)
		c.extra.mu.Unlock()
		if ch != nil {
			ch <- f
		}
	case frameOutput:
		c.extra.mu.Lock()
		r := c.extra.outputs[f.ID]
		ok := r != nil && (f.Stream == "stdout" || f.Stream == "stderr") && len(f.Data) <= LiveChunkBytes &&
			r.seen[f.Stream]+len(f.Data) <= LiveMaxBytes
		if ok {
			r.seen[f.Stream] += len(f.Data)
		}
		c.extra.mu.Unlock()
		if ok {
			r.fn(f.Stream, f.Data)
		}
	case frameData, frameAck, frameEOF, frameClose:
		c.extra.streams.handle(f, c.send)
	}
}

// ask sends f (a new id) and waits for the agent's answer to it.
func (c *AgentClient) ask(ctx context.Context, f frame, onLate func(frame)) (frame, error) {
	ch := make(chan frame, 1)
	c.extra.mu.Lock()
	if c.extra.waiting == nil {
		c.extra.waiting = map[uint64]chan frame{}
	}
	c.extra.waiting[f.ID] = ch
	c.extra.mu.Unlock()
	forget := func() bool {
		c.extra.mu.Lock()
		defer c.extra.mu.Unlock()
		_, was := c.extra.waiting[f.ID]
		delete(c.extra.waiting, f.ID)
		return was
	}
	if err := c.send(f); err != nil {
		forget()
		return frame{}, err
	}
	t := time.NewTimer(portAnswerTimeout)
	defer t.Stop()
	var err error
	select {
	case a := <-ch:
		return a, nil
	case <-c.done:
		err = ErrMachineExited
	case <-c.closed:
		err = ErrMachineExited
	case <-t.C:
		err = errors.New("sandbox: the agent did not answer within 10 s")
	case <-ctx.Done():
		err = ctx.Err()
	}
	if !forget() && onLate != nil {
		// The answer came meanwhile: let the caller undo it.
		go onLate(<-ch)
	}
	return frame{}, err
}

func (c *AgentClient) newID() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextID++
	return c.nextID
}

// DialPort connects to port on the machine's loopback through the agent.
func (c *AgentClient) DialPort(ctx context.Context, port int) (net.Conn, error) {
	if port < 1 || port > 65535 {
		return nil, &FieldError{"port", fmt.Sprintf("%d must be 1 to 65535", port)}
	}
	id := c.newID()
	end := newStreamEnd(id, c.send)
	if !c.extra.streams.add(end) {
		return nil, fmt.Errorf("sandbox: %d connections to this sandbox's ports are open, the limit", MaxPortStreams)
	}
	f := frame{Type: frameDial, ID: id, streamFields: streamFields{Port: port}}
	answer, err := c.ask(ctx, f, func(a frame) {
		if a.Error == "" {
			end.Close()
		}
	})
	if err == nil && answer.Error != "" {
		err = &PortError{Port: port, Message: clip(answer.Error, 200)}
	}
	if err != nil {
		c.extra.streams.remove(id)
		return nil, err
	}
	select {
	case <-c.done:
		end.remoteClose(ErrMachineExited)
	default:
	}
	return end, nil
}

// ListPorts lists the TCP ports something listens on inside the machine.
func (c *AgentClient) ListPorts(ctx context.Context) ([]ListenPort, error) {
	answer, err := c.ask(ctx, frame{Type: framePorts, ID: c.newID()}, nil)
	if err != nil {
		return nil, err
	}
	if answer.Error != "" {
		return nil, errors.New("sandbox: list ports: " + clip(answer.Error, 200))
	}
	var out []ListenPort
	for _, p := range answer.Ports {
		if p.Port >= 1 && p.Port <= 65535 && len(out) < maxListedPorts {
			p.Address = clip(p.Address, 64)
			out = append(out, p)
		}
	}
	return out, nil
}

// PortError says nothing answered on a port inside the sandbox.
type PortError struct {
	Port    int
	Message string
}

func (e *PortError) Error() string { return e.Message }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:runeStart([]byte(s), n)]
}
