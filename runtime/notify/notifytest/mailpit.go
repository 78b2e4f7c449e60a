package notifytest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// MailpitVersion is the mailpit release the tests run, built from the Go
// module proxy on first use and kept in the user's cache folder.
const MailpitVersion = "v1.33.1"

// Mailpit is a running mailpit (github.com/axllent/mailpit): a real SMTP
// server whose HTTP API lists what it received. Its code lives under
// internal/, so it cannot run in-process: it is built once with
// `go install` and run as a program.
type Mailpit struct {
	// URL is the server as --smtp-url takes it, credentials included.
	URL string
	api string
}

// StartMailpit runs mailpit until the test ends, accepting AUTH PLAIN with
// User and Password over plain SMTP on loopback.
func StartMailpit(t testing.TB) *Mailpit {
	t.Helper()
	bin := mailpitBinary(t)
	dir := t.TempDir()
	auth := filepath.Join(dir, "smtp-auth")
	if err := os.WriteFile(auth, []byte(User+":"+Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	smtpAddr, apiAddr := freeAddr(t), freeAddr(t)
	cmd := exec.Command(bin, "--smtp", smtpAddr, "--listen", apiAddr, "--database", filepath.Join(dir, "mailpit.db"),
		"--smtp-auth-file", auth, "--smtp-auth-allow-insecure", "--disable-version-check", "--quiet")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start mailpit: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	m := &Mailpit{URL: "smtp://" + User + ":" + Password + "@" + smtpAddr, api: "http://" + apiAddr}
	for i := 0; ; i++ {
		resp, err := http.Get(m.api + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return m
			}
		}
		if i == 200 {
			t.Fatalf("mailpit did not become ready: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Messages lists every message mailpit stored (it stores before it answers
// the end of DATA), each with its raw text.
func (m *Mailpit) Messages(t testing.TB) []Message {
	t.Helper()
	var list struct {
		Messages []struct {
			ID   string
			From struct{ Address string }
			To   []struct{ Address string }
		} `json:"messages"`
	}
	m.get(t, "/api/v1/messages?limit=1000", &list)
	out := make([]Message, 0, len(list.Messages))
	for _, it := range list.Messages {
		msg := Message{From: it.From.Address}
		for _, to := range it.To {
			msg.To = append(msg.To, to.Address)
		}
		msg.Data = m.raw(t, it.ID)
		out = append(out, msg)
	}
	return out
}

func (m *Mailpit) get(t testing.TB, path string, v any) {
	t.Helper()
	resp, err := http.Get(m.api + path)
	if err != nil {
		t.Fatalf("mailpit API %s: %v", path, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("mailpit API %s: %v", path, err)
	}
}

func (m *Mailpit) raw(t testing.TB, id string) []byte {
	t.Helper()
	resp, err := http.Get(m.api + "/api/v1/message/" + id + "/raw")
	if err != nil {
		t.Fatalf("mailpit raw message: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b
}

// mailpitBinary builds mailpit once per version into the user's cache.
func mailpitBinary(t testing.TB) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "subako-test", "mailpit-"+MailpitVersion)
	bin := filepath.Join(dir, "mailpit")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	// Built beside, then renamed: a test run cut short leaves no half binary.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "build-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", "github.com/axllent/mailpit@"+MailpitVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	cmd.Dir = tmp // outside this module, so its go.mod does not apply
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build mailpit %s (go install needs the Go module proxy): %v\n%s", MailpitVersion, err, out)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(tmp, "mailpit"), bin); err != nil {
		if _, statErr := os.Stat(bin); statErr != nil { // unless another test process won the race
			t.Fatal(fmt.Errorf("install mailpit: %w", err))
		}
	}
	return bin
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
