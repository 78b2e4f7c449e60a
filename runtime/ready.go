package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"gorm.io/gorm/clause"

	"github.com/subako/subako/models"
)

// readyFor is how long a readiness answer is kept: probes come every few
// seconds from each checker, and one small write a second or two is plenty.
const readyFor = 2 * time.Second

// DefaultReadyWriteTimeout bounds /readyz's write probe.
const DefaultReadyWriteTimeout = 2 * time.Second

// readiness caches the last write probe and lets one run at a time, so a
// stalled database does not gather a probe per request.
type readiness struct {
	mu       sync.Mutex
	at       time.Time
	err      error
	inflight bool
}

var errStillWriting = errors.New("runtime: the last readiness write has not finished")

// Ready tells whether this replica can serve: the database answers and takes
// a write within the probe's timeout. A full disk or a read-only database
// fails the write while reads (and a ping) still work; a replica that cannot
// record Actions must not be sent requests.
func (r *Runtime) Ready(ctx context.Context) error {
	rd := &r.ready
	rd.mu.Lock()
	if !rd.at.IsZero() && r.now().Sub(rd.at) < readyFor && r.now().Sub(rd.at) >= 0 {
		err := rd.err
		rd.mu.Unlock()
		return err
	}
	if rd.inflight {
		rd.mu.Unlock()
		return errStillWriting
	}
	rd.inflight = true
	rd.mu.Unlock()

	timeout := r.opts.ReadyWriteTimeout
	if timeout <= 0 {
		timeout = DefaultReadyWriteTimeout
	}
	done := make(chan error, 1)
	// The write runs on its own so the answer comes at the timeout even from
	// a driver that waits on a lock past its context (SQLite's busy wait).
	go func() {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		err := r.writeProbe(wctx)
		rd.mu.Lock()
		rd.inflight = false
		rd.mu.Unlock()
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(timeout):
		err = fmt.Errorf("runtime: readiness write took over %s", timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
	if err != nil {
		r.opts.Log.Warn("not ready: the database does not take writes", "err", err)
	}
	rd.mu.Lock()
	rd.at, rd.err = r.now(), err
	rd.mu.Unlock()
	return err
}

func (r *Runtime) writeProbe(ctx context.Context) error {
	host, _ := os.Hostname()
	// One row per host, rewritten: the table never grows with restarts.
	row := models.ReadinessProbe{Replica: truncate(host, 200), WrittenAt: r.now()}
	err := r.db.WithContext(ctx).Clauses(clause.OnConflict{UpdateAll: true}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("runtime: readiness write: %w", err)
	}
	return nil
}
