package vault

import (
	"context"
	"io"
	"net/http"
)

// Attempt is what a sender and an attach function tell each other about one
// try of one request, on the request's context. A credential that can be
// refreshed (OAuth) asks for one retry after a 401; a credential that can no
// longer be used says why, so the request is not sent without it.
type Attempt struct {
	// Retry is set by the sender: the previous try was answered 401, so the
	// attach function refreshes before attaching, unless someone else has.
	Retry bool
	// Version is set by the attach function: which version of the credential
	// it attached. The sender carries it to the retry, so a refresh happens
	// only when that version is still the newest.
	Version int64
	// Refreshable is set by the attach function: a 401 is worth one retry.
	Refreshable bool
	// Err is set by the attach function when nothing could be attached: the
	// sender fails with it instead of sending.
	Err error
	// Expired is set by the attach function: the error to fail with if this
	// try is answered 401 anyway.
	Expired error
}

type attemptKey struct{}

// WithAttempt returns req carrying a for its attach function.
func WithAttempt(req *http.Request, a *Attempt) *http.Request {
	return req.WithContext(context.WithValue(req.Context(), attemptKey{}, a))
}

// AttemptOf is the Attempt a sender put on req, or nil when the sender does
// not retry (then the attach function only attaches).
func AttemptOf(req *http.Request) *Attempt {
	a, _ := req.Context().Value(attemptKey{}).(*Attempt)
	return a
}

// RoundTrip sends req through base with attach applied to a copy, and when
// the answer is 401 and the credential can be refreshed, sends it once more
// after attach has refreshed it. A body is replayed through GetBody; a
// request whose body cannot be replayed is not retried. A second 401 fails
// with the credential's Expired error, so the caller says which credential
// to reconnect rather than a bare 401.
func RoundTrip(base http.RoundTripper, req *http.Request, attach func(*http.Request)) (*http.Response, error) {
	a := &Attempt{}
	out := WithAttempt(req.Clone(req.Context()), a)
	if attach != nil {
		attach(out)
	}
	if a.Err != nil {
		closeBody(req)
		return nil, a.Err
	}
	resp, err := base.RoundTrip(out)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || !a.Refreshable {
		return resp, err
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return resp, nil
	}
	// Drop the refused answer unread: a server may echo the credential in it.
	_, _ = io.CopyN(io.Discard, resp.Body, 4096)
	resp.Body.Close()
	again := &Attempt{Retry: true, Version: a.Version}
	out = WithAttempt(req.Clone(req.Context()), again)
	if req.GetBody != nil {
		if out.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	attach(out)
	if again.Err != nil {
		closeBody(out)
		return nil, again.Err
	}
	resp, err = base.RoundTrip(out)
	if err == nil && resp.StatusCode == http.StatusUnauthorized && again.Expired != nil {
		_, _ = io.CopyN(io.Discard, resp.Body, 4096)
		resp.Body.Close()
		return nil, again.Expired
	}
	return resp, err
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// ExpiredError is a credential that can no longer be used until a person
// reconnects it: its refresh was refused, or its new token was refused too.
// Its text starts with credential_expired and names the vault and prefix.
type ExpiredError struct {
	Vault  string
	Prefix string
	Reason string
	// ClientCredentials: a machine-to-machine credential has no Reconnect;
	// a person sets it again with a client secret the server accepts.
	ClientCredentials bool
}

func (e *ExpiredError) Error() string {
	msg := "credential_expired: the OAuth credential for " + e.Prefix + " in vault " + e.Vault + " needs reconnecting"
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	if e.ClientCredentials {
		return msg + "; set it again on the vault's page with a client secret the server accepts"
	}
	return msg + "; reconnect it on the vault's page"
}
