package runtime

import (
	"context"
	"slices"
	"strings"

	"github.com/subako/subako/models"
)

// The one check every verb passes (issue 13): find a grant of the verb whose
// scope covers every noun the call names, take its limit, note its use.

// CheckInput is what a limit needs to see of a call.
type CheckInput struct {
	// Fields are the values of limited inputs, e.g. {"grant": "workbench"}.
	Fields map[string]string
	// SpendSC is what this call may cost.
	SpendSC float64
}

// runIn is run with what a limit needs to see; run(...) = runIn(..., CheckInput{}, ...).
// A Principal without a covering grant gets an Action already refused, with
// the missing permission (verb and scope) as its reason, and fn never runs.
func (r *Runtime) runIn(ctx context.Context, p Principal, verb string, in CheckInput, fn func(a *act) error, targets ...string) error {
	a := newAct(ctx)
	a.target(targets...)
	g, err := r.authorize(ctx, p, verb, targets, in)
	if err != nil {
		reason := err.Error()
		if e, ok := AsError(err); ok && e.MissingPermission != "" {
			a.missing = e.MissingPermission
			reason = "missing permission " + e.MissingPermission
		}
		r.record(ctx, p, verb, a, VerdictRefused, reason)
		return err
	}
	a.permission, a.grant = g.String(), g
	err = fn(a)
	if e, ok := AsError(err); ok && e.Kind == KindInvalid {
		r.giveBackUnit(ctx, p, g) // limit_refund.go
	}
	return r.finish(ctx, p, verb, a, err)
}

// authorize finds a grant of verb whose scope covers every noun id in targets.
// A person of a tenant asking about a noun outside it gets not_found.
func (r *Runtime) authorize(ctx context.Context, p Principal, verb string, targets []string, in CheckInput) (Grant, error) {
	var held []Grant
	for _, g := range r.grantsOf(ctx, p) {
		if g.Matches(verb) {
			held = append(held, g)
		}
	}
	if p.TenantID == "" {
		// The common case reads nothing more: a grant on everything without a
		// limit allows the call whatever it names (the tool-call hot path).
		for _, g := range held {
			if g.Scope.Kind == "" && g.Limit.IsZero() {
				r.stampUse(ctx, g)
				return g, nil
			}
		}
	}
	chains := make([]nounChain, 0, len(targets))
	for _, t := range targets {
		if c := r.scopeChain(ctx, verb, t); c.noun != "" {
			chains = append(chains, c)
		}
	}
	if p.TenantID != "" {
		own := Scope{ScopeTenant, p.TenantID}
		for _, c := range chains {
			if c.found && !slices.Contains(c.chain, own) {
				return Grant{}, notFound(strings.ToLower(c.noun), c.ref)
			}
		}
	}
	var found []Grant
	for _, g := range held {
		if len(chains) == 0 && g.Scope.Kind == ScopeTenant && g.Scope.ID != p.TenantID && !strings.HasSuffix(verb, ".list") {
			// A call naming no scoped noun (a person, a token, a channel) is
			// kept to a tenant only by the verb's own filter on the caller's
			// tenant: a grant on another tenant (an operator's person's
			// tenant:<id>) would act on everything.
			continue
		}
		if grantCovers(g, verb, chains) {
			found = append(found, g)
		}
	}
	if len(found) == 0 {
		return Grant{}, r.missingErr(ctx, p, verb, held, chains)
	}
	// Unlimited grants first: a limit is spent only when nothing else allows the call.
	slices.SortStableFunc(found, func(a, b Grant) int {
		switch {
		case a.Limit.IsZero() == b.Limit.IsZero():
			return 0
		case a.Limit.IsZero():
			return -1
		}
		return 1
	})
	var limitErr error
	for _, g := range found {
		if err := r.takeLimit(ctx, p, g, in); err != nil {
			if limitErr == nil {
				limitErr = err
			}
			continue
		}
		r.stampUse(ctx, g)
		return g, nil
	}
	return Grant{}, limitErr
}

