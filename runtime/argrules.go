package runtime

import "github.com/subako/subako/runtime/tools"

// decisionWhy is what a call records as the rule that decided it: the
// argument rules' words (tools.Decide), or the approver's session rule when
// that turned an ask into an allow. Kinds without policy record "".
func decisionWhy(d tools.Decision, source, tool string) string {
	if source == "session" {
		return "an approver allowed " + tool + " for the rest of this session"
	}
	if source == "granted" {
		return ""
	}
	return d.Why
}
