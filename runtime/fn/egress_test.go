package fn

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

// A granted origin on the server's own network is refused at dial time,
// before any request leaves, unless the operator allowed private egress.
func TestFetchToPrivateAddressRefusedUnlessAllowed(t *testing.T) {
	var hits atomic.Int32
	srv := echoServer(t, &hits)
	guarded, err := New(context.Background(), Config{DataDir: modules.DataDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = guarded.Close(context.Background()) })

	// localhost too: the name is judged by the address it resolves to.
	for _, origin := range []string{srv.URL, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)} {
		_, res, err := fetchCall(t, guarded, CallRequest{Origins: []string{origin}}, map[string]any{"url": origin + "/echo"})
		want := "is refused: private and loopback addresses are blocked; start the server with --egress-allow-private to allow them"
		if !errors.Is(err, ErrToolFailed) || !strings.Contains(err.Error(), want) {
			t.Fatalf("fetch of %s by default = %v; want a refusal saying %q", origin, err, want)
		}
		if len(res.Fetches) != 1 || !strings.Contains(res.Fetches[0].Error, "egress to ") {
			t.Fatalf("fetch record %+v, want one fetch refused for its address", res.Fetches)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback server received %d requests despite the refusal", n)
	}

	out, _, err := fetchCall(t, newEngine(t, Config{AllowPrivate: true}), CallRequest{Origins: []string{srv.URL}},
		map[string]any{"url": srv.URL + "/echo"})
	if err != nil || out.Status != 200 || hits.Load() != 1 {
		t.Fatalf("fetch with private egress allowed = %+v, %v (server hits %d); want a 200", out, err, hits.Load())
	}
}
