package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/fn"
	"github.com/subako/subako/runtime/tools"
)

// Tool call statuses. queued, running, awaiting_approval and waiting_client
// are open; succeeded, failed and refused are final.
const (
	CallQueued           = "queued"
	CallRunning          = "running"
	CallAwaitingApproval = "awaiting_approval"
	CallWaitingClient    = "waiting_client"
	CallSucceeded        = "succeeded"
	CallFailed           = "failed"
	CallRefused          = "refused"
)

var openStatuses = []string{CallQueued, CallRunning, CallAwaitingApproval, CallWaitingClient}

func finalStatus(s string) bool { return s == CallSucceeded || s == CallFailed || s == CallRefused }

// Limits of a call's input and output. The input is kept whole (the executor
// runs what was asked, e.g. a sandbox's 1 MiB stdin); an output past
// maxOutputBytes is cut and marked, and the caller is told.
const (
	maxOutputBytes = 1 << 20
	maxInputBytes  = 2 << 20 // a larger input is refused outright
	maxWait        = 10 * time.Minute
	// maxCallErrorBytes keeps a failed call's error whole enough to hold a
	// function's stderr (16 KiB) with the words around it.
	maxCallErrorBytes = 20 << 10
)

// ToolCallInput is ToolCall.create's body.
type ToolCallInput struct {
	Session     string          `json:"session" param:"session"`
	Tool        string          `json:"tool"`
	Input       json.RawMessage `json:"input"`
	Model       string          `json:"model"`
	WaitSeconds *float64        `json:"wait_seconds"`
	// ClientInfo is the client making the call (an MCP client's
	// name/version), set by the endpoint that received it.
	ClientInfo string `json:"-"`
}

// ToolCallView is a tool call as API.md shows it.
type ToolCallView struct {
	ID              string          `json:"id"`
	Session         string          `json:"session"`
	Tool            string          `json:"tool"`
	Kind            string          `json:"kind"` // mcp, skill, sandbox, fn, builtin, client: says how to read output
	Status          string          `json:"status"`
	Verdict         string          `json:"verdict"`
	PolicySource    string          `json:"policy_source,omitempty"`
	Reason          string          `json:"reason"`
	Input           json.RawMessage `json:"input,omitempty"`
	InputTruncated  bool            `json:"input_truncated,omitempty"`
	Output          json.RawMessage `json:"output"`
	OutputTruncated bool            `json:"output_truncated,omitempty"`
	Error           string          `json:"error"`
	Model           string          `json:"model"`
	Version         string          `json:"version"`
	By              string          `json:"by"`
	Client          string          `json:"client,omitempty"`
	ClientInfo      string          `json:"client_info,omitempty"`
	PolicyRule      string          `json:"policy_rule,omitempty"`
	Approval        *ApprovalView   `json:"approval,omitempty"`
	CreatedAt       time.Time       `json:"created_at"`
	StartedAt       *time.Time      `json:"started_at"`
	FinishedAt      *time.Time      `json:"finished_at"`
	DurationMS      int64           `json:"duration_ms"`
	// Volume lists what a function call or a sandbox exec read, wrote and
	// deleted in the session's volume (volumes_fn.go); ToolCall.get and
	// ToolCall.list fill it.
	Volume []fn.VolumeAccess `json:"volume,omitempty"`
	// Program is the Action of the code-mode program (Program.run) the
	// call ran inside.
	Program string `json:"program,omitempty"`
}

// Open reports whether the call has not reached a final status yet.
func (v ToolCallView) Open() bool { return !finalStatus(v.Status) }

func callView(c models.ToolCall) ToolCallView {
	v := ToolCallView{ID: c.ID, Session: c.SessionID, Tool: c.Tool, Kind: c.Kind, Status: c.Status, Verdict: c.Verdict, PolicySource: c.PolicySource,
		Reason: c.Reason, InputTruncated: c.InputTruncated, OutputTruncated: c.OutputTruncated, Error: c.Error, Model: c.Model,
		Version: c.VersionID, By: c.ByLabel, Client: c.Client, ClientInfo: c.ClientInfo, PolicyRule: c.PolicyRule, CreatedAt: c.CreatedAt, StartedAt: c.StartedAt,
		FinishedAt: c.FinishedAt, DurationMS: c.DurationMS, Program: c.Program}
	v.Input = recordedJSON(c.Input, c.InputTruncated)
	if c.Output != "" {
		v.Output = recordedJSON(c.Output, c.OutputTruncated)
	}
	return v
}

