package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/codemode"
	"github.com/subako/subako/runtime/verbs"
)

// maxDispatchAnswer bounds one verb's answer read back into a program.
const maxDispatchAnswer = 4 << 20

// dispatch runs one verb for a /mcp tool exactly as the API would: an HTTP
// request for the verb's canonical route with the caller's own Authorization,
// served by the server's router, with the caller (and the program's Action,
// parent) in its context. The answer's problem JSON becomes a CallError.
func (m *CodeMode) dispatch(ctx context.Context, c caller, parent, name string, input json.RawMessage) (json.RawMessage, error) {
	out, err := m.answer(ctx, c, parent, name, input)
	return out.Body, err
}

// answer is dispatch for a program: a download (a GET verb that answers no
// JSON, as Volume.get, Sandbox.readFile) is its bytes, which the program
// gets as the Uint8Array its type says ($.d.ts).
func (m *CodeMode) answer(ctx context.Context, c caller, parent, name string, input json.RawMessage) (codemode.Answer, error) {
	a, err := m.serveVerb(ctx, c, parent, name, input)
	return a.Answer, err
}

// verbAnswer is a verb's answer with where it came from: a download's
// route and media type, for a flat tool's result (downloadResult).
type verbAnswer struct {
	codemode.Answer
	target    string // the route it was served at, "/api/v1/…"
	mediaType string // its Content-Type
}

func (m *CodeMode) serveVerb(ctx context.Context, c caller, parent, name string, input json.RawMessage) (verbAnswer, error) {
	v, ok := verbs.Get(name)
	if !ok {
		for _, w := range m.verbs() {
			if w.Name == name {
				v, ok = w, true
			}
		}
	}
	if !ok || v.Body == verbs.BodyRaw {
		return verbAnswer{}, &codemode.CallError{Code: "unknown_verb", Status: 404, Message: "no verb " + name + " a program can call"}
	}
	req, err := verbRequest(ctx, v, input)
	if err != nil {
		return verbAnswer{}, err
	}
	target := req.URL.RequestURI()
	w, err := m.serve(ctx, c, parent, req)
	if err != nil {
		return verbAnswer{}, err
	}
	if w.status >= 300 {
		var pr Problem
		_ = json.Unmarshal(w.body.Bytes(), &pr)
		ce := &codemode.CallError{Code: pr.Code, Status: w.status, Field: pr.Field, MissingPermission: pr.MissingPermission, Message: pr.Detail}
		if ce.Message == "" {
			ce.Message = pr.Title
		}
		if ce.Code == "" {
			ce.Code = codeOf(w.status)
		}
		if ce.Message == "" {
			ce.Message = http.StatusText(w.status)
		}
		return verbAnswer{}, ce
	}
	if v.Output == nil && v.Method == http.MethodGet {
		return verbAnswer{Answer: codemode.Answer{Body: w.body.Bytes(), Bytes: true}, target: target, mediaType: w.header.Get("Content-Type")}, nil
	}
	if w.body.Len() == 0 {
		return verbAnswer{Answer: codemode.JSON(json.RawMessage("null"))}, nil
	}
	return verbAnswer{Answer: codemode.JSON(w.body.Bytes())}, nil
}

// serve runs req through the router as the caller, with the caller (and the
// program's Action, parent) in its context.
func (m *CodeMode) serve(ctx context.Context, c caller, parent string, req *http.Request) (*recorded, error) {
	client := c.client
	if parent != "" {
		client = "code mode"
	}
	req = req.WithContext(runtime.WithCaller(req.Context(), runtime.Caller{Client: client, Model: c.model, ParentAction: parent}))
	req.Header.Set("Authorization", c.authz)
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	req.Header.Set("User-Agent", "subako code mode")
	if c.model != "" {
		req.Header.Set(ModelHeader, c.model)
	}
	req.RemoteAddr, req.Host = c.remote, c.host
	w := &recorded{header: http.Header{}, status: http.StatusOK}
	broken := dispatchTo(m.api, w, req)
	if w.over {
		return nil, &codemode.CallError{Code: "answer_too_large", Status: 502,
			Message: fmt.Sprintf("%s %s answered more than %d bytes (4 MiB); ask for less (a filter, a limit)", req.Method, req.URL.Path, maxDispatchAnswer)}
	}
	if broken {
		return nil, &codemode.CallError{Code: "internal", Status: 500,
			Message: fmt.Sprintf("%s %s failed after its answer began; it was logged", req.Method, req.URL.Path)}
	}
	return w, nil
}

// dispatchTo serves req into w, and says whether the answer was broken off:
// the router cuts a connection (http.ErrAbortHandler) when a handler fails
// after its answer began, which here has no connection to cut and must not
// unwind through the program and the MCP SDK, which recovers nothing.
func dispatchTo(h http.Handler, w http.ResponseWriter, req *http.Request) (broken bool) {
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler {
				panic(p)
			}
			broken = true
		}
	}()
	h.ServeHTTP(w, req)
	return false
}

// verbRequest builds the HTTP request of a verb's route from its input:
// path parameters from the fields of their name, the rest as the JSON body
// (POST, PUT, PATCH) or the query (GET, DELETE).
func verbRequest(ctx context.Context, v verbs.Verb, input json.RawMessage) (*http.Request, error) {
	fields := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(input)) > 0 && string(bytes.TrimSpace(input)) != "null" {
		if err := json.Unmarshal(input, &fields); err != nil {
			return nil, &codemode.CallError{Code: "invalid_input", Status: 422, Field: "input", Message: "input must be an object of the verb's fields"}
		}
	}
	path, missing := verbs.FillPath(v.Path, func(name string) (string, bool) {
		var val string
		if json.Unmarshal(fields[name], &val) != nil || val == "" {
			return "", false
		}
		delete(fields, name)
		return val, true
	})
	if missing != "" {
		return nil, &codemode.CallError{Code: "invalid_input", Status: 422, Field: missing,
			Message: fmt.Sprintf("input.%s is required: %s's route is %s %s", missing, v.Name, v.Method, v.Path)}
	}
	target := "/api/v1" + path
	var body []byte
	switch {
	case v.Body == verbs.BodyWhole:
		body = fields["body"]
	case v.Method == http.MethodGet || v.Method == http.MethodDelete:
		q := url.Values{}
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			for _, s := range queryValues(fields[k]) {
				q.Add(k, s)
			}
		}
		if len(q) > 0 {
			target += "?" + q.Encode()
		}
	default:
		body, _ = json.Marshal(fields)
	}
	req, err := http.NewRequestWithContext(ctx, v.Method, target, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("code mode: %s: %w", v.Name, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// queryValues writes one input field as query values: strings bare, lists
// repeated, everything else as its JSON.
func queryValues(raw json.RawMessage) []string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil {
		var out []string
		for _, r := range list {
			out = append(out, queryValues(r)...)
		}
		return out
	}
	if string(raw) == "null" {
		return nil
	}
	return []string{string(raw)}
}

// recorded is a bounded in-memory http.ResponseWriter.
type recorded struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
	over   bool
}

func (a *recorded) Header() http.Header { return a.header }
func (a *recorded) WriteHeader(s int) {
	if !a.wrote {
		a.status, a.wrote = s, true
	}
}
func (a *recorded) Write(b []byte) (int, error) {
	a.WriteHeader(http.StatusOK)
	if a.body.Len()+len(b) > maxDispatchAnswer {
		a.over = true
		return 0, fmt.Errorf("code mode: answer over %d bytes", maxDispatchAnswer)
	}
	return a.body.Write(b)
}
func (a *recorded) Flush() {}
