package runtime

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/subako/subako/runtime/vault"
)

// An MCP server gets the session's credential on every request, and may
// repeat it in what it answers: an error that quotes the request's
// Authorization header, say. What Subako itself says of a server's answer
// (a call's error, a read's or a get's error passed on to the agent, the
// Fetch tools page, Actions and logs) has the credential cut out first.

// credentialHidden stands where a credential was.
const credentialHidden = "[credential]"

// credentialValues are the strings through which attach's credential could
// be repeated: each header value it sets, the token after its scheme
// ("Bearer <token>"), and a Basic header's decoded user:password and password.
// Shorter ones than 4 bytes are left out (they would cut ordinary words).
func credentialValues(ctx context.Context, attach attachFunc) []string {
	if attach == nil {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://upstream.invalid/", nil)
	if err != nil {
		return nil
	}
	attach(req)
	return vault.HeaderSecrets(req.Header, nil)
}

// hideCredentials cuts each of secrets out of s, as written and as a JSON
// string would carry it.
func hideCredentials(s string, secrets []string) string {
	for _, secret := range secrets {
		s = strings.ReplaceAll(s, secret, credentialHidden)
		if b, err := json.Marshal(secret); err == nil {
			if quoted := string(b[1 : len(b)-1]); quoted != secret {
				s = strings.ReplaceAll(s, quoted, credentialHidden)
			}
		}
	}
	return s
}

// credentialSafeError is an error of a server's answer with the credential
// cut out of its text; errors.Is and errors.As still see what it wraps.
type credentialSafeError struct {
	msg string
	err error
}

func (e *credentialSafeError) Error() string { return e.msg }
func (e *credentialSafeError) Unwrap() error { return e.err }

// hideCredentialIn is err with attach's credential cut out of its text.
func hideCredentialIn(ctx context.Context, err error, attach attachFunc) error {
	if err == nil {
		return nil
	}
	secrets := credentialValues(ctx, attach)
	msg := hideCredentials(err.Error(), secrets)
	if msg == err.Error() {
		return err
	}
	return &credentialSafeError{msg: msg, err: err}
}

// hideCredentialsInJSON is a recorded answer with each of secrets cut out of
// its strings. Were the answer no longer valid JSON after that (a secret
// spanning an escape), it is replaced by a note rather than kept.
func hideCredentialsInJSON(out json.RawMessage, secrets []string) json.RawMessage {
	hidden := hideCredentials(string(out), secrets)
	if hidden == string(out) {
		return out
	}
	if !json.Valid([]byte(hidden)) {
		note := "the server's answer repeated the session's credential and was withheld"
		content, _ := json.Marshal([]map[string]string{{"type": "text", "text": note}})
		b, _ := json.Marshal(mcpRecord{Content: content, Text: note, IsError: true})
		return b
	}
	return json.RawMessage(hidden)
}

// hideCredentialsInTools is a server's tool list with each of secrets cut
// out of it (a description that quotes the request's header), before it is
// offered, pinned, diffed or shown. A list that would no longer read is
// dropped whole.
func hideCredentialsInTools(listed []storedTool, secrets []string) []storedTool {
	if len(secrets) == 0 {
		return listed
	}
	b, err := json.Marshal(listed)
	if err != nil {
		return listed
	}
	hidden := hideCredentials(string(b), secrets)
	if hidden == string(b) {
		return listed
	}
	var out []storedTool
	if json.Unmarshal([]byte(hidden), &out) != nil {
		return []storedTool{}
	}
	return out
}
