package runtime

import (
	"fmt"
	"strings"
	"time"

	"github.com/subako/subako/models"
)

// A session's agent token acts only on its own session (SessionPrincipal)
// and lives as long as the session, or less when Session.create set
// token_expires: past it the token answers 401 token_expired while the
// session itself stays open for people to read.

// sessionTokenExpiry reads Session.create's token_expires ("2h", "30d"):
// nil when empty (the token ends with the session).
func sessionTokenExpiry(now time.Time, s string) (*time.Time, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	life, err := ParseLifetime(s)
	if err != nil {
		e, _ := AsError(err)
		detail := strings.Replace(e.Detail, "expires", "token_expires", 1)
		return nil, invalid("token_expires", e.Code, detail)
	}
	at := now.Add(life)
	return &at, nil
}

// sessionTokenExpired refuses an agent token past its session's token_expires.
func (r *Runtime) sessionTokenExpired(s models.Session) error {
	if s.TokenExpiresAt == nil || r.now().Before(*s.TokenExpiresAt) {
		return nil
	}
	return &Error{Kind: KindUnauthenticated, Code: "token_expired", Title: "Session token expired",
		Detail: fmt.Sprintf("this session's agent token expired at %s (token_expires, set when the session was created); the session is still open: start a new session to go on",
			s.TokenExpiresAt.UTC().Format(time.RFC3339))}
}
