package htmlrender_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/subako/subako/runtime/fn"
)

// A Chromium that crashes during a render is started once more, and the
// answer says so; one that crashes again makes the call ok: false naming
// both. A SIGKILL (the memory limit's, or the runner's own) is not a crash
// to restart from, and an answer after a restart still lists the crash. The
// signals are real: the page's image request reaches this test through the
// broker, which then sends the next signal of the plan to this call's
// Chromium.
func TestHTMLRenderRestartsACrashedChromium(t *testing.T) {
	e, p := engine(t)
	var requests, sent atomic.Int32
	var plan atomic.Pointer[[]syscall.Signal]
	srv := imageServer(t, func(*http.Request) {
		n := int(requests.Add(1))
		if signals := *plan.Load(); n <= len(signals) {
			if pid := ourChromium(t); pid > 0 && syscall.Kill(pid, signals[n-1]) == nil {
				sent.Add(1)
			}
		}
	})
	input := map[string]any{"html": `<title>again</title><img src="` + srv.URL + `/a.png">`, "screenshot": ""}
	type restarted struct {
		answer
		Restarts []string `json:"chromium_restarts"`
	}
	run := func(signals ...syscall.Signal) (restarted, json.RawMessage) {
		t.Helper()
		requests.Store(0)
		sent.Store(0)
		plan.Store(&signals)
		raw := renderRaw(t, e, p, input, fn.CallRequest{Origins: []string{srv.URL}})
		var a restarted
		if err := json.Unmarshal(raw, &a); err != nil {
			t.Fatalf("output %s: %v", raw, err)
		}
		if int(sent.Load()) != len(signals) {
			t.Fatalf("the test sent %d of its %d signals (%d requests): %s", sent.Load(), len(signals), requests.Load(), raw)
		}
		return a, raw
	}
	segv := "Chromium crashed (SIGSEGV)"

	a, raw := run(syscall.SIGSEGV)
	if !a.OK || a.Title != "again" || len(a.MissingImages) != 0 || !slices.Equal(a.Restarts, []string{segv}) {
		t.Fatalf("after one crash: %s", raw)
	}
	a, raw = run(syscall.SIGSEGV, syscall.SIGSEGV)
	if a.OK || !strings.HasPrefix(a.Error, segv+"; restarted, then "+segv+"\n") || !slices.Equal(a.Restarts, []string{segv, segv}) {
		t.Fatalf("after two crashes: %s", raw)
	}
	a, raw = run(syscall.SIGKILL)
	if a.OK || !strings.Contains(a.Error, "exit status -9") || a.Restarts != nil {
		t.Fatalf("after a SIGKILL: %s", raw)
	}
	a, raw = run(syscall.SIGSEGV, syscall.SIGKILL)
	if a.OK || !strings.Contains(a.Error, "exit status -9") || !slices.Equal(a.Restarts, []string{segv}) {
		t.Fatalf("after a crash, then a SIGKILL: %s", raw)
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
