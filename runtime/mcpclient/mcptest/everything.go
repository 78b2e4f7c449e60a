package mcptest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// EverythingDir is where the pinned server-everything package lives,
// relative to the module root.
const EverythingDir = "runtime/mcpclient/testdata/server-everything"

const (
	entryScript  = "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
	preload      = "loopback.cjs"
	listenPrefix = "subako-mcptest listening "
	startTimeout = 20 * time.Second
)

// StartEverything starts @modelcontextprotocol/server-everything in
// Streamable HTTP mode on 127.0.0.1, behind Gate(token), and returns the
// gate's endpoint URL. The node process is killed when the test ends.
//
// It fails the test, never skips it, when node or the npm package is
// missing: a test that silently skips proves nothing.
func StartEverything(t testing.TB, token string) string {
	t.Helper()
	dir, err := everythingDir()
	if err != nil {
		t.Fatalf("mcptest: %v", err)
	}
	nodePath, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("mcptest: node is not on PATH (Node.js 20 runs server-everything): %v", err)
	}
	// Registered first so it runs last: the gate's open streams end once
	// node is gone.
	var gate *httptest.Server
	t.Cleanup(func() {
		if gate != nil {
			gate.Close()
		}
	})
	port := startNode(t, nodePath, dir)
	target := &url.URL{Scheme: "http", Host: "127.0.0.1:" + port}
	waitAnswering(t, target.String()+"/mcp")
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		FlushInterval: -1, // stream SSE as it comes
		ErrorLog:      log.New(io.Discard, "", 0),
	}
	gate = httptest.NewServer(Gate(token, proxy))
	return gate.URL + "/mcp"
}

// everythingDir finds the package folder from the module root (the nearest
// go.mod above the working directory) and checks it was installed.
func everythingDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory; run the tests inside the module")
		}
		dir = parent
	}
	pkg := filepath.Join(dir, EverythingDir)
	if _, err := os.Stat(filepath.Join(pkg, entryScript)); err != nil {
		return "", fmt.Errorf("server-everything is not installed (%s missing); run: npm ci --prefix %s", entryScript, EverythingDir)
	}
	return pkg, nil
}

// startNode starts the server and returns the port it reports through the
// preloaded loopback.cjs.
func startNode(t testing.TB, nodePath, dir string) string {
	t.Helper()
	cmd := exec.Command(nodePath, "--require", "./"+preload, entryScript, "streamableHttp")
	cmd.Dir = dir
	// A bare environment: the server's get-env tool shows it to any client.
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"PORT=0",
		"GZIP_ALLOWED_DOMAINS=localhost",
	}
	cmd.SysProcAttr = sysProcAttr()
	cmd.Stdout = io.Discard // it logs every request there
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatalf("mcptest: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("mcptest: start server-everything: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	tail := &tailLog{}
	ports := make(chan string, 1)
	go scanStderr(stderr, tail, ports)
	select {
	case port, ok := <-ports:
		if ok {
			return port
		}
		t.Fatalf("mcptest: server-everything exited before listening; its stderr:\n%s", tail)
	case <-time.After(startTimeout):
		t.Fatalf("mcptest: server-everything did not listen within %s; its stderr:\n%s", startTimeout, tail)
	}
	return ""
}

// scanStderr sends the reported port on ports (closed when stderr ends) and
// keeps the last lines for failure messages.
func scanStderr(r io.Reader, tail *tailLog, ports chan<- string) {
	defer close(ports)
	sc := bufio.NewScanner(r)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		tail.add(line)
		if port, ok := strings.CutPrefix(line, listenPrefix); ok && !sent {
			ports <- strings.TrimSpace(port)
			sent = true
		}
	}
}

// waitAnswering polls until the server answers HTTP at all (a 400 for a bare
// GET is an answer).
func waitAnswering(t testing.TB, endpoint string) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(startTimeout)
	for {
		resp, err := client.Get(endpoint)
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("mcptest: server-everything at %s did not answer within %s: %v", endpoint, startTimeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tailLog keeps the last lines a process wrote.
type tailLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *tailLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lines = append(l.lines, line); len(l.lines) > 40 {
		l.lines = l.lines[1:]
	}
}

func (l *tailLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}
