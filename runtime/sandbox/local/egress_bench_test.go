package local

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/subako/subako/runtime/egress/allowlist"
	"github.com/subako/subako/runtime/egress/proxy"
	"github.com/subako/subako/runtime/sandbox"
)

// BenchmarkExitRequest: curl GETs a server on the host's loopback from
// inside an allowlist sandbox (the agent's relay, the unix socket, the
// exit proxy) beside the same curl run on the host straight to it. One op
// is one curl process, its start included.
func BenchmarkExitRequest(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	loop := func(n int) string {
		return fmt.Sprintf("i=0; while [ $i -lt %d ]; do curl -sS --noproxy '' -o /dev/null %s/ || exit 1; i=$((i+1)); done", n, srv.URL)
	}
	b.Run("direct", func(b *testing.B) {
		if out, err := exec.Command("sh", "-c", loop(b.N)).CombinedOutput(); err != nil {
			b.Fatalf("%v %s", err, out)
		}
	})
	b.Run("exit", func(b *testing.B) {
		b.StopTimer()
		rules, err := allowlist.New([]string{"127.0.0.1/32"})
		if err != nil {
			b.Fatal(err)
		}
		p, err := proxy.New(proxy.Config{Name: "bench", Allow: rules, AllowPrivate: true})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		dir := reachableDir(b, "exit")
		ln, err := net.Listen("unix", filepath.Join(dir, sandbox.EgressSocket))
		if err != nil {
			b.Fatal(err)
		}
		os.Chmod(filepath.Join(dir, sandbox.EgressSocket), 0o666)
		go p.Serve(ln)
		d := newDriver(b, Config{})
		m := start(b, d, sandbox.Spec{ID: "bench-exit", Release: "2026", Network: sandbox.NetworkAllowlist, WorkspaceDir: workspace(b), EgressDir: dir})
		defer m.Stop()
		run(b, m, "true")
		b.StartTimer()
		if res := run(b, m, loop(b.N)); res.ExitCode != 0 {
			b.Fatalf("%+v", res)
		}
	})
}