// recordedJSON gives a recorded value back as JSON; a truncated one is no
// longer valid JSON and is returned as a string.
func recordedJSON(s string, truncated bool) json.RawMessage {
	if s == "" {
		return nil
	}
	if !truncated && json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

func clip(s string) (string, bool) {
	if len(s) <= maxOutputBytes {
		return s, false
	}
	return s[:maxOutputBytes], true
}

// ToolCallCreate is ToolCall.create: resolve the tool, check the input against
// its schema, apply the policy, and run it or ask first. It waits up to
// wait_seconds for the call to finish; an open call comes back as it stands.
func (r *Runtime) ToolCallCreate(ctx context.Context, p Principal, in ToolCallInput) (ToolCallView, error) {
	var out ToolCallView
	var callID, sessionID string
	var started *callHandle
	if in.ClientInfo == "" {
		in.ClientInfo = CallerFrom(ctx).Client // the call's record names its client as its Action does
	}
	err := r.runIn(ctx, p, "ToolCall.create", r.callCheckInput(in), func(a *act) error {
		a.model, a.client = in.Model, in.ClientInfo
		if in.WaitSeconds != nil && *in.WaitSeconds < 0 {
			return invalid("wait_seconds", "out_of_range", fmt.Sprintf("wait_seconds must be 0 or more (0 answers at once; waits over %d are cut to %d)", int(maxWait.Seconds()), int(maxWait.Seconds())))
		}
		s, err := r.hotSession(ctx, p, in.Session)
		if err != nil {
			return err
		}
		a.version = s.VersionID
		if s.State != SessionActive {
			return conflict("session_ended", "the session has ended: no more tools can be called in it")
		}
		call, h, err := r.newCall(ctx, p, s, in, a)
		if err != nil {
			return err
		}
		callID, sessionID, started = call.ID, s.ID, h
		return nil
	}, in.Session)
	if err != nil {
		return out, err
	}
	if started != nil {
		out, err = r.waitStarted(ctx, started, waitDuration(in.WaitSeconds))
	} else {
		out, err = r.waitCall(ctx, callID, sessionID, waitDuration(in.WaitSeconds))
	}
	if err == nil {
		// Refused for want of room: a 429 the caller can retry, the call recorded.
		err = capacityRefusal(out)
	}
	if err == nil {
		err = changedRefusal(out)
	}
	return out, err
}

func waitDuration(secs *float64) time.Duration {
	if secs == nil {
		return 30 * time.Second
	}
	d := time.Duration(*secs * float64(time.Second))
	return min(max(d, 0), maxWait)
}

// newCall records a call with its verdict and starts it when it is allowed.
// The call, its approval if it asks first, and ToolCall.create's Action are
// one transaction: a crash leaves all of them or none. An allowed call is
// recorded running (no queued step that nobody reads), and its result is
// handed to the caller in memory through the returned handle.
func (r *Runtime) newCall(ctx context.Context, p Principal, s models.Session, in ToolCallInput, a *act) (models.ToolCall, *callHandle, error) {
	rep, err := r.sessionToolsReport(ctx, s, false)
	if err != nil {
		return models.ToolCall{}, nil, err
	}
	t, found := findTool(rep.all, in.Tool)
	if !found {
		return models.ToolCall{}, nil, rep.unknownTool(p, in.Tool)
	}
	if t.pinChanged != "" {
		call, err := r.refuseChanged(ctx, p, s, in, t, a)
		return call, nil, err
	}
	input, err := checkInput(t, in.Input)
	if err != nil {
		return models.ToolCall{}, nil, err
	}
	call := models.ToolCall{ID: newID("call"), SessionID: s.ID, VersionID: s.VersionID, Tool: t.Name, Kind: t.Kind,
		GrantName: t.Grant, ToolName: t.Tool.Tool, Input: string(input), Model: truncate(in.Model, 200),
		ByKind: string(p.Kind), ByID: p.ID, ByLabel: p.Label, Client: t.Client, ClientInfo: truncate(in.ClientInfo, 200), CreatedAt: r.now(),
		ReplicaID: r.replica.ID} // the replica running it: recovery elsewhere leaves it alone (reaper.go)
	dec := tools.Decide(t.Tool, input) // argument rules (argrules.go)
	t.Policy, t.PolicySource = dec.Policy, dec.Source
	policy, source := r.policyFor(ctx, s.ID, t)
	call.Verdict, call.PolicySource, call.PolicyRule = policy, source, decisionWhy(dec, source, t.Tool.Tool)
	switch policy {
	case tools.PolicyDeny:
		call.Status, call.Reason, call.FinishedAt = CallRefused, "denied by the version's policy", ptr(r.now())
	case tools.PolicyAsk:
		call.Status, call.Reason = CallAwaitingApproval, "waiting for an approver"
	default:
		call.Status, call.StartedAt = CallRunning, &call.CreatedAt
	}
	ranNow := call.Status == CallRunning && readNow(t)
	if ranNow {
		// A read of Subako's own memory: run, then recorded once, finished.
		if r.endedSinceCheck(ctx, call) {
			call.Status, call.Reason, call.FinishedAt = CallRefused, "the session ended", ptr(r.now())
		} else {
			out, rerr := r.runSkill(ctx, t, input)
			call = *finished(call, r.finishUpdate(call, out, rerr))
		}
	}
	a.target(call.ID)
	rec := r.actionRecord(p, "ToolCall.create", a, VerdictAllowed, "")
	if policy == tools.PolicyDeny {
		// Refused by policy: the audit log says so, and why (callaudit.go).
		rec = r.actionRecord(p, "ToolCall.create", a, VerdictRefused, policyRefusal(source))
	}
	rec.PolicyRule = call.PolicyRule
	call.Program = rec.ParentID
	record := func(tx *gorm.DB) error {
		if err := tx.Create(&call).Error; err != nil {
			return err
		}
		if err := tx.Create(&rec).Error; err != nil {
			return err
		}
		if policy != tools.PolicyAsk {
			return nil
		}
		ap := models.Approval{ID: newID("apr"), ToolCallID: call.ID, SessionID: s.ID, TenantID: s.TenantID, AgentID: s.AgentID, Tool: call.Tool, GrantName: call.GrantName, State: ApprovalPending,
			Scope: "call", CreatedAt: r.now(), ExpiresAt: r.now().Add(r.opts.ApprovalTimeout)}
		if err := tx.Create(&ap).Error; err != nil {
			return err
		}
		return r.enqueueNotices(tx, ap, call, s)
	}
	switch {
	case r.db.Dialect != models.Postgres || policy == tools.PolicyAsk:
		// On SQLite, one transaction with other callers' writes queued
		// meanwhile (sqlitebatch.go).
		err = r.hotWrite(ctx, true, record)
	case call.Status == CallRunning:
		// PostgreSQL: one statement, committed without waiting for the
		// log's flush; the flush runs while the tool does (pgflush.go).
		err = r.writeCallAndAction(ctx, r.db.NoFlushWait(), &call, &rec)
	default:
		// PostgreSQL, a call finished already (a skill's read, a refusal):
		// one statement, committed synchronously.
		err = r.writeCallAndAction(ctx, r.db.DB, &call, &rec)
	}
	if err != nil {
		return call, nil, fmt.Errorf("runtime: record call: %w", err)
	}
	a.recorded = true
	if call.Status == CallRunning && r.db.Dialect == models.Postgres {
		r.startOpeningFlush(call.ID) // durable while the tool runs (pgflush.go)
	}
	attachProgress(ctx, call.ID) // callprogress.go
	r.publish(Event{Kind: "call", ID: call.ID, SessionID: s.ID, State: call.Status})
	if policy == tools.PolicyAsk {
		r.publish(Event{Kind: "approval", ID: call.ID, SessionID: s.ID, State: ApprovalPending})
	}
	if call.Status != CallRunning {
		if ranNow {
			h := &callHandle{call: call, done: make(chan struct{})}
			h.deliver(&call)
			return call, h, nil
		}
		return call, nil, nil
	}
	h := &callHandle{call: call, opened: rec, done: make(chan struct{})}
	go r.runStarted(call, s, &t, h)
	return call, h, nil
}

func ptr[T any](v T) *T { return &v }

// findTool finds a tool by full name, offered or denied; a denied tool is
// still found, so the call can be refused and recorded as such.
func findTool(all []offered, name string) (offered, bool) {
	for _, t := range all {
		if t.Name == name && t.Name != "" {
			return t, true
		}
	}
	return offered{}, false
}

// policyFor is the effective policy: the version's, except that an approver's
// "allow for this session" turns ask into allow for that exact tool.
func (r *Runtime) policyFor(ctx context.Context, sessionID string, t offered) (policy, source string) {
	switch {
	case !t.Offered:
		return tools.PolicyDeny, t.PolicySource
	case t.Policy == "":
		return tools.PolicyAllow, "granted"
	case t.Policy == tools.PolicyAsk:
		var n int64
		r.db.WithContext(ctx).Model(&models.SessionRule{}).Where("session_id = ? AND tool = ? AND policy = ?", sessionID, t.Name, tools.PolicyAllow).Count(&n)
		if n > 0 {
			return tools.PolicyAllow, "session"
		}
	}
	return t.Policy, t.PolicySource
}

// checkInput validates the input against the tool's schema; the error names
// what is wrong the way the schema validator puts it.
func checkInput(t offered, raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage(`{}`)
	}
	if len(raw) > maxInputBytes {
		return nil, invalid("input", "input_too_large", fmt.Sprintf("input must be at most %d bytes; it has %d", maxInputBytes, len(raw)))
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, invalid("input", "invalid_json", "input is not valid JSON: "+err.Error())
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, invalid("input", "invalid_input", "input must be a JSON object")
	}
	if len(t.InputSchema) == 0 {
		return raw, nil
	}
	resolved := resolvedSchema(t.InputSchema)
	if resolved == nil {
		return raw, nil
	}
	if err := resolved.Validate(v); err != nil {
		field, msg := schemaMessage(err)
		return nil, invalid(field, "invalid_input", fmt.Sprintf("input does not match %s's schema: %s", t.Name, msg))
	}
	if t.Kind == tools.KindSandbox {
		// Limits a schema cannot say (stdin's 1 MiB is bytes, not
		// characters) are refused here too, before a call is recorded.
		if _, err := decodeExec(raw); err != nil {
			return nil, err
		}
	}
	return raw, nil
}

