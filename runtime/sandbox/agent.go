package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// AgentEnv is set to "1" in the environment of a machine's first process: the
// server's own executable, started inside the sandbox, becomes its agent.
const AgentEnv = "SUBAKO_SANDBOX_AGENT"

// RunAgentIfRequested turns this process into a sandbox agent when AgentEnv is
// set, and exits when the host closes the connection. Call it first thing in
// main (and in TestMain), before flags are parsed or anything is opened.
func RunAgentIfRequested() {
	if os.Getenv(AgentEnv) != "1" {
		return
	}
	// Nothing the agent was handed beyond stdio may reach a command: the
	// driver closes what the server inherited, this covers any other driver.
	_ = unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err := ServeAgent(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "subako sandbox agent:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// ServeAgent answers exec frames from in on out until in is closed, then
// kills whatever is still running and returns.
func ServeAgent(in io.Reader, out io.Writer) error {
	a := &agent{out: out, running: map[uint64]context.CancelFunc{}, baseEnv: startEgress(agentBaseEnv())}
	// The first exec's init starts while the host hears the hello and
	// sends that exec: most machines are started for an exec.
	if a.warm.begin() {
		go a.warm.finish(a.baseEnv)
	}
	if err := a.send(frame{Type: frameHello}); err != nil {
		return fmt.Errorf("agent: hello: %w", err)
	}
	r := bufio.NewReaderSize(in, 64<<10)
	defer a.stopAll()
	for {
		f, err := readFrame(r)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		switch f.Type {
		case frameExec:
			a.start(f)
		case frameCancel:
			a.cancel(f.ID)
		default:
			a.other(f) // agent_ports.go
		}
	}
}

type agent struct {
	out     io.Writer
	wmu     sync.Mutex
	mu      sync.Mutex
	running map[uint64]context.CancelFunc
	wg      sync.WaitGroup
	baseEnv []string
	streams streamTable // forwarded ports (agent_ports.go)
	jobs    jobTable    // background jobs (agent_jobs.go)
	warm    warmPool    // the next exec's init, started between execs (agent_warm.go)
}

// run answers one exec frame: a command, or a background job's start, read
// or kill.
func (a *agent) run(ctx context.Context, f frame) (ExecResult, error) {
	if isJobRequest(*f.Exec) {
		return a.runJob(ctx, *f.Exec)
	}
	return runCommand(a.liveContext(ctx, f), *f.Exec, a.baseEnv, &a.warm)
}

func (a *agent) send(f frame) error {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	return writeFrame(a.out, f)
}

func (a *agent) start(f frame) {
	ctx, cancel := context.WithCancel(context.Background())
	a.mu.Lock()
	a.running[f.ID] = cancel
	a.mu.Unlock()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer a.cancel(f.ID)
		reply := frame{Type: frameResult, ID: f.ID}
		if f.Exec == nil {
			reply.Error = "exec frame without a request"
		} else if res, err := a.run(ctx, f); err != nil {
			reply.Error = err.Error()
			var fe *FieldError
			if errors.As(err, &fe) {
				reply.Field, reply.Error = fe.Field, fe.Message
			}
		} else {
			reply.Result = &res
		}
		// A failed write means the host is gone; the read loop sees EOF next.
		_ = a.send(reply)
		if f.Exec != nil && !isJobRequest(*f.Exec) {
			a.warm.refill(a.baseEnv) // after the answer: between execs
		}
	}()
}

func (a *agent) cancel(id uint64) {
	a.mu.Lock()
	cancel := a.running[id]
	delete(a.running, id)
	a.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (a *agent) stopAll() {
	a.mu.Lock()
	for id, cancel := range a.running {
		cancel()
		delete(a.running, id)
	}
	a.mu.Unlock()
	a.wg.Wait()
	a.warm.close()
	a.jobs.killAll()
}

// agentBaseEnv is the environment every command starts from: what the driver
// gave the agent, without the variable that makes a process an agent.
func agentBaseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, AgentEnv+"=") {
			env = append(env, kv)
		}
	}
	return env
}
