package runtime

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/sandbox"
)

// Port previews (issue 16 item 5): a server listening inside a running
// sandbox is reached through the sandbox's agent, never through a host
// port. Sandbox.port opens one: it checks the permission, records the
// Action and answers a preview ticket, which the preview's URL carries (a
// capability: its page runs in an opaque origin, without the console's
// cookie, so its own requests cannot be authenticated by the cookie).
// Every request under the ticket checks again that its person still holds
// Sandbox.port.

// PreviewTicketTTL is how long a preview ticket is good for.
const PreviewTicketTTL = time.Hour

// previewKey signs this process's tickets: a restart ends every preview
// (the person opens it again from the Sandboxes tab).
var previewKey = func() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}()

// PortPreview is what Sandbox.port answers.
type PortPreview struct {
	Sandbox string    `json:"sandbox"`
	Port    int       `json:"port"`
	Ticket  string    `json:"ticket"`
	Path    string    `json:"path"` // where the preview is served, ticket included
	Expires time.Time `json:"expires_at"`
}

// ParsePort reads a port path parameter, naming the field and its limit.
func ParsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != s {
		return 0, invalid("port", "invalid_port", fmt.Sprintf("port %q must be a number from 1 to 65535", clipText(s, 20)))
	}
	return n, nil
}

func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// sandboxNotRunning is the answer for a port of a sandbox that is not running.
func sandboxNotRunning(id, state string) *Error {
	return conflict("sandbox_not_running", fmt.Sprintf("sandbox %s is %s: servers started in it ended with its machine. "+
		"Run the server again with an exec with background: true (it runs until killed or the sandbox suspends), then open the preview.", id, state))
}

// SandboxPortOpen is Sandbox.port: one open of a port's preview, an Action.
func (r *Runtime) SandboxPortOpen(ctx context.Context, p Principal, id string, port int) (PortPreview, error) {
	var out PortPreview
	err := r.run(ctx, p, "Sandbox.port", func(a *act) error {
		set := r.sandboxes()
		if set == nil {
			return errNoSandboxes
		}
		m, err := r.loadSandbox(ctx, id)
		if err != nil {
			return err
		}
		if m.State != string(sandbox.StateRunning) {
			return sandboxNotRunning(id, m.State)
		}
		exp := r.now().Add(PreviewTicketTTL)
		out = PortPreview{Sandbox: id, Port: port, Ticket: signPreview(id, port, p.ID, exp), Expires: exp.UTC()}
		out.Path = "/sandbox-preview/" + out.Ticket + "/"
		return nil
	}, id, "port "+strconv.Itoa(port))
	return out, err
}

func signPreview(id string, port int, userID string, exp time.Time) string {
	payload := strings.Join([]string{id, strconv.Itoa(port), userID, strconv.FormatInt(exp.Unix(), 10)}, "\n")
	mac := hmac.New(sha256.New, previewKey)
	mac.Write([]byte(payload))
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(payload)) + "." + enc.EncodeToString(mac.Sum(nil))
}

// errBadTicket is the answer for a preview ticket that is not one, expired,
// or whose person no longer holds Sandbox.port: the same for each, so a
// ticket's holder learns nothing more.
var errBadTicket = &Error{Kind: KindForbidden, Code: "preview_ticket", Title: "Preview link expired",
	Detail: "this preview link is not valid (it expired, the server restarted, or its person may no longer open ports): open the preview again from the Sandboxes tab"}

// PreviewTarget is the sandbox port a ticket opens.
type PreviewTarget struct {
	Sandbox string
	Port    int
}

