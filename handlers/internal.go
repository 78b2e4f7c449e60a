package handlers

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/sandbox"
)

// The internal channel between replicas (issue 19): a replica forwards a
// sandbox's exec, files and ports to the replica that runs it. Routes sit
// under /internal/ on the public listener and answer only a request that
// carries the shared --internal-secret as a bearer token (404 on a replica
// without one, 401 with a wrong one). The verb was checked and recorded on
// the replica that forwarded: these handlers run the sandbox's part only.

// InternalAuth refuses a request without the shared secret; the compare
// takes the same time whatever the token.
func InternalAuth(secret string) echo.MiddlewareFunc {
	want := sha256.Sum256([]byte(secret))
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if secret == "" {
				return c.JSON(http.StatusNotFound, map[string]string{"error": "not found"})
			}
			token := trimBearer(c.Request().Header.Get("Authorization"))
			got := sha256.Sum256([]byte(token))
			if token == "" || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				return c.JSON(http.StatusUnauthorized, map[string]string{"error": "this route is for replicas: it needs the shared --internal-secret"})
			}
			return next(c)
		}
	}
}

func trimBearer(auth string) string {
	const p = "Bearer "
	if len(auth) > len(p) && auth[:len(p)] == p {
		return auth[len(p):]
	}
	return ""
}

// WireError carries a runtime error from the owner back to the replica
// that forwarded, which answers it as if it were its own.
type WireError struct {
	Kind           runtime.Kind         `json:"kind"`
	Code           string               `json:"code,omitempty"`
	Title          string               `json:"title,omitempty"`
	Detail         string               `json:"detail"`
	Field          string               `json:"field,omitempty"`
	Fields         []runtime.FieldError `json:"fields,omitempty"`
	RetryAfterSecs int                  `json:"retry_after_secs,omitempty"`
	Plain          bool                 `json:"plain,omitempty"` // not a runtime.Error: only its text
}

// ToWire is err as sent between replicas (nil for nil).
func ToWire(err error) *WireError {
	if err == nil {
		return nil
	}
	if e, ok := runtime.AsError(err); ok {
		return &WireError{Kind: e.Kind, Code: e.Code, Title: e.Title, Detail: e.Detail, Field: e.Field, Fields: e.Fields,
			RetryAfterSecs: int(e.RetryAfter / time.Second)}
	}
	return &WireError{Plain: true, Detail: err.Error()}
}

// Err is the error w stands for.
func (w *WireError) Err() error {
	if w == nil {
		return nil
	}
	if w.Plain {
		return errors.New(w.Detail)
	}
	return &runtime.Error{Kind: w.Kind, Code: w.Code, Title: w.Title, Detail: w.Detail, Field: w.Field, Fields: w.Fields,
		RetryAfter: time.Duration(w.RetryAfterSecs) * time.Second}
}

// ForwardedExec is the body of POST /internal/v1/exec.
type ForwardedExec struct {
	Verb      string          `json:"verb"`
	SessionID string          `json:"session_id"`
	CallID    string          `json:"call_id"`
	Grant     json.RawMessage `json:"grant"`
	Input     json.RawMessage `json:"input"`
}

