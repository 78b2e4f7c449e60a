package runtime

import (
	"os"
	"strings"
	"testing"
)

// The table in docs/permissions.md is what people read; it must match the code.
func TestPermissionsDocMatchesPresets(t *testing.T) {
	doc, err := os.ReadFile("../docs/permissions.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		rows[strings.Trim(strings.TrimSpace(cells[1]), "`")] = cells[2 : 2+len(AccessLevels)]
	}
	for _, perm := range AllPermissions() {
		cells, ok := rows[perm]
		if !ok {
			t.Errorf("docs/permissions.md lacks %s", perm)
			continue
		}
		for i, level := range AccessLevels {
			has := UserPrincipal("u", "e", level).Can(perm)
			if documented := strings.TrimSpace(cells[i]) == "✓"; documented != has {
				t.Errorf("%s for %s: code says %v, docs say %v", perm, level, has, documented)
			}
		}
	}
	if len(rows) != len(AllPermissions()) {
		t.Errorf("docs list %d permissions, code %d", len(rows), len(AllPermissions()))
	}
}

func TestViewerCannotWrite(t *testing.T) {
	v := UserPrincipal("u", "e", AccessViewer)
	for _, perm := range []string{"Agent.create", "Version.publish", "User.invite", "Approval.approve"} {
		if v.Can(perm) {
			t.Errorf("viewer can %s", perm)
		}
	}
	if !v.Can("Agent.list") || !v.Can("Token.create") {
		t.Error("viewer cannot read agents or make their own token")
	}
	if Anonymous.Can("Agent.list") {
		t.Error("anonymous can list agents")
	}
}
