package handlers

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

// sections names the console's list pages by a path's first segment, so a
// missing or forbidden page can offer the list it belongs to.
var sections = map[string]pages.Link{
	"agents": {Href: "/agents", Label: "Agents"}, "versions": {Href: "/agents", Label: "Agents"},
	"sessions": {Href: "/sessions", Label: "Sessions"}, "skills": {Href: "/skills", Label: "Skills"},
	"functions": {Href: "/functions", Label: "Functions"}, "vaults": {Href: "/vaults", Label: "Vaults"},
	"sandboxes": {Href: "/sandboxes", Label: "Sandboxes"}, "approvals": {Href: "/approvals", Label: "Approvals"},
	"people": {Href: "/people", Label: "People"}, "tokens": {Href: "/tokens", Label: "API tokens"},
	"usage": {Href: "/usage", Label: "Usage"}, "audit": {Href: "/audit", Label: "Audit"},
	"notifications": {Href: "/notifications", Label: "Notifications"},
}

// errorHelp says, for a 404 or 403, what happened in a person's words and
// where to go next; other errors keep the problem's own sentence.
func errorHelp(c echo.Context, p Problem) pages.ErrorHelp {
	path := c.Request().URL.Path
	h := pages.ErrorHelp{Status: p.Status, Title: p.Title, What: sentence(p.Detail)}
	signedIn := principal(c).Kind == runtime.PrincipalUser
	first, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if sec, ok := sections[first]; ok && signedIn && "/"+first != path {
		h.Links = append(h.Links, pages.Link{Href: sec.Href, Label: "Back to " + sec.Label})
	}
	switch p.Status {
	case http.StatusNotFound:
		h.Title = "Page not found"
		h.What = "There is nothing at " + path + ". It may have been deleted, or the link is mistyped."
		// A runtime's 404 names what is missing ("no agent agt_x"); a route
		// that does not exist has only echo's "Not Found".
		if p.Code != codeOf(p.Status) && p.Detail != "" {
			h.What = sentence(p.Detail) + " It may have been deleted, or the link is mistyped."
		}
	case http.StatusForbidden:
		h.What = sentence(p.Detail) + forbiddenNext(principal(c), p.MissingPermission)
	}
	if signedIn {
		h.Links = append(h.Links, pages.Link{Href: "/", Label: "Go to the dashboard"})
	} else {
		h.Links = append(h.Links, pages.Link{Href: "/login", Label: "Sign in"})
	}
	return h
}

// forbiddenNext says who could lift a refusal, in terms true of the person
// refused: an admin is not told to ask an admin, nor a tenant's person to
// ask for one of the operator's own verbs.
func forbiddenNext(p runtime.Principal, missing string) string {
	verb, _, _ := strings.Cut(missing, " ")
	switch {
	case p.TenantID != "" && verb != "" && runtime.OperatorOnly(verb):
		return " It is the operator's own: a tenant's access levels do not hold it."
	case p.Access == runtime.AccessOwner:
		return ""
	case p.Access == runtime.AccessAdmin:
		return " An owner can give it, with a role or on the People page."
	}
	return " An owner or admin can change a person's access on the People page."
}

// sentence starts a detail with a capital and ends it with a full stop, so
// a runtime's lowercase detail reads as a sentence on a page. A detail that
// starts with a name (an email, a field such as permissions[0], an id) keeps
// it as written: "Ada@acme.test" is not the person's address.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	first, _, _ := strings.Cut(s, " ")
	if strings.Trim(strings.TrimRight(first, ":,;"), "abcdefghijklmnopqrstuvwxyz") == "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "?") && !strings.HasSuffix(s, "!") {
		s += "."
	}
	return s
}

// flashSentence is a refusal as a flash: the runtime's detail as a sentence,
// naming the field when the detail does not (runtime details are lowercase
// and unpunctuated, written to follow a field or a title).
func flashSentence(e *runtime.Error) string {
	d := e.Detail
	if d == "" {
		d = e.Title
	}
	if e.Field != "" && !strings.Contains(d, e.Field) {
		d = e.Field + ": " + d
	}
	return sentence(d)
}