// resolvedSchemas keeps tools' input schemas parsed and resolved, by the
// schema's hash: parsing and resolving a schema on every call was a third
// of a call's own CPU. At most maxResolvedSchemas; past it, it starts again.
var (
	resolvedSchemas      sync.Map // [32]byte → *jsonschema.Resolved (nil: not validated)
	resolvedSchemasN     atomic.Int64
	resolvedSchemasBytes atomic.Int64 // the kept schemas' raw sizes
)

// A resolved schema takes about 100 times its JSON in memory (6.5 MiB for
// 64 KiB of small properties), so the kept schemas are bounded by their
// JSON's bytes too: 2 MiB of JSON, some 200 MiB resolved at worst.
const (
	maxResolvedSchemas     = 4096
	maxResolvedSchemaBytes = 2 << 20
)

// resolvedSchema is the schema ready to validate with, or nil when calls
// are not checked against it.
func resolvedSchema(raw json.RawMessage) *jsonschema.Resolved {
	key := sha256.Sum256(raw)
	if v, ok := resolvedSchemas.Load(key); ok {
		return v.(*jsonschema.Resolved)
	}
	var resolved *jsonschema.Resolved
	// A schema that loops would make validation recurse until the process
	// dies; such tools are skipped or refused where they come in, this
	// guards what was stored. A server's schema we cannot read or resolve is
	// the server's problem, not the caller's: not checked either.
	if tools.SchemaLoop(raw) == "" {
		var schema jsonschema.Schema
		if json.Unmarshal(raw, &schema) == nil {
			if r, err := schema.Resolve(nil); err == nil {
				resolved = r
			}
		}
	}
	if resolvedSchemasN.Add(1) > maxResolvedSchemas || resolvedSchemasBytes.Add(int64(len(raw))) > maxResolvedSchemaBytes {
		resolvedSchemas.Clear()
		resolvedSchemasN.Store(1)
		resolvedSchemasBytes.Store(int64(len(raw)))
	}
	resolvedSchemas.Store(key, resolved)
	return resolved
}