// ExecLine is one line of the exec's answer (NDJSON): output while the
// command runs, then the result.
type ExecLine struct {
	Stream string          `json:"stream,omitempty"`
	Data   []byte          `json:"data,omitempty"`
	Done   bool            `json:"done,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *WireError      `json:"error,omitempty"`
}

func internalError(c echo.Context, err error) error {
	status := http.StatusInternalServerError
	if e, ok := runtime.AsError(err); ok {
		status = statusOf(e.Kind)
	}
	return c.JSON(status, map[string]*WireError{"error": ToWire(err)})
}

// InternalExec runs a forwarded exec, streaming its output as it comes.
func (h *Handlers) InternalExec(c echo.Context) error {
	var in ForwardedExec
	dec := json.NewDecoder(io.LimitReader(c.Request().Body, 4<<20))
	if err := dec.Decode(&in); err != nil {
		return c.JSON(http.StatusBadRequest, map[string]string{"error": "the forwarded exec is not valid JSON: " + err.Error()})
	}
	e := runtime.SandboxExec{SessionID: in.SessionID, CallID: in.CallID, Input: in.Input}
	if err := json.Unmarshal(in.Grant, &e.Grant); err != nil {
		return c.JSON(http.StatusBadRequest, map[string]string{"error": "the forwarded grant is not valid: " + err.Error()})
	}
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	w.Flush()
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	send := func(l ExecLine) {
		mu.Lock()
		defer mu.Unlock()
		if enc.Encode(l) == nil {
			w.Flush()
		}
	}
	ctx := sandbox.WithOutput(c.Request().Context(), func(stream string, data []byte) {
		send(ExecLine{Stream: stream, Data: append([]byte(nil), data...)})
	})
	out, err := h.RT.ForwardedExec(ctx, in.Verb, e)
	send(ExecLine{Done: true, Result: out, Error: ToWire(err)})
	return nil
}

// InternalFiles lists one folder of a sandbox this replica runs.
func (h *Handlers) InternalFiles(c echo.Context) error {
	l, err := h.RT.ForwardedFiles(c.Request().Context(), c.Param("sandbox"), c.QueryParam("dir"))
	if err != nil {
		return internalError(c, err)
	}
	return c.JSON(http.StatusOK, l)
}

// EntryHeader carries a read file's entry (base64 of its JSON).
const EntryHeader = "X-Subako-Entry"

// InternalReadFile answers one file's bytes, its entry in a header.
func (h *Handlers) InternalReadFile(c echo.Context) error {
	data, e, err := h.RT.ForwardedReadFile(c.Request().Context(), c.Param("sandbox"), c.QueryParam("path"))
	if err != nil {
		return internalError(c, err)
	}
	b, _ := json.Marshal(e)
	c.Response().Header().Set(EntryHeader, base64.RawURLEncoding.EncodeToString(b))
	return c.Blob(http.StatusOK, "application/octet-stream", data)
}

// InternalWriteFile writes one file of a sandbox this replica runs.
func (h *Handlers) InternalWriteFile(c echo.Context) error {
	e, err := h.RT.ForwardedWriteFile(c.Request().Context(), c.Param("sandbox"), c.QueryParam("path"), c.Request().Body)
	if err != nil {
		return internalError(c, err)
	}
	return c.JSON(http.StatusOK, e)
}

// InternalPorts lists what listens in a sandbox this replica runs.
func (h *Handlers) InternalPorts(c echo.Context) error {
	ports, err := h.RT.ForwardedPorts(c.Request().Context(), c.Param("sandbox"))
	if err != nil {
		return internalError(c, err)
	}
	return c.JSON(http.StatusOK, ports)
}

// PortUpgrade is the Upgrade token of a forwarded port connection.
const PortUpgrade = "subako-port"

// InternalDialPort connects a forwarded preview to a port: the answer is
// 101 Switching Protocols, then the connection's bytes both ways.
func (h *Handlers) InternalDialPort(c echo.Context) error {
	port, err := strconv.Atoi(c.Param("port"))
	if err != nil || port < 1 || port > 65535 {
		return c.JSON(http.StatusBadRequest, map[string]string{"error": "port must be a number from 1 to 65535"})
	}
	if c.Request().Header.Get("Upgrade") != PortUpgrade {
		return c.JSON(http.StatusBadRequest, map[string]string{"error": "a port connection needs Upgrade: " + PortUpgrade})
	}
	conn, err := h.RT.ForwardedDialPort(c.Request().Context(), c.Param("sandbox"), port)
	if err != nil {
		return internalError(c, err)
	}
	defer conn.Close()
	raw, buf, err := http.NewResponseController(c.Response().Writer).Hijack()
	if err != nil {
		return err
	}
	defer raw.Close()
	_, _ = buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + PortUpgrade + "\r\n\r\n")
	if err := buf.Flush(); err != nil {
		return nil
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(conn, buf); closeWrite(conn); done <- struct{}{} }()
	go func() { _, _ = io.Copy(raw, conn); closeWrite(raw); done <- struct{}{} }()
	<-done
	select { // the other way may still be sending what was asked
	case <-done:
	case <-time.After(30 * time.Second):
	}
	return nil
}

func closeWrite(c any) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}
