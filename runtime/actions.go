package runtime

import (
	"context"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/subako/subako/models"
)

// Verdicts of an Action.
const (
	VerdictAllowed = "allowed"
	VerdictRefused = "refused"
	VerdictFailed  = "failed"
)

// act collects what a verb learns while it runs, for its Action record.
type act struct {
	targets []string
	model   string
	version string
	client  string // the client that asked (MCP clientInfo name/version)
	// recorded: the verb wrote its allowed Action itself, in its own
	// transaction (ToolCall.create, with the call); finish adds none.
	recorded bool
	// permission allowed the call (Grant.String); missing is what a
	// refusal lacked ("Vault.use vault:customer-a").
	permission, missing string
	// grant is the grant that allowed the call (runIn).
	grant Grant
	// caller is the context's (caller.go): its client and model stand where
	// the verb set none; its ParentAction links a $ call to its program.
	caller Caller
}

func (a *act) target(ids ...string) {
	for _, id := range ids {
		if id != "" {
			a.targets = append(a.targets, id)
		}
	}
}

// run is the one path every verb takes: check the permission, run, record.
// A Principal without the permission gets an Action already refused, with the
// missing permission as its reason, and fn never runs (check.go).
func (r *Runtime) run(ctx context.Context, p Principal, verb string, fn func(a *act) error, targets ...string) error {
	return r.runIn(ctx, p, verb, CheckInput{}, fn, targets...)
}

// runOpen is run for the few verbs a caller uses before it has a Principal
// (signing in, accepting an invitation): recorded the same way, not checked.
func (r *Runtime) runOpen(ctx context.Context, p Principal, verb string, fn func(a *act) error) error {
	a := newAct(ctx)
	return r.finish(ctx, p, verb, a, fn(a))
}

func (r *Runtime) finish(ctx context.Context, p Principal, verb string, a *act, err error) error {
	if _, ok := AsError(err); !ok && err != nil {
		// Any verb that reached the archive store while it was down (a
		// download, a file read from a suspended sandbox's archive …).
		if e := r.storeDown(err, verb+" could not be done"); e != nil {
			err = e
		}
	}
	switch e, ok := AsError(err); {
	case err == nil && a.recorded:
	case err == nil:
		r.record(ctx, p, verb, a, VerdictAllowed, "")
	case ok && (e.Kind == KindForbidden || e.Kind == KindUnauthenticated || e.Kind == KindTooMany):
		reason := e.Error()
		if e.MissingPermission != "" && a.missing == "" {
			// A verb required another inside (Session.create → Vault.use).
			a.missing = e.MissingPermission
			if e.Detail == denied(p, e.MissingPermission, "").Detail {
				reason = "missing permission " + e.MissingPermission
			}
		}
		r.record(ctx, p, verb, a, VerdictRefused, reason)
	default:
		r.record(ctx, p, verb, a, VerdictFailed, err.Error())
	}
	return err
}

func accessLabel(p Principal) string {
	if p.Access != "" {
		return p.Access
	}
	return string(p.Kind)
}

// actionRecord is the Action of a verb as it stands.
func (r *Runtime) actionRecord(p Principal, verb string, a *act, verdict, reason string) models.Action {
	// Every field is bounded: some come from callers (a model's name, a
	// sign-in's email), and the audit log must not be a way to fill the disk.
	return models.Action{
		ID: newID("act"), Verb: truncate(verb, 100), ByKind: string(p.Kind), ByID: truncate(p.ID, 100), ByLabel: truncate(p.Label, 200),
		Targets: truncate(strings.Join(a.targets, " "), 1000), Verdict: verdict, Reason: truncate(reason, 1000),
		Model: truncate(or(a.model, a.caller.Model), 200), Version: truncate(a.version, 100), ClientInfo: truncate(or(a.client, a.caller.Client), 200), CreatedAt: r.now(),
		Permission: truncate(a.permission, 300), MissingPermission: truncate(a.missing, 300),
		ParentID: truncate(a.caller.ParentAction, 100),
	}
}

func (r *Runtime) record(ctx context.Context, p Principal, verb string, a *act, verdict, reason string) {
	r.versionOf(ctx, p, a)
	rec := r.actionRecord(p, verb, a, verdict, reason)
	if d, ok := ctx.Value(deferredKey{}).(*deferredActions); ok {
		d.mu.Lock()
		d.recs = append(d.recs, rec)
		d.mu.Unlock()
		return
	}
	// The record is written outside the verb's transaction on purpose: a refusal
	// or a failure rolls the verb back but must still be on the audit log.
	if err := r.db.WithContext(context.WithoutCancel(ctx)).Create(&rec).Error; err != nil {
		r.opts.Log.Error("runtime: record action", "verb", verb, "err", err)
	}
}