// schemaKeywords start a validator message about the whole input rather than a property.
var schemaKeywords = map[string]bool{"required": true, "type": true, "additionalProperties": true, "minProperties": true,
	"maxProperties": true, "allOf": true, "anyOf": true, "oneOf": true, "not": true, "enum": true, "const": true}

var (
	longQuoted = regexp.MustCompile(`"[^"]{60,}"`)
	// The validator prints numbers as fractions and floats: 5000/1, 3600.000000.
	fraction  = regexp.MustCompile(`\b(-?\d+)/1\b`)
	zeroFloat = regexp.MustCompile(`\b(-?\d+)\.0+\b`)
)

// schemaMessage turns the validator's message into the field it concerns
// (input.command) and a sentence that does not repeat a long value back.
func schemaMessage(err error) (field, msg string) {
	msg = strings.TrimPrefix(err.Error(), "validating root: ")
	msg = strings.ReplaceAll(msg, "validating /properties/", "")
	msg = zeroFloat.ReplaceAllString(fraction.ReplaceAllString(msg, "$1"), "$1")
	msg = longQuoted.ReplaceAllStringFunc(msg, func(q string) string {
		return fmt.Sprintf("%s…\" (%d characters)", q[:30], utf8.RuneCountInString(q)-2)
	})
	field = "input"
	if prop, _, ok := strings.Cut(msg, ": "); ok && !schemaKeywords[prop] && !strings.ContainsAny(prop, " \"") {
		field = "input." + prop
	}
	return field, msg
}

