package proxy

import (
	"bytes"
	"context"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestReplayBodiesBoundedAcrossConnections: a sandbox that sends 96 POSTs
// of 1 MiB at once to a credential host (which keeps them waiting) makes
// the exit hold at most its 16 MiB budget of bodies kept for an OAuth
// retry, not 1 MiB (and a copy) for each; the requests still arrive.
func TestReplayBodiesBoundedAcrossConnections(t *testing.T) {
	const n = 96
	release := make(chan struct{})
	arrived := make(chan struct{}, n)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	defer close(release)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	_, c := startProxy(t, Config{Allow: rules(t, "127.0.0.1/32"), AllowPrivate: true, RootCAs: roots,
		HasCredential: func(context.Context, string) bool { return true },
		Attach: func(context.Context, string) (func(*http.Request), error) {
			return func(r *http.Request) { r.Header.Set("Authorization", "Bearer replay-token") }, nil
		}})
	body := bytes.Repeat([]byte("x"), 1<<20)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Post(srv.URL+"/upload", "application/octet-stream", bytes.NewReader(body))
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	deadline := time.After(2 * time.Minute)
	for i := 0; i < n; i++ {
		select {
		case <-arrived:
		case <-deadline:
			t.Fatalf("%d of %d requests arrived", i, n)
		}
	}
	grown := int64(heap()) - int64(before)
	if grown > 64<<20 {
		t.Fatalf("with %d bodies of 1 MiB waiting, the exit holds %d MiB more", n, grown>>20)
	}
	t.Logf("%d bodies of 1 MiB waiting: the heap grew %d MiB", n, grown>>20)
}
