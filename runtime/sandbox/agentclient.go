package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// cancelGrace is how long a cancelled exec waits for the agent to send back
// what the killed command printed before giving up on it.
const cancelGrace = 2 * time.Second

// answerSlack is added to an exec's own timeout before the host stops
// waiting: the agent enforces the timeout and answers at once, so silence
// past it means the agent is wedged (a command may have stopped it: it runs
// as the same uid) and the machine is given up.
var answerSlack = 10 * time.Second

// errAgentSilent is why a machine whose agent stopped answering is given up;
// it matches ErrMachineExited, so the manager keeps /workspace and the next
// exec starts a fresh machine.
var errAgentSilent error = machineExited("its agent did not answer within the exec's timeout (a command may have stopped it)")

// machineExited is ErrMachineExited with why (not fmt.Errorf at package
// init: the agent links this file, and its start would run fmt's first
// use).
type machineExited string

func (e machineExited) Error() string { return ErrMachineExited.Error() + ": " + string(e) }
func (e machineExited) Unwrap() error { return ErrMachineExited }

// AgentClient is the host's end of the agent connection. Drivers give it the
// agent's stdout (r) and stdin (w). Exec is safe for concurrent use.
type AgentClient struct {
	w       io.WriteCloser
	wmu     sync.Mutex
	mu      sync.Mutex
	pending map[uint64]chan frame
	nextID  uint64
	err     error
	hello   chan struct{}
	done    chan struct{}
	closed  chan struct{}
	once    sync.Once
	extra   clientExtra // ports and live output (agentclient_ports.go)
}

// NewAgentClient starts reading frames from r.
func NewAgentClient(r io.Reader, w io.WriteCloser) *AgentClient {
	c := &AgentClient{w: w, pending: map[uint64]chan frame{}, hello: make(chan struct{}), done: make(chan struct{}), closed: make(chan struct{})}
	go c.readLoop(bufio.NewReaderSize(r, 64<<10))
	return c
}

func (c *AgentClient) readLoop(r *bufio.Reader) {
	helloSeen := false
	for {
		f, err := readFrame(r)
		if err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			close(c.done)
			c.extra.streams.closeAll(ErrMachineExited)
			return
		}
		switch f.Type {
		case frameHello:
			if !helloSeen {
				helloSeen = true
				close(c.hello)
			}
		case frameResult:
			c.mu.Lock()
			ch := c.pending[f.ID]
			delete(c.pending, f.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- f
			}
		default:
			c.other(f) // agentclient_ports.go
		}
	}
}

// Ready waits for the agent's hello.
func (c *AgentClient) Ready(ctx context.Context) error {
	select {
	case <-c.hello:
		return nil
	case <-c.done:
		return fmt.Errorf("%w before the agent said hello", ErrMachineExited)
	case <-ctx.Done():
		return fmt.Errorf("sandbox: waiting for the agent: %w", ctx.Err())
	}
}

// Done is closed when the connection to the agent ends.
func (c *AgentClient) Done() <-chan struct{} { return c.done }

// Close ends the connection; the agent kills its commands and exits, and
// execs still waiting return ErrMachineExited.
func (c *AgentClient) Close() error {
	err := c.w.Close()
	c.once.Do(func() { close(c.closed) })
	return err
}

func (c *AgentClient) send(f frame) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := writeFrame(c.w, f); err != nil {
		return fmt.Errorf("%w: %v", ErrMachineExited, err)
	}
	return nil
}

// Exec runs req in the machine. When ctx ends first, the command is killed
// and Exec returns what it printed so far together with ctx's error.
func (c *AgentClient) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	req = req.WithDefaults()
	if err := req.Validate(); err != nil {
		return ExecResult{}, err
	}
	ch := make(chan frame, 1)
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	// The guard runs from before the request is written: a stopped agent
	// stops reading too, and a large stdin then blocks the write itself.
	// Giving up closes the connection, which frees a blocked writer; the
	// caller stops the machine on errAgentSilent.
	guard := time.NewTimer(time.Duration(req.TimeoutSecs)*time.Second + answerSlack)
	defer guard.Stop()
	sent := make(chan error, 1)
	ef := frame{Type: frameExec, ID: id, Exec: &req}
	defer c.liveExec(ctx, &ef)() // agentclient_ports.go
	go func() { sent <- c.send(ef) }()
	select {
	case err := <-sent:
		if err != nil {
			return ExecResult{}, err
		}
	case <-guard.C:
		c.Close()
		return ExecResult{}, errAgentSilent
	}
	select {
	case f := <-ch:
		return resultOf(f)
	case <-c.done:
		return ExecResult{}, ErrMachineExited
	case <-c.closed:
		return ExecResult{}, ErrMachineExited
	case <-guard.C:
		c.Close()
		return ExecResult{}, errAgentSilent
	case <-ctx.Done():
		res, _ := c.cancel(id, ch)
		return res, ctx.Err()
	}
}

// cancel asks the agent to kill exec id and waits briefly for its output.
func (c *AgentClient) cancel(id uint64, ch chan frame) (ExecResult, error) {
	if err := c.send(frame{Type: frameCancel, ID: id}); err != nil {
		return ExecResult{}, err
	}
	select {
	case f := <-ch:
		return resultOf(f)
	case <-c.done:
		return ExecResult{}, ErrMachineExited
	case <-time.After(cancelGrace):
		return ExecResult{}, errors.New("sandbox: cancelled exec did not answer")
	}
}

func resultOf(f frame) (ExecResult, error) {
	switch {
	case f.Field != "":
		return ExecResult{}, &FieldError{Field: f.Field, Message: f.Error}
	case f.Error != "":
		return ExecResult{}, errors.New("sandbox: agent: " + f.Error)
	case f.Result == nil:
		return ExecResult{}, errors.New("sandbox: agent sent an empty result")
	}
	res := *f.Result
	res.Stdout, res.StdoutTruncated = clamp(res.Stdout, res.StdoutTruncated)
	res.Stderr, res.StderrTruncated = clamp(res.Stderr, res.StderrTruncated)
	return res, nil
}

// clamp enforces the output limit on the host too: the agent runs as the
// sandbox's user, so code in the sandbox could answer in its place.
func clamp(s string, truncated bool) (string, bool) {
	if len(s) <= MaxOutputBytes {
		return s, truncated
	}
	return s[:runeStart([]byte(s), MaxOutputBytes)], true
}
