package runtime

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/subako/subako/models"
)

// Caller is who asked for a verb beyond the Principal: the client, the model
// when given, and the code-mode program a call runs inside (issue 14, "Every
// call records by, model and version"). Interfaces put it in the context
// (web's middleware for every request, /mcp for each $ call); run records it
// on the verb's Action when the verb did not say its own (an MCP client's
// name, a tool call's model).
type Caller struct {
	// Client: "console", "subako do", "API (<User-Agent>)", "MCP <name/version>", "code mode".
	Client string
	// Model: when given (header X-Subako-Model, MCP client info or input).
	Model string
	// ParentAction is the Action id of the program (`do`) this call runs inside.
	ParentAction string
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom is the Caller ctx carries (zero when none).
func CallerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// newAct starts a verb's record with the context's caller: actionRecord
// takes its client and model where the verb set none of its own.
func newAct(ctx context.Context) *act {
	return &act{caller: CallerFrom(ctx)}
}

// or is s, or else def when s is empty.
func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// versionOf fills a session's call's version where the verb did not: every
// call a session's token makes records the agent version it ran under.
func (r *Runtime) versionOf(ctx context.Context, p Principal, a *act) {
	if a.version != "" || p.Kind != PrincipalSession || p.SessionID == "" {
		return
	}
	var s models.Session
	if r.db.WithContext(context.WithoutCancel(ctx)).Select("version_id").Where("id = ?", p.SessionID).Take(&s).Error == nil {
		a.version = s.VersionID
	}
}

// MaxModelBytes bounds a caller's model name (X-Subako-Model).
const MaxModelBytes = 200

// CheckModel refuses a model name over MaxModelBytes or that is not text;
// field names where it came from (the header).
func CheckModel(field, model string) error {
	switch {
	case len(model) > MaxModelBytes:
		return invalid(field, "model_too_long", fmt.Sprintf("%s is %d bytes; the limit is %d bytes", field, len(model), MaxModelBytes))
	case !utf8.ValidString(model) || strings.IndexFunc(model, unicode.IsControl) >= 0:
		return invalid(field, "invalid_text", field+" must be UTF-8 text without control characters")
	}
	return nil
}

// ClientLabel bounds text a client says of itself (a User-Agent) for a
// record: valid UTF-8, no control characters, at most n bytes.
func ClientLabel(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return truncate(s, n)
}
