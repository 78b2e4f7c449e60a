package runtime

// policyRefusal is the reason on the Action of a call the version's policy
// refused: the call's own reason and which part of the policy decided
// (a tool rule or the grant's default policy).
func policyRefusal(source string) string {
	reason := "denied by the version's policy"
	switch source {
	case "rule":
		return reason + " (policy source: a tool rule)"
	case "default":
		return reason + " (policy source: the grant's default policy)"
	case "":
		return reason
	}
	return reason + " (policy source: " + source + ")"
}
