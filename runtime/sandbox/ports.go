package sandbox

import (
	"context"
	"errors"
	"net"
)

// PortForwarder is a Machine that reaches its own loopback through its
// agent: the local driver's machines are.
type PortForwarder interface {
	DialPort(ctx context.Context, port int) (net.Conn, error)
	ListPorts(ctx context.Context) ([]ListenPort, error)
}

// ErrNotRunning is returned for a port of a sandbox with no running machine.
var ErrNotRunning = errors.New("sandbox: not running")

// ErrNoPorts is returned when the driver's machines cannot forward ports.
var ErrNoPorts = errors.New("sandbox: this driver's machines cannot forward ports")

// Unwrap is the machine a slot wraps.
func (m *slotMachine) Unwrap() Machine { return m.Machine }

// forwarder finds the PortForwarder in machine, through wrappers.
func forwarder(machine Machine) (PortForwarder, bool) {
	for range 8 {
		if pf, ok := machine.(PortForwarder); ok {
			return pf, true
		}
		w, ok := machine.(interface{ Unwrap() Machine })
		if !ok {
			return nil, false
		}
		machine = w.Unwrap()
	}
	return nil, false
}

// runningForwarder is sandbox id's running machine, if it has one. A port
// never starts or restores a sandbox: its servers did not outlive the
// suspension.
func (m *Manager) runningForwarder(id string) (PortForwarder, error) {
	m.mu.Lock()
	var b *box
	for _, x := range m.boxes {
		if x.id == id {
			b = x
			break
		}
	}
	m.mu.Unlock()
	if b == nil {
		return nil, ErrNotRunning
	}
	b.mu.Lock()
	machine := b.machine
	b.mu.Unlock()
	if machine == nil {
		return nil, ErrNotRunning
	}
	pf, ok := forwarder(machine)
	if !ok {
		return nil, ErrNoPorts
	}
	return pf, nil
}

// DialPort connects to port on sandbox id's loopback, through its agent.
func (m *Manager) DialPort(ctx context.Context, id string, port int) (net.Conn, error) {
	pf, err := m.runningForwarder(id)
	if err != nil {
		return nil, err
	}
	return pf.DialPort(ctx, port)
}

// ListPorts lists what listens inside sandbox id (ErrNotRunning when it is not).
func (m *Manager) ListPorts(ctx context.Context, id string) ([]ListenPort, error) {
	pf, err := m.runningForwarder(id)
	if err != nil {
		return nil, err
	}
	return pf.ListPorts(ctx)
}
