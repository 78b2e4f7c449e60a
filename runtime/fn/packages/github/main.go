// Command github is the Subako function package "github": it reads repositories,
// issues, pull requests and files through the GitHub REST API, via the host's
// http_fetch. It never holds a token: the host attaches the session's credential
// for the API's origin, so requests carry no Authorization from here.
package main

import (
	"github.com/subako/subako/runtime/fn/guest"
)

func main() {
	guest.Main(guest.Tools{
		"get_repo":    guest.Typed(getRepo),
		"list_issues": guest.Typed(listIssues),
		"get_issue":   guest.Typed(getIssue),
		"list_pulls":  guest.Typed(listPulls),
		"get_file":    guest.Typed(getFile),
	})
}
