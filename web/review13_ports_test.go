package web_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/oauth/oauthtest"
	"github.com/subako/subako/runtime/sandbox"
)

// An allowlist sandbox's exit proxy (127.0.0.1:3128, the agent's own relay)
// was listed among its listening ports with a Preview link; only the
// agent's servers are.
func TestAllowlistSandboxListsNotItsExitProxyPort(t *testing.T) {
	resolver := startExitDNS(t, "allowed.test")
	w := newExitWorld(t, oauthtest.Options{}, nil, resolver)
	s := w.newSession(w.publish(exitConfig("allowed.test")))
	out := w.run(s, "true")
	if out.ExitCode != 0 {
		t.Fatalf("exec: %+v", out)
	}
	page := w.page("/sessions/" + s.ID + "/sandboxes")
	if strings.Contains(page, "/ports/"+strconv.Itoa(sandbox.EgressProxyPort)) || strings.Contains(page, "/ports/53/") {
		t.Errorf("the Sandboxes tab offers a Preview of the exit's port")
	}
	if out := w.run(s, "env | grep -c HTTPS_PROXY=http://127.0.0.1:3128"); !strings.HasPrefix(out.Stdout, "1") {
		t.Errorf("the exit proxy is no longer in the environment: %+v", out)
	}
}
