package htmlrender_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/subako/subako/runtime/fn"
)

// A Chromium that crashes during a render is started once more, and the
// answer says so; one that crashes again makes the call ok: false naming the
// signal. The crash is real: the page's first image request reaches this
// test through the broker, which then sends SIGSEGV to this call's Chromium.
func TestHTMLRenderRestartsACrashedChromium(t *testing.T) {
	e, p := engine(t)
	var requests, crashes, crashFirst atomic.Int32
	crashFirst.Store(1)
	srv := imageServer(t, func(*http.Request) {
		if requests.Add(1) <= crashFirst.Load() {
			if pid := ourChromium(t); pid > 0 && syscall.Kill(pid, syscall.SIGSEGV) == nil {
				crashes.Add(1)
			}
		}
	})
	input := map[string]any{"html": `<title>again</title><img src="` + srv.URL + `/a.png">`, "screenshot": ""}
	var a struct {
		answer
		Restarts []string `json:"chromium_restarts"`
	}
	raw := renderRaw(t, e, p, input, fn.CallRequest{Origins: []string{srv.URL}})
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("output %s: %v", raw, err)
	}
	if crashes.Load() != 1 {
		t.Fatalf("the test did not crash Chromium (%d requests)", requests.Load())
	}
	if !a.OK || a.Title != "again" || len(a.MissingImages) != 0 || len(a.Restarts) != 1 || a.Restarts[0] != "Chromium crashed (SIGSEGV)" {
		t.Fatalf("after one crash: %s", raw)
	}

	requests.Store(0)
	crashes.Store(0)
	crashFirst.Store(2)
	raw = renderRaw(t, e, p, input, fn.CallRequest{Origins: []string{srv.URL}})
	var b answer
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatalf("output %s: %v", raw, err)
	}
	if crashes.Load() != 2 || b.OK || !strings.HasPrefix(b.Error, "Chromium crashed (SIGSEGV); restarted, then Chromium crashed (SIGSEGV)\n") {
		t.Fatalf("after two crashes (%d): %s", crashes.Load(), raw)
	}
}

// ourChromium finds the Chromium this test process started (through bwrap and
// the runner), not one of another test binary running at the same time.
func ourChromium(t *testing.T) int {
	me := os.Getpid()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		exe, err := os.Readlink(d + "/exe")
		if err != nil || exe != "/usr/lib/chromium/chromium" {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		for p := pid; p > 1; p = parentOf(p) {
			if p == me {
				return pid
			}
		}
	}
	t.Errorf("no Chromium below this test's process %d", me)
	return 0
}

func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