// waitCall waits until the call, of session, is final or d passes, then
// returns it.
func (r *Runtime) waitCall(ctx context.Context, id, session string, d time.Duration) (ToolCallView, error) {
	var v ToolCallView
	matters := callOrSessionChanged(id, session)
	err := r.waitFor(ctx, d, matters, matters, func() (bool, error) {
		var err error
		v, err = r.callByID(ctx, id)
		return err != nil || !v.Open(), err
	})
	return v, err
}

// callOrSessionChanged picks the events a caller waiting on call id
// re-reads it for: the call's own (its status, its approval), not its
// live output, and its session's, whose end refuses the call without an
// event of its own.
func callOrSessionChanged(id, session string) func(Event) bool {
	return func(e Event) bool {
		return (e.ID == id && e.Kind != "call_output") || (e.Kind == "session" && e.SessionID == session)
	}
}

// recheckEvery bounds how long a waiter trusts events alone: another replica's
// decision publishes nothing here, so the record is re-read this often anyway.
const recheckEvery = 2 * time.Second

// waitFor calls done until it reports true, waking on matching events, on a
// periodic re-read, and giving up when d passes, ctx ends or the server stops.
// want picks, in the publisher (see Subscribe), the events matters is
// asked about: those of the call or the session waited on.
func (r *Runtime) waitFor(ctx context.Context, d time.Duration, want, matters func(Event) bool, done func() (bool, error)) error {
	events, stop := r.Subscribe(want)
	defer stop()
	timer := time.NewTimer(d)
	defer timer.Stop()
	recheck := time.NewTicker(recheckEvery)
	defer recheck.Stop()
	for {
		if ok, err := done(); ok || err != nil {
			return err
		}
		read := time.Now()
		var soon <-chan time.Time // a resync's re-read, spaced
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return nil
			case <-timer.C:
				// One last look: the finishing event and the timer may have come together.
				_, err := done()
				return err
			case <-recheck.C:
				waiting = false
			case <-soon:
				waiting = false
			case e, open := <-events:
				if !open {
					return nil // the server is stopping
				}
				switch {
				case matters(e):
					waiting = false
				case e.Resync() && soon == nil:
					// Events were lost: re-read, but not sooner than
					// resyncGap after the last read, so a waiter that falls
					// behind at every read does not read back to back.
					soon = time.After(max(resyncGap-time.Since(read), 0))
				}
			}
		}
	}
}