// grantCovers: g's scope covers every resolved noun; a call naming no noun
// needs a grant on everything or a tenant (a list shows what its grants cover).
func grantCovers(g Grant, verb string, chains []nounChain) bool {
	if len(chains) == 0 {
		return g.Scope.Kind == "" || g.Scope.Kind == ScopeTenant || strings.HasSuffix(verb, ".list")
	}
	for _, c := range chains {
		if !c.found {
			// A noun that does not exist: the verb answers not_found to anyone
			// who may call it on something.
			continue
		}
		if !g.Scope.covers(c.chain) {
			return false
		}
	}
	return true
}

// missingErr names what the call lacked: the verb and the narrowest scope of
// the first noun no grant covers, shown by name where the noun has one.
func (r *Runtime) missingErr(ctx context.Context, p Principal, verb string, held []Grant, chains []nounChain) *Error {
	missing := verb
	for _, c := range chains {
		if !c.found || len(c.chain) == 0 {
			continue
		}
		covered := false
		for _, g := range held {
			if g.Scope.covers(c.chain) {
				covered = true
				break
			}
		}
		if !covered || len(held) == 0 {
			missing = verb + " " + r.showScope(ctx, c.chain[0])
			break
		}
	}
	return denied(p, missing, "")
}

// require checks one more verb inside a running verb (Session.create →
// Vault.use per vault); a refusal fails the outer verb with the missing
// permission of the inner one. It records no Action of its own.
func (r *Runtime) require(ctx context.Context, p Principal, verb string, targets ...string) error {
	_, err := r.authorize(ctx, p, verb, targets, CheckInput{})
	return err
}

// ListScope says what a list verb may show: All, or what the grants cover.
type ListScope struct {
	All                               bool
	Tenants, Agents, Vaults, Sessions []string
}

// Covers reports whether a noun with these owners is shown.
func (l ListScope) Covers(tenant, agent, vault, session string) bool {
	return l.All || (tenant != "" && slices.Contains(l.Tenants, tenant)) || (agent != "" && slices.Contains(l.Agents, agent)) ||
		(vault != "" && slices.Contains(l.Vaults, vault)) || (session != "" && slices.Contains(l.Sessions, session))
}

// listVia: a list of nouns held one by one shows those its holder may get
// (a member holds Vault.list on everything, Vault.get on their own vaults).
var listVia = map[string]string{"Vault.list": "Vault.get"}

// agentScope is the agents verb, called on each of them, would allow p: a
// grant of verb on everything or on the agent, without a limit, or with a
// unit of its limit spent (once per grant per call, the grant that allowed
// the call a's, already spent). Only grants that add an agent are spent,
// and stamped used as a call on each agent would stamp them: the first
// unlimited grant covering an agent, not every grant that also does (an
// unused, redundant grant still decays). A grant on a tenant, vault or
// session covers no agent; one bounded to an input never allows a call that
// names none. A tenant's people's lists show no agent (withinTenant).
func (r *Runtime) agentScope(ctx context.Context, p Principal, verb string, a *act) ListScope {
	var l ListScope
	if p.TenantID != "" {
		return l
	}
	covered := func(g Grant) bool {
		return l.All || g.Scope.Kind == ScopeAgent && slices.Contains(l.Agents, g.Scope.ID)
	}
	add := func(g Grant) {
		if !sameGrant(g, a.grant) {
			r.stampUse(ctx, g)
		}
		if g.Scope.Kind == "" {
			l.All = true
		} else {
			l.Agents = append(l.Agents, g.Scope.ID)
		}
	}
	// paid: nothing (more) to spend, unlimited or the grant that allowed the call.
	var paid, limited []Grant
	for _, g := range r.grantsOf(ctx, p) {
		switch {
		case !g.Matches(verb) || (g.Scope.Kind != "" && g.Scope.Kind != ScopeAgent) || g.Limit.Field != "":
		case g.Limit.IsZero() || sameGrant(g, a.grant):
			paid = append(paid, g)
		default:
			limited = append(limited, g)
		}
	}
	// A grant on everything first, as it covers every agent the others
	// name: they are then neither spent nor stamped.
	onEverythingFirst := func(x, y Grant) int { return strings.Compare(x.Scope.Kind, y.Scope.Kind) }
	slices.SortStableFunc(paid, onEverythingFirst)
	slices.SortStableFunc(limited, onEverythingFirst)
	for _, g := range paid {
		if !covered(g) {
			add(g)
		}
	}
	for _, g := range limited {
		if !covered(g) && r.takeLimit(ctx, p, g, CheckInput{}) == nil {
			add(g)
		}
	}
	return l
}

