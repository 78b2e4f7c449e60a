package runtime

import (
	"os"
	"testing"
)

// docs/permissions.md is generated from the presets: it fails here when a
// preset changed and the page was not made again.
func TestPermissionsDocIsGenerated(t *testing.T) {
	const path = "../docs/permissions.md"
	want := PermissionsDoc()
	if os.Getenv("SUBAKO_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatal("docs/permissions.md is stale: run SUBAKO_UPDATE_DOCS=1 go test -run TestPermissionsDocIsGenerated ./runtime/")
	}
}
