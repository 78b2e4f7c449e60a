package local

import (
	"context"
	"testing"

	"github.com/subako/subako/runtime/sandbox"
)

// BenchmarkColdStartImage is BenchmarkColdStart on the release image: it
// also mounts the machine's tmpfs and overlay root at start and unmounts
// them at stop. Compare with BenchmarkBareBwrapTrue of the same run.
func BenchmarkColdStartImage(b *testing.B) {
	d := newDriver(b, Config{Images: testImages(b)})
	ws := workspace(b)
	for b.Loop() {
		m, err := d.Start(context.Background(), sandbox.Spec{ID: "bench-image", Release: "2026", Network: sandbox.NetworkNone, WorkspaceDir: ws})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Exec(context.Background(), sandbox.ExecRequest{Command: "true"}); err != nil {
			b.Fatal(err)
		}
		if err := m.Stop(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWarmExecImage is BenchmarkWarmExecTrue on the release image.
func BenchmarkWarmExecImage(b *testing.B) {
	m := start(b, newDriver(b, Config{Images: testImages(b)}), sandbox.Spec{ID: "bench-image-warm"})
	for b.Loop() {
		if _, err := m.Exec(context.Background(), sandbox.ExecRequest{Command: "true"}); err != nil {
			b.Fatal(err)
		}
	}
}
