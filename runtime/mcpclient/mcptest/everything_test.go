package mcptest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEverythingDirMissingInstall(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	_, err := everythingDir()
	want := "run: npm ci --prefix runtime/mcpclient/testdata/server-everything"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("everythingDir without node_modules = %v, want an error saying %q", err, want)
	}
}

func TestEverythingDirFound(t *testing.T) {
	dir, err := everythingDir()
	if err != nil {
		t.Fatalf("in this module: %v", err)
	}
	if !strings.HasSuffix(dir, filepath.FromSlash(EverythingDir)) {
		t.Fatalf("everythingDir = %s", dir)
	}
}