func truncate(s string, n int) string {
	// Stored text must be UTF-8 without NUL (PostgreSQL refuses both), and
	// errors quote what servers and callers sent: an Action is never lost
	// to the text it records.
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
	if len(s) <= n {
		return s
	}
	// Cut on a character boundary: half a character is not valid UTF-8,
	// which PostgreSQL refuses to store.
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// ActionView is one audit record as interfaces show it.
type ActionView struct {
	ID      string   `json:"id"`
	Verb    string   `json:"verb"`
	ByKind  string   `json:"by_kind"`
	ByID    string   `json:"by_id"`
	By      string   `json:"by"`
	Targets []string `json:"targets"`
	Verdict string   `json:"verdict"`
	Reason  string   `json:"reason,omitempty"`
	Model   string   `json:"model,omitempty"`
	Version string   `json:"version,omitempty"`
	Client  string   `json:"client_info,omitempty"`
	// PolicyRule is which rule decided a ToolCall.create (argument rules).
	PolicyRule string `json:"policy_rule,omitempty"`
	// Permission is what allowed the verb (verb, scope, source, limit);
	// MissingPermission what a refusal lacked ("Vault.use vault:customer-a").
	Permission        string `json:"permission,omitempty"`
	MissingPermission string `json:"missing_permission,omitempty"`
	// Program is a code-mode program's text (Program.run), as it ran.
	Program   string    `json:"program,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Parent is the code-mode program's Action this call ran inside
	// (Action.list?parent= lists a program's calls).
	Parent string `json:"parent_id,omitempty"`
}

// ActionFilter narrows Action.list; empty fields match everything.
type ActionFilter struct {
	Verb    string `json:"verb" query:"verb"`
	By      string `json:"by" query:"by"`
	Verdict string `json:"verdict" query:"verdict"`
	Limit   int    `json:"limit" query:"limit"`
	Before  string `json:"before" query:"before"`
	Cursor  string `json:"cursor" query:"cursor"`
	// Parent lists the calls a code-mode program (its Action's id) made.
	Parent string `json:"parent" query:"parent"`
	// Changes leaves out verbs that only read.
	Changes bool `json:"changes" query:"changes"`
}

// ActionList is Action.list: the audit log, newest first, one page of
// f.Limit (100 by default) from f.Cursor or f.Before (lists.go).
func (r *Runtime) ActionList(ctx context.Context, p Principal, f ActionFilter) ([]ActionView, error) {
	pg, err := r.ActionListPage(ctx, p, f)
	return pg.Items, err
}

func actionView(rec models.Action) ActionView {
	v := ActionView{ID: rec.ID, Verb: rec.Verb, ByKind: rec.ByKind, ByID: rec.ByID, By: rec.ByLabel,
		Verdict: rec.Verdict, Reason: rec.Reason, Model: rec.Model, Version: rec.Version, Client: rec.ClientInfo, PolicyRule: rec.PolicyRule, CreatedAt: rec.CreatedAt, Targets: []string{},
		Permission: rec.Permission, MissingPermission: rec.MissingPermission, Program: rec.Program, Parent: rec.ParentID}
	if rec.Targets != "" {
		v.Targets = strings.Fields(rec.Targets)
	}
	return v
}

type deferredKey struct{}

// deferredActions are the Actions of verbs run under DeferActions, until
// written.
type deferredActions struct {
	mu   sync.Mutex
	recs []models.Action
}

// DeferActions returns a context under which the Actions of the verbs run
// are kept, each with its time, until write records them: for a live page,
// whose update (a re-read under the viewer's access) reaches the viewer
// before its Action is written rather than after. The caller must call
// write, whatever happens.
func (r *Runtime) DeferActions(ctx context.Context) (context.Context, func()) {
	d := &deferredActions{}
	return context.WithValue(ctx, deferredKey{}, d), func() {
		d.mu.Lock()
		recs := d.recs
		d.recs = nil
		d.mu.Unlock()
		for i := range recs {
			if err := r.db.WithContext(context.WithoutCancel(ctx)).Create(&recs[i]).Error; err != nil {
				r.opts.Log.Error("runtime: record action", "verb", recs[i].Verb, "err", err)
			}
		}
	}
}
