package fn

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// broker is a native call's only way out: a Unix socket, bound into the
// sandbox at NativeBrokerSocket, that takes one http_fetch request per
// connection (the same JSON as the WebAssembly import) and answers it
// through the call's fetcher, so the rules are http_fetch's own: granted
// origins only, every redirect hop checked, the vault's credential attached
// here on the host, the guest's credential headers dropped.
type broker struct {
	dir  string
	ln   net.Listener
	done chan struct{}
	once sync.Once
}

// brokerDirPrefix names a call's broker folder in the temporary folder.
const brokerDirPrefix = "subako-fn-broker-"

func startBroker(ctx context.Context, f *fetcher, uid, gid int) (*broker, error) {
	dir, err := os.MkdirTemp("", brokerDirPrefix)
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, filepath.Base(NativeBrokerSocket))
	ln, err := net.Listen("unix", sock)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// The sandbox's user reaches the socket; nobody else on the host can
	// enter the folder.
	if os.Geteuid() == 0 {
		err = os.Chown(dir, uid, gid)
		if err == nil {
			err = os.Chown(sock, uid, gid)
		}
	}
	if err == nil {
		err = os.Chmod(sock, 0o600)
	}
	if err != nil {
		ln.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	b := &broker{dir: dir, ln: ln, done: make(chan struct{})}
	go b.serve(ctx, f)
	return b, nil
}

// serve answers one connection at a time: a call's fetches are few, and
// the fetcher's record needs no lock.
func (b *broker) serve(ctx context.Context, f *fetcher) {
	defer close(b.done)
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.answer(ctx, f, c)
	}
}

func (b *broker) answer(ctx context.Context, f *fetcher, c net.Conn) {
	defer c.Close()
	limit := int64(2*f.caps.MaxFetchRequestBytes + (64 << 10))
	c.SetDeadline(time.Now().Add(f.caps.FetchTimeout + 5*time.Second))
	var raw json.RawMessage
	dec := json.NewDecoder(io.LimitReader(c, limit+1))
	var out []byte
	if err := dec.Decode(&raw); err != nil {
		out = errorJSON(fmt.Sprintf("http_fetch: the request is not one JSON object within %d bytes: %v", limit, err))
	} else {
		out = f.fetch(ctx, raw)
	}
	c.Write(out)
}

// close stops the broker, waiting for a fetch in flight, and removes its folder.
func (b *broker) close() {
	b.once.Do(func() {
		b.ln.Close()
		<-b.done
		os.RemoveAll(b.dir)
	})
}
