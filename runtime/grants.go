package runtime

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Permissions as data (issue 13, seed 004): a Grant is one permission a
// Principal holds — a verb (Noun.verb or Noun.*) in a scope, with an
// optional limit — and where it came from (an access level's preset, a
// role through a seat, a row given to the person directly, a narrowed token).

// Scope kinds. A Scope with Kind "" covers everything.
const (
	ScopeTenant  = "tenant"
	ScopeAgent   = "agent"
	ScopeVault   = "vault"
	ScopeSession = "session"
)

// Scope is what a permission covers: everything, or one tenant, agent, vault
// or session and what belongs to it. Stored by id.
type Scope struct{ Kind, ID string }

// ScopeAll covers everything.
var ScopeAll = Scope{}

// ParseScope reads "*", "tenant:<id>", "agent:<id>", "vault:<id>" or "session:<id>".
func ParseScope(s string) (Scope, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "*" {
		return ScopeAll, nil
	}
	kind, id, ok := strings.Cut(s, ":")
	switch {
	case !ok || id == "":
		return Scope{}, invalid("scope", "invalid_scope", fmt.Sprintf("scope must be *, tenant:<id>, agent:<id>, vault:<id> or session:<id>, not %q", truncate(s, 100)))
	case kind != ScopeTenant && kind != ScopeAgent && kind != ScopeVault && kind != ScopeSession:
		return Scope{}, invalid("scope", "invalid_scope", fmt.Sprintf("scope kind must be tenant, agent, vault or session, not %q", truncate(kind, 40)))
	case len(id) > 100 || strings.ContainsAny(id, " \t\r\n:"):
		return Scope{}, invalid("scope", "invalid_scope", "scope id must be at most 100 characters without spaces or colons")
	}
	return Scope{Kind: kind, ID: id}, nil
}

// String is "*" or "kind:id".
func (s Scope) String() string {
	if s.Kind == "" {
		return "*"
	}
	return s.Kind + ":" + s.ID
}

// covers reports whether s covers a noun whose scope chain is chain.
func (s Scope) covers(chain []Scope) bool {
	return s.Kind == "" || slices.Contains(chain, s)
}

// Limit periods.
var limitPeriods = []string{"hour", "day", "week", "month"}

// Limit bounds a permission; the zero Limit is none.
type Limit struct {
	// Count calls per Period ("hour", "day", "week", "month").
	Count  int
	Period string
	// Field must be one of Values (an input ceiling, e.g. grant: workbench).
	Field  string
	Values []string
	// SpendSC is a ceiling on what calls may cost, in SC per day.
	SpendSC float64
}

// IsZero reports whether the limit bounds nothing.
func (l Limit) IsZero() bool {
	return l.Count == 0 && l.Field == "" && len(l.Values) == 0 && l.SpendSC == 0
}

// String says the limit in words: "20 a day; grant in workbench; 5 SC a day".
func (l Limit) String() string {
	var parts []string
	if l.Count > 0 {
		article := "a"
		if l.Period == "hour" {
			article = "an"
		}
		parts = append(parts, fmt.Sprintf("%d %s %s", l.Count, article, l.Period))
	}
	if l.Field != "" {
		parts = append(parts, fmt.Sprintf("%s in %s", l.Field, strings.Join(l.Values, ", ")))
	}
	if l.SpendSC > 0 {
		parts = append(parts, strconv.FormatFloat(l.SpendSC, 'f', -1, 64)+" SC a day")
	}
	return strings.Join(parts, "; ")
}

// Grant is one permission a Principal holds.
type Grant struct {
	// PermissionID is the models.Permission row; "" for an access level's preset.
	PermissionID string
	Verb         string // Noun.verb or Noun.*
	Scope        Scope
	Limit        Limit
	// Source: "access:member", "role:<role name>", "direct", "token:<id>", "session".
	Source string
	// SeatID is set for a role's grant, held through that seat.
	SeatID string
}

// Matches reports whether the grant is of verb: Noun.* matches every verb of Noun.
func (g Grant) Matches(verb string) bool {
	if g.Verb == verb {
		return true
	}
	noun, ok := strings.CutSuffix(g.Verb, ".*")
	return ok && strings.HasPrefix(verb, noun+".")
}

// String is what an Action records as the permission that allowed it:
// "Vault.use vault:vlt_… (role Billing; 20 a day)".
func (g Grant) String() string {
	s := g.Verb + " " + g.Scope.String()
	if id, ok := strings.CutPrefix(g.Source, "session:"); ok && g.Scope.String() == "*" {
		s = g.Verb + " session:" + id // a session's token acts on its own session only
	}
	var why []string
	if src := sourceWords(g.Source); src != "" {
		why = append(why, src)
	}
	if !g.Limit.IsZero() {
		why = append(why, g.Limit.String())
	}
	if len(why) > 0 {
		s += " (" + strings.Join(why, "; ") + ")"
	}
	return s
}

// sourceWords says where a grant comes from: "role Billing", "member
// preset", "direct", "token tok_… via role Billing".
func sourceWords(src string) string {
	switch {
	case strings.HasPrefix(src, "role:"):
		return "role " + strings.TrimPrefix(src, "role:")
	case strings.HasPrefix(src, "access:"):
		return strings.TrimPrefix(src, "access:") + " preset"
	case strings.HasPrefix(src, "token:"):
		return "token " + strings.TrimPrefix(src, "token:")
	case strings.HasPrefix(src, "session:"):
		return "its own session"
	}
	return src
}

// checkVerb says whether v names a verb (Noun.verb) or every verb of a noun (Noun.*).
func checkVerb(v string) error {
	noun, verb, ok := strings.Cut(v, ".")
	if !ok || noun == "" || verb == "" || len(v) > 100 {
		return invalid("verb", "invalid_verb", fmt.Sprintf("verb must look like Noun.verb or Noun.*, not %q", truncate(v, 100)))
	}
	if verb == "*" {
		for _, k := range AllVerbs() {
			if strings.HasPrefix(k, noun+".") {
				return nil
			}
		}
		return invalid("verb", "unknown_verb", fmt.Sprintf("no verbs of noun %q", truncate(noun, 50)))
	}
	if !slices.Contains(AllVerbs(), v) {
		return invalid("verb", "unknown_verb", fmt.Sprintf("no verb %q", truncate(v, 100)))
	}
	return nil
}

// extraVerbs are verbs no access level holds but some principal may
// (a session token's own verbs).
var extraVerbs = []string{"Client.connect", "ClientCall.next"}

// AllVerbs is the verb registry: every verb any interface calls through the
// one check, sorted. The presets, docs/permissions.md and the permission
// matrix test are generated from it.
func AllVerbs() []string {
	set := map[string]bool{}
	for _, l := range [][]string{presets[AccessOwner], sessionVerbs, extraVerbs} {
		for _, v := range l {
			set[v] = true
		}
	}
	out := make([]string, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// presetGrants are an access level's permissions as grants in scope.
func presetGrants(access string, scope Scope) []Grant {
	vs := presets[access]
	if scope.Kind == ScopeTenant {
		// A tenant's person: the level without the operator's verbs (tenants.go).
		vs = TenantPreset(access)
	}
	out := make([]Grant, 0, len(vs))
	for _, v := range vs {
		out = append(out, Grant{Verb: v, Scope: scope, Source: "access:" + access})
	}
	return out
}
