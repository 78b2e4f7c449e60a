package archive

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// mixedWorkspace builds about 100 MiB shaped like a project: 48 MiB of
// incompressible files (binaries, packed objects) and a copy of the host's
// Python standard library (about 51 MiB of sources, bytecode and shared
// objects in 1,400 files).
func mixedWorkspace(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
	for i := range 48 {
		randomFile(b, filepath.Join(dir, "bin", fmt.Sprintf("blob%02d", i)), 1<<20)
	}
	if out, err := exec.Command("cp", "-r", "/usr/lib/python3.11", filepath.Join(dir, "lib")).CombinedOutput(); err != nil {
		b.Fatalf("copy the sample sources: %v: %s", err, out)
	}
	return dir
}

func BenchmarkSave100MiB(b *testing.B) {
	ws := mixedWorkspace(b)
	store, _ := NewLocal(b.TempDir())
	b.SetBytes(100 << 20)
	b.ResetTimer()
	var info Info
	for b.Loop() {
		// Each Save is a new generation: the last one goes, as a
		// suspension's recorded archive replaces the one before.
		store.Delete(context.Background(), info.Ref())
		var err error
		if info, _, err = Save(context.Background(), store, "bench", ws, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(info.Bytes)/(1<<20), "MiB-archive")
}

func BenchmarkRestore100MiB(b *testing.B) {
	ws := mixedWorkspace(b)
	store, _ := NewLocal(b.TempDir())
	saved, _, err := Save(context.Background(), store, "bench", ws, Limits{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(100 << 20)
	b.ResetTimer()
	for b.Loop() {
		dst := filepath.Join(b.TempDir(), "ws")
		os.Mkdir(dst, 0o755)
		if _, err := Load(context.Background(), store, saved.Ref(), dst, RestoreOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// The baselines: GNU tar with gzip on the same folder.
func BenchmarkTarCzf100MiB(b *testing.B) {
	ws := mixedWorkspace(b)
	out := filepath.Join(b.TempDir(), "ws.tar.gz")
	b.SetBytes(100 << 20)
	b.ResetTimer()
	for b.Loop() {
		if err := exec.Command("tar", "czf", out, "-C", ws, ".").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTarXzf100MiB(b *testing.B) {
	ws := mixedWorkspace(b)
	out := filepath.Join(b.TempDir(), "ws.tar.gz")
	if err := exec.Command("tar", "czf", out, "-C", ws, ".").Run(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(100 << 20)
	b.ResetTimer()
	for b.Loop() {
		dst := b.TempDir()
		if err := exec.Command("tar", "xzf", out, "-C", dst).Run(); err != nil {
			b.Fatal(err)
		}
	}
}
