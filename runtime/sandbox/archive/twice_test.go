package archive

import (
	"archive/tar"
	"context"
	"os"
	"strings"
	"testing"
)

// TestRestoreRefusesAFileNamedTwice: an archive naming one file twice
// ("notes.txt", then "./notes.txt") is refused. Restoring it gave the
// sandbox the last copy while Sandbox.readFile of the suspended sandbox,
// which reads the archive in place, showed the first: a person looking at
// a file before its sandbox is restored would not see what the sandbox gets.
// Uploads are checked by this restore, so such an archive is never stored.
func TestRestoreRefusesAFileNamedTwice(t *testing.T) {
	dst := t.TempDir()
	a := tarGz(t, entry{name: "notes.txt", typ: tar.TypeReg, body: "shown to people\n"},
		entry{name: "./notes.txt", typ: tar.TypeReg, body: "run by the sandbox\n"})
	_, err := Restore(context.Background(), a, dst, RestoreOptions{})
	if err == nil || !strings.Contains(err.Error(), `"./notes.txt": names a file the archive already holds`) {
		b, _ := os.ReadFile(dst + "/notes.txt")
		t.Fatalf("restore: %v (notes.txt holds %q), want the second notes.txt refused", err, b)
	}
	// A folder named twice, as tar itself writes when asked, is fine.
	dst = t.TempDir()
	a = tarGz(t, entry{name: "d/", typ: tar.TypeDir}, entry{name: "d/", typ: tar.TypeDir}, entry{name: "d/f", typ: tar.TypeReg, body: "x"})
	if _, err := Restore(context.Background(), a, dst, RestoreOptions{}); err != nil {
		t.Fatalf("a folder named twice: %v", err)
	}
}