// resyncGap is the least time between a waiter's reads when it re-reads
// because it fell behind the events (Event.Resync).
const resyncGap = 250 * time.Millisecond

func (r *Runtime) callByID(ctx context.Context, id string) (ToolCallView, error) {
	var c models.ToolCall
	err := r.db.WithContext(ctx).First(&c, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return ToolCallView{}, notFound("tool call", id)
	}
	if err != nil {
		return ToolCallView{}, err
	}
	v := callView(c)
	var ap models.Approval
	if r.db.WithContext(ctx).First(&ap, "tool_call_id = ?", id).Error == nil {
		av := approvalView(ap)
		v.Approval = &av
	}
	return v, nil
}

// ToolCallGet is ToolCall.get.
func (r *Runtime) ToolCallGet(ctx context.Context, p Principal, id string) (ToolCallView, error) {
	var out ToolCallView
	err := r.run(ctx, p, "ToolCall.get", func(a *act) error {
		v, err := r.callByID(ctx, id)
		if err != nil {
			return err
		}
		if _, err := r.loadSession(ctx, p, v.Session); err != nil {
			return notFound("tool call", id)
		}
		if touchesVolume(v.Kind) {
			v.Volume = r.callVolume(ctx, v.ID)
		}
		out = v
		return nil
	}, id)
	return out, err
}

// ToolCallList is ToolCall.list: a session's calls, newest first.
func (r *Runtime) ToolCallList(ctx context.Context, p Principal, session string) ([]ToolCallView, error) {
	out := []ToolCallView{}
	err := r.run(ctx, p, "ToolCall.list", func(a *act) error {
		if _, err := r.loadSession(ctx, p, session); err != nil {
			return err
		}
		var cs []models.ToolCall
		if err := r.db.WithContext(ctx).Where("session_id = ?", session).Order("created_at DESC, id DESC").Limit(200).Find(&cs).Error; err != nil {
			return err
		}
		for _, c := range cs {
			out = append(out, callView(c))
		}
		r.fillCallVolumes(ctx, session, out)
		return nil
	}, session)
	return out, err
}

// refuseOpenCalls ends every open call matching the condition as refused.
func (r *Runtime) refuseOpenCalls(tx *gorm.DB, cond string, args []any, reason string) error {
	now := r.now()
	if err := tx.Model(&models.Approval{}).Where("state = ?", ApprovalPending).
		Where("tool_call_id IN (?)", tx.Model(&models.ToolCall{}).Select("id").Where(cond, args...)).
		Updates(map[string]any{"state": ApprovalExpired, "reason": reason, "decided_at": now}).Error; err != nil {
		return err
	}
	// A running call finishes on its own; only what has not started is refused.
	return tx.Model(&models.ToolCall{}).Where(cond, args...).Where("status IN ?", []string{CallQueued, CallAwaitingApproval, CallWaitingClient}).
		Updates(map[string]any{"status": CallRefused, "reason": reason, "finished_at": now}).Error
}

// ToolCallWait is ToolCall.get that waits up to d (or until ctx ends) for the
// call to finish: checked and recorded once, however long it waits.
func (r *Runtime) ToolCallWait(ctx context.Context, p Principal, id string, d time.Duration) (ToolCallView, error) {
	v, err := r.ToolCallGet(ctx, p, id)
	if err != nil {
		return ToolCallView{}, err
	}
	return r.waitCall(ctx, id, v.Session, d)
}