// sameGrant says whether a and b are one grant (Grant holds a slice: no ==).
func sameGrant(a, b Grant) bool {
	return a.PermissionID == b.PermissionID && a.SeatID == b.SeatID && a.Source == b.Source && a.Verb == b.Verb && a.Scope == b.Scope
}

// listScope says what a list verb may show, from the grants of verb.
func (r *Runtime) listScope(p Principal, verb string) ListScope {
	var l ListScope
	if via, ok := listVia[verb]; ok {
		verb = via
	}
	for _, g := range r.grantsOf(context.Background(), p) {
		if !g.Matches(verb) {
			continue
		}
		switch g.Scope.Kind {
		case "":
			l.All = true
		case ScopeTenant:
			l.Tenants = appendNew(l.Tenants, g.Scope.ID)
		case ScopeAgent:
			l.Agents = appendNew(l.Agents, g.Scope.ID)
		case ScopeVault:
			l.Vaults = appendNew(l.Vaults, g.Scope.ID)
		case ScopeSession:
			l.Sessions = appendNew(l.Sessions, g.Scope.ID)
		}
	}
	if l.All && p.TenantID != "" {
		// A tenant's person sees their tenant only, whatever they hold.
		l = ListScope{Tenants: []string{p.TenantID}}
	}
	if p.TenantID != "" && !l.All {
		l = r.withinTenant(p.TenantID, l)
	}
	return l
}

// withinTenant keeps of l what lies in tenant: a list ORs its scopes, so an
// agent's (which serves every tenant) or another tenant's vault or session
// would show other tenants' rows to a tenant's person. An agent's grant
// shows nothing on a list of theirs (Session.get still reaches their
// tenant's sessions of it).
func (r *Runtime) withinTenant(tenant string, l ListScope) ListScope {
	out := ListScope{}
	if slices.Contains(l.Tenants, tenant) {
		out.Tenants = []string{tenant}
	}
	if r.db == nil {
		return out
	}
	if len(l.Vaults) > 0 {
		r.db.Model(&models.Vault{}).Where("id IN ? AND tenant_id = ?", l.Vaults, tenant).Pluck("id", &out.Vaults)
	}
	if len(l.Sessions) > 0 {
		r.db.Model(&models.Session{}).Where("id IN ? AND tenant_id = ?", l.Sessions, tenant).Pluck("id", &out.Sessions)
	}
	return out
}

func appendNew(l []string, s string) []string {
	if slices.Contains(l, s) {
		return l
	}
	return append(l, s)
}

// nounChain is one target of a call resolved to the scopes that cover it.
type nounChain struct {
	noun  string // "Vault", "Session", …; "" for a target that is no scoped noun
	ref   string
	found bool
	chain []Scope
}

