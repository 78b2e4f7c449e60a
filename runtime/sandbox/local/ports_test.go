package local

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subako/subako/runtime/sandbox"
)

// serveSite serves /workspace/site on 127.0.0.1:8765 inside m, from an exec
// that runs until the test ends, and returns the ports listed once one is.
func serveSite(t testing.TB, m *Machine) []sandbox.ListenPort {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go m.Exec(ctx, sandbox.ExecRequest{Command: "cd site && exec /usr/bin/python3 -m http.server 8765 --bind 127.0.0.1 2>/dev/null", TimeoutSecs: 600})
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ports, err := m.ListPorts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(ports) > 0 {
			return ports
		}
	}
	t.Fatal("the server never listened")
	return nil
}

// A server an exec runs inside the sandbox (no network) is listed and
// answers an HTTP request made through the agent.
func TestPortForwardReachesAServerInside(t *testing.T) {
	m := start(t, newDriver(t, Config{}), sandbox.Spec{})
	run(t, m, "mkdir -p site && echo '<h1>made inside</h1>' > site/index.html")
	ports := serveSite(t, m)
	if len(ports) != 1 || ports[0].Port != 8765 || ports[0].Address != "127.0.0.1" {
		t.Fatalf("listening ports: %+v; want 127.0.0.1:8765", ports)
	}
	conn, err := m.DialPort(context.Background(), 8765)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /index.html HTTP/1.0\r\nHost: localhost\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "made inside") {
		t.Fatalf("status %d body %q", resp.StatusCode, body)
	}

	// A large body crosses the window many times over.
	run(t, m, "head -c 3000000 /dev/zero | tr '\\0' x > site/big.txt")
	conn2, err := m.DialPort(context.Background(), 8765)
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	fmt.Fprintf(conn2, "GET /big.txt HTTP/1.0\r\n\r\n")
	resp, err = http.ReadResponse(bufio.NewReader(conn2), nil)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	if n != 3000000 {
		t.Fatalf("big body: %d bytes, want 3000000", n)
	}

	if _, err := m.DialPort(context.Background(), 8766); err == nil || !strings.Contains(err.Error(), "nothing answers on port 8766") {
		t.Fatalf("dial of a closed port: %v", err)
	}
}

// An exec's output reaches the host while the command still runs.
func TestExecOutputArrivesWhileItRuns(t *testing.T) {
	m := start(t, newDriver(t, Config{}), sandbox.Spec{})
	var mu sync.Mutex
	var chunks []string
	var at []time.Duration
	began := time.Now()
	ctx := sandbox.WithOutput(context.Background(), func(stream string, data []byte) {
		mu.Lock()
		chunks = append(chunks, stream+":"+string(data))
		at = append(at, time.Since(began))
		mu.Unlock()
	})
	res, err := m.Exec(ctx, sandbox.ExecRequest{Command: "for i in 1 2 3; do echo $i; sleep 1; done; echo err >&2", TimeoutSecs: 30})
	if err != nil {
		t.Fatal(err)
	}
	ended := time.Since(began)
	if res.Stdout != "1\n2\n3\n" {
		t.Fatalf("result stdout %q", res.Stdout)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(chunks, "") != "stdout:1\nstdout:2\nstdout:3\nstderr:err\n" {
		t.Fatalf("chunks %q", chunks)
	}
	if at[0] > ended-1500*time.Millisecond {
		t.Fatalf("first chunk came at %v, the exec ended at %v: not live", at[0], ended)
	}
}

// BenchmarkPortForward: an HTTP request to a server inside, through the
// agent (a new connection each time), and a 3 MB answer's throughput.
func BenchmarkPortForward(b *testing.B) {
	m := start(b, newDriver(b, Config{}), sandbox.Spec{})
	run(b, m, "mkdir -p site && echo hi > site/small.txt && head -c 3000000 /dev/zero > site/big.bin")
	serveSite(b, m)
	get := func(b *testing.B, path string, want int64) {
		conn, err := m.DialPort(context.Background(), 8765)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET %s HTTP/1.0\r\n\r\n", path)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			b.Fatal(err)
		}
		if n, _ := io.Copy(io.Discard, resp.Body); n != want {
			b.Fatalf("%s: %d bytes", path, n)
		}
	}
	b.Run("request", func(b *testing.B) {
		for b.Loop() {
			get(b, "/small.txt", 3)
		}
	})
	b.Run("3MB", func(b *testing.B) {
		b.SetBytes(3000000)
		for b.Loop() {
			get(b, "/big.bin", 3000000)
		}
	})
}
