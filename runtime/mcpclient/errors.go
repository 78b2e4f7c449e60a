package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/subako/subako/runtime/egress"
	"github.com/subako/subako/runtime/vault"
)

// The kinds of failure, for errors.Is on an *Error.
var (
	ErrCredentialRefused = errors.New("credential refused")
	ErrTimeout           = errors.New("no answer in time")
	ErrUnreachable       = errors.New("server not reachable")
	ErrRedirect          = errors.New("redirect to another origin")
	ErrServer            = errors.New("server answered with an error")
	ErrUnknownTool       = errors.New("unknown tool")
	ErrProtocol          = errors.New("mcp exchange failed")
	// ErrTooLarge: one answer of the server passed Options.MaxResponseBytes.
	ErrTooLarge = errors.New("answer too large")
	// ErrEgressRefused: the server's address is private or loopback and the
	// pool does not allow private egress. The *Error also matches
	// egress.ErrRefused.
	ErrEgressRefused = errors.New("egress refused")
)

// codeRejected is the code the SDK gives its own transport failures; an
// error with it never came from the server.
const codeRejected = -32005

// Error is a failed exchange with one MCP server. Its message starts with
// "mcp server <url>" and says what a user can do about it.
type Error struct {
	URL    string
	Kind   error  // one of the Err* values above
	Detail string // what went wrong, after the URL
	Err    error  // the underlying cause, if any
}

func (e *Error) Error() string { return "mcp server " + e.URL + " " + e.Detail }

func (e *Error) Unwrap() []error { return []error{e.Kind, e.Err} }

// statusError is how the transport reports a refused credential: the response
// is dropped unread, so nothing the server wrote reaches an error message.
type statusError struct{ code int }

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d", e.code) }

// redirectError is a redirect that was not followed.
type redirectError struct{ to string }

func (e *redirectError) Error() string { return "redirect to " + e.to }

// unknownToolError is a call to a tool the server does not list.
type unknownToolError struct{ tool string }

func (e *unknownToolError) Error() string { return fmt.Sprintf("no tool %q", e.tool) }

// tooLargeError is an answer cut at the pool's limit.
type tooLargeError struct{ limit int64 }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("answer larger than %d bytes", e.limit)
}

// timeoutError marks a deadline this package set, as opposed to the caller's.
type timeoutError struct{ after time.Duration }

func (e *timeoutError) Error() string { return "no answer within " + e.after.String() }

// explain turns whatever the SDK or the network returned into an *Error.
// hasCredential says whether a credential was attached, which decides how a
// 401 is worded.
func explain(rawURL string, hasCredential bool, err error) error {
	e := &Error{URL: redact(rawURL), Err: err}
	var (
		status   *statusError
		redirect *redirectError
		timeout  *timeoutError
		unknown  *unknownToolError
		rpc      *jsonrpc.Error
		dns      *net.DNSError
		netErr   *net.OpError
		refused  *egress.RefusedError
		tooLarge *tooLargeError
		expired  *vault.ExpiredError
	)
	switch {
	case errors.As(err, &tooLarge):
		e.Kind, e.Detail = ErrTooLarge, fmt.Sprintf("sent an answer larger than %d bytes (%s), the most read from one answer (--mcp-max-response-bytes); it was dropped unread past that",
			tooLarge.limit, sizeWords(tooLarge.limit))
	case errors.As(err, &expired):
		e.Kind, e.Detail = ErrCredentialRefused, "refused the credential: "+expired.Error()
	case errors.As(err, &refused):
		e.Kind, e.Detail = ErrEgressRefused, "is not reachable: "+refused.Error()
	case errors.As(err, &status) && !hasCredential:
		e.Kind, e.Detail = ErrCredentialRefused, fmt.Sprintf("requires a credential (%d) and the session's vaults hold none for this URL", status.code)
	case errors.As(err, &status):
		e.Kind, e.Detail = ErrCredentialRefused, fmt.Sprintf("refused the credential (%d)", status.code)
	case errors.As(err, &unknown):
		e.Kind, e.Detail = ErrUnknownTool, fmt.Sprintf("has no tool %q; discover its tools again to see what it offers", unknown.tool)
	case errors.As(err, &timeout):
		e.Kind, e.Detail = ErrTimeout, fmt.Sprintf("did not answer within %s", timeout.after)
	case errors.As(err, &redirect):
		e.Kind, e.Detail = ErrRedirect, fmt.Sprintf("redirected to %s, another origin; not followed, so the credential stays with its server", redirect.to)
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Kind, e.Detail = ErrUnreachable, "refused the connection: nothing is listening there"
	case errors.As(err, &dns):
		e.Kind, e.Detail = ErrUnreachable, fmt.Sprintf("is not reachable: host %q not found", dns.Name)
	case errors.As(err, &netErr):
		e.Kind, e.Detail = ErrUnreachable, fmt.Sprintf("is not reachable: %v", netErr.Err)
	case errors.As(err, &rpc) && rpc.Code != codeRejected:
		e.Kind, e.Detail = ErrServer, fmt.Sprintf("answered with an error: %s (code %d)", cut(rpc.Message, maxServerMessage), rpc.Code)
	case errors.Is(err, context.Canceled):
		// The caller's own context ended: say so rather than blame the server.
		e.Kind, e.Detail = context.Canceled, "was still working when the caller gave up"
	case errors.Is(err, context.DeadlineExceeded):
		e.Kind, e.Detail = context.DeadlineExceeded, "was still working at the caller's deadline"

	default:
		e.Kind, e.Detail = ErrProtocol, fmt.Sprintf("failed: %v", err)
	}
	e.Detail = cut(scrub(e.Detail, rawURL), maxDetail)
	return e
}

// A server writes its error messages itself, up to the whole answer's
// limit; the message goes into logs, stored calls and pages, so only its
// start is kept, and no detail is longer than a page can show.
const (
	maxServerMessage = 512
	maxDetail        = 2048
)

// redact keeps only the scheme, host and path of a URL before it goes into
// a message: user info, query and fragment are where tokens hide, and the
// message reaches the model and the logs.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		// Nothing can be told apart safely in what did not parse.
		return "(an unparsable URL)"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String()
}

// scrub redacts the URL, and removes its user info, query and fragment on
// their own, wherever a lower layer's message repeated them (the SDK and
// net/http name the URL they failed on).
func scrub(detail, rawURL string) string {
	detail = strings.ReplaceAll(detail, rawURL, redact(rawURL))
	u, err := url.Parse(rawURL)
	if err != nil {
		return detail
	}
	for _, part := range []string{"?" + u.RawQuery, "#" + u.EscapedFragment(), "#" + u.Fragment, u.User.String() + "@"} {
		if len(part) > 1 {
			detail = strings.ReplaceAll(detail, part, "")
		}
	}
	return detail
}

// sizeWords says a byte count the way the docs give limits: 4 MiB, 8 KiB.
func sizeWords(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