// scopeChain resolves a target (an id, or a vault's or agent's name for their
// verbs) to its scope chain: tenant → [tenant]; vault → [vault, tenant];
// agent, version → [agent]; session → [session, agent, tenant]; a tool call,
// approval, sandbox or session rule → its session's; a credential → its vault's.
func (r *Runtime) scopeChain(ctx context.Context, verb, ref string) nounChain {
	db := r.db.WithContext(ctx)
	noun, _, _ := strings.Cut(verb, ".")
	prefix, _, _ := strings.Cut(ref, "_")
	first := func(dst any, q string, args ...any) bool {
		err := db.Where(q, args...).Take(dst).Error
		return err == nil
	}
	vaultChain := func(c nounChain, v models.Vault) nounChain {
		c.found, c.chain = true, []Scope{{ScopeVault, v.ID}}
		if v.TenantID != "" {
			c.chain = append(c.chain, Scope{ScopeTenant, v.TenantID})
		}
		return c
	}
	sessionChain := func(c nounChain, id string) nounChain {
		var s models.Session
		if !first(&s, "id = ?", id) {
			return c
		}
		c.found, c.chain = true, []Scope{{ScopeSession, s.ID}, {ScopeAgent, s.AgentID}}
		if s.TenantID != "" {
			c.chain = append(c.chain, Scope{ScopeTenant, s.TenantID})
		}
		return c
	}
	switch {
	case prefix == "ten" && strings.Contains(ref, "_"):
		c := nounChain{noun: "Tenant", ref: ref}
		var t models.Tenant
		if first(&t, "id = ?", ref) {
			c.found, c.chain = true, []Scope{{ScopeTenant, t.ID}}
		}
		return c
	case prefix == "vlt" && strings.Contains(ref, "_"), (noun == "Vault" || noun == "Credential") && !strings.Contains(ref, "_"):
		c := nounChain{noun: "Vault", ref: ref}
		var v models.Vault
		if first(&v, "id = ?", ref) || (!strings.Contains(ref, "_") && first(&v, "name = ?", ref)) {
			return vaultChain(c, v)
		}
		return c
	case prefix == "cred":
		c := nounChain{noun: "Credential", ref: ref}
		var cr models.Credential
		var v models.Vault
		if first(&cr, "id = ?", ref) && first(&v, "id = ?", cr.VaultID) {
			return vaultChain(c, v)
		}
		return c
	case prefix == "ag" && strings.Contains(ref, "_"):
		c := nounChain{noun: "Agent", ref: ref}
		var n int64
		if db.Model(&models.Agent{}).Where("id = ?", ref).Count(&n); n > 0 {
			c.found, c.chain = true, []Scope{{ScopeAgent, ref}}
		}
		return c
	case prefix == "ver" && strings.Contains(ref, "_"):
		c := nounChain{noun: "Version", ref: ref}
		var v models.Version
		if first(&v, "id = ?", ref) {
			c.found, c.chain = true, []Scope{{ScopeAgent, v.AgentID}}
		}
		return c
	case prefix == "ses" && strings.Contains(ref, "_"):
		return sessionChain(nounChain{noun: "Session", ref: ref}, ref)
	case prefix == "call" && strings.Contains(ref, "_"):
		var tc models.ToolCall
		if first(&tc, "id = ?", ref) {
			return sessionChain(nounChain{noun: "ToolCall", ref: ref}, tc.SessionID)
		}
		return nounChain{noun: "ToolCall", ref: ref}
	case prefix == "apr" && strings.Contains(ref, "_"):
		var ap models.Approval
		if first(&ap, "id = ?", ref) {
			return sessionChain(nounChain{noun: "Approval", ref: ref}, ap.SessionID)
		}
		return nounChain{noun: "Approval", ref: ref}
	case prefix == "rule" && strings.Contains(ref, "_"):
		var sr models.SessionRule
		if first(&sr, "id = ?", ref) {
			return sessionChain(nounChain{noun: "SessionRule", ref: ref}, sr.SessionID)
		}
		return nounChain{noun: "SessionRule", ref: ref}
	case noun == "Sandbox" || noun == "Archive":
		var sb models.Sandbox
		if first(&sb, "id = ?", ref) {
			return sessionChain(nounChain{noun: "Sandbox", ref: ref}, sb.SessionID)
		}
	}
	return nounChain{}
}

// showScope is a scope as a person reads it: by name where the noun has one.
func (r *Runtime) showScope(ctx context.Context, s Scope) string {
	var name string
	db := r.db.WithContext(ctx)
	switch s.Kind {
	case "":
		return "*"
	case ScopeVault:
		db.Model(&models.Vault{}).Where("id = ?", s.ID).Pluck("name", &name)
	case ScopeAgent:
		db.Model(&models.Agent{}).Where("id = ?", s.ID).Pluck("name", &name)
	case ScopeTenant:
		db.Model(&models.Tenant{}).Where("id = ?", s.ID).Pluck("name", &name)
	}
	if name == "" {
		return s.String()
	}
	return s.Kind + ":" + name
}

// ShowScope is showScope for pages: "vault:customer-a".
func (r *Runtime) ShowScope(ctx context.Context, s Scope) string { return r.showScope(ctx, s) }
