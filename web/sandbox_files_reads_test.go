package web_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/handlers"
	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/local"
)

// TestSandboxFileReadsInFlightAreBounded: every download of a sandbox file
// holds the file (up to 32 MiB) in memory until its client has it. Clients
// that ask and never read held 32 MiB each, as many as they opened; now
// at most handlers.MaxSandboxFileReads are in flight, one more is refused
// 429 too_many_reads with Retry-After, and once they end downloads work.
func TestSandboxFileReadsInFlightAreBounded(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	s := w.session()
	w.exec(s, "head -c 33554432 /dev/zero > big")
	id := w.sandboxOf(s).ID
	host := strings.TrimPrefix(w.srv.URL, "http://")

	var slow []net.Conn
	defer func() {
		for _, c := range slow {
			c.Close()
		}
	}()
	for range handlers.MaxSandboxFileReads {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		slow = append(slow, c)
		io.WriteString(c, "GET /api/v1/sandboxes/"+id+"/files/big HTTP/1.1\r\nHost: "+host+"\r\nAuthorization: Bearer "+w.owner+"\r\n\r\n")
		status, err := bufio.NewReader(c).ReadString('\n') // the answer started; the rest is never read
		if err != nil || !strings.Contains(status, "200") {
			t.Fatalf("a slow download: %q %v", status, err)
		}
	}
	req, _ := http.NewRequest("GET", w.srv.URL+"/api/v1/sandboxes/"+id+"/files/big", nil)
	req.Header.Set("Authorization", "Bearer "+w.owner)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || !strings.Contains(string(body), "too_many_reads") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("one download past %d in flight: %d (Retry-After %q) %.200s", handlers.MaxSandboxFileReads, resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}

	for _, c := range slow {
		c.Close()
	}
	slow = nil
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, b := w.filesCall(w.owner, "GET", "/sandboxes/"+id+"/files/big", nil)
		if st == 200 && len(b) == sandbox.MaxFileReadBytes {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the slow clients left: %d, %d bytes", st, len(b))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