// SandboxPortTicket checks a preview ticket for one request under it: its
// signature, its expiry, and that its person still holds Sandbox.port.
// Not an Action (a page's every image is a request); the open was.
func (r *Runtime) SandboxPortTicket(ctx context.Context, ticket string) (PreviewTarget, error) {
	enc := base64.RawURLEncoding
	b64, sig64, ok := strings.Cut(ticket, ".")
	if !ok || len(ticket) > 512 {
		return PreviewTarget{}, errBadTicket
	}
	payload, err1 := enc.DecodeString(b64)
	sig, err2 := enc.DecodeString(sig64)
	if err1 != nil || err2 != nil {
		return PreviewTarget{}, errBadTicket
	}
	mac := hmac.New(sha256.New, previewKey)
	mac.Write(payload)
	if !hmac.Equal(sig, mac.Sum(nil)) {
		return PreviewTarget{}, errBadTicket
	}
	parts := strings.Split(string(payload), "\n")
	if len(parts) != 4 {
		return PreviewTarget{}, errBadTicket
	}
	port, _ := strconv.Atoi(parts[1])
	exp, _ := strconv.ParseInt(parts[3], 10, 64)
	if !r.now().Before(time.Unix(exp, 0)) {
		return PreviewTarget{}, errBadTicket
	}
	var u models.User
	if err := r.db.WithContext(ctx).First(&u, "id = ?", parts[2]).Error; err != nil {
		return PreviewTarget{}, errBadTicket
	}
	if !r.stillHolds(ctx, r.principalFor(ctx, u, ""), "Sandbox.port", parts[0]) {
		return PreviewTarget{}, errBadTicket
	}
	return PreviewTarget{Sandbox: parts[0], Port: port}, nil
}

// stillHolds reports whether p holds verb on the noun target names, as the
// one check would find (roles, seats, scopes, tenant), without spending a
// limit or recording an Action: a preview's every request is checked, its
// open was the Action.
func (r *Runtime) stillHolds(ctx context.Context, p Principal, verb, target string) bool {
	c := r.scopeChain(ctx, verb, target)
	if !c.found {
		return false
	}
	if p.TenantID != "" && !slices.Contains(c.chain, Scope{ScopeTenant, p.TenantID}) {
		return false
	}
	for _, g := range r.grantsOf(ctx, p) {
		if g.Matches(verb) && grantCovers(g, verb, []nounChain{c}) {
			return true
		}
	}
	return false
}

// SandboxPortDial connects to a checked target's port through the agent,
// on the replica that runs the sandbox.
func (r *Runtime) SandboxPortDial(ctx context.Context, t PreviewTarget) (net.Conn, error) {
	if r.multiReplica() {
		m, err := r.loadSandbox(ctx, t.Sandbox)
		if err != nil {
			return nil, err
		}
		if url, peer, err := r.sandboxElsewhere(ctx, m); err != nil {
			return nil, err
		} else if url != "" {
			return peer.DialPort(ctx, url, "Sandbox.port", t.Sandbox, t.Port)
		}
	}
	return r.dialHere(ctx, t)
}

// dialHere connects to a port of a sandbox this replica runs.
func (r *Runtime) dialHere(ctx context.Context, t PreviewTarget) (net.Conn, error) {
	set := r.sandboxes()
	if set == nil {
		return nil, errNoSandboxes
	}
	conn, err := set.mgr.DialPort(ctx, t.Sandbox, t.Port)
	var pe *sandbox.PortError
	switch {
	case errors.Is(err, sandbox.ErrNotRunning):
		return nil, sandboxNotRunning(t.Sandbox, "not running")
	case errors.As(err, &pe):
		return nil, &Error{Kind: KindConflict, Code: "port_closed", Title: "Nothing listens on this port",
			Detail: fmt.Sprintf("nothing answers on port %d inside sandbox %s: start the server with an exec with background: true (it runs until killed or the sandbox suspends)", t.Port, t.Sandbox)}
	}
	return conn, err
}

// SandboxPorts lists what listens inside a running sandbox for the
// Sandboxes tab, whose listing is itself the recorded Sandbox.list: the
// same check as Sandbox.ports (its scope included), no Action of its own.
// nil when the person may not, or the sandbox is not running or does not
// answer within the context's time.
func (r *Runtime) SandboxPorts(ctx context.Context, p Principal, id string) []sandbox.ListenPort {
	set := r.sandboxes()
	if set == nil {
		return nil
	}
	if _, err := r.authorize(ctx, p, "Sandbox.ports", []string{id}, CheckInput{}); err != nil {
		return nil
	}
	ports, _ := r.listPorts(ctx, set, id)
	return ports
}
