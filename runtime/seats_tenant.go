package runtime

import (
	"fmt"
	"slices"
	"strings"

	"github.com/subako/subako/models"
)

// tenantSeatRefusal refuses seating a tenant's person in a role holding the
// operator's own verbs (OperatorOnlyVerbs): they would hold none of them (the
// principal loader drops them, grants_load.go), so the seat would promise what
// it cannot give. The refusal names the verbs.
func tenantSeatRefusal(u models.User, role models.Role, perms []models.Permission) error {
	if u.TenantID == "" {
		return nil
	}
	var verbs []string
	for _, pm := range perms {
		if OperatorOnly(pm.Verb) && !slices.Contains(verbs, pm.Verb) {
			verbs = append(verbs, pm.Verb)
		}
	}
	if len(verbs) == 0 {
		return nil
	}
	slices.Sort(verbs)
	return invalid("role", "operator_only_verbs", fmt.Sprintf(
		"role %s holds %s, which only the operator's people hold: %s is a tenant's person, so seat them in a role without %s",
		role.Name, strings.Join(verbs, ", "), u.Email, map[bool]string{true: "it", false: "them"}[len(verbs) == 1]))
}
