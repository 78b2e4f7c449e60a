package local

import (
	"context"
	"net"

	"github.com/subako/subako/runtime/sandbox"
)

// DialPort implements sandbox.PortForwarder: the agent dials the
// sandbox's loopback, which the host cannot reach (its own netns).
func (m *Machine) DialPort(ctx context.Context, port int) (net.Conn, error) {
	return m.client.DialPort(ctx, port)
}

// ListPorts implements sandbox.PortForwarder.
func (m *Machine) ListPorts(ctx context.Context) ([]sandbox.ListenPort, error) {
	return m.client.ListPorts(ctx)
}
