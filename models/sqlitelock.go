package models

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// SQLiteLockName is the lock file next to the SQLite database.
const SQLiteLockName = "subako.db.lock"

// ErrSQLiteInUse is wrapped by LockSQLite's error when another process
// holds the database.
var ErrSQLiteInUse = errors.New("the SQLite database is in use by another process")

// LockSQLite makes this process the only `subako serve` on the SQLite
// database in dataDir: SQLite serves one process (its timers, events and
// sandboxes live in that process's memory), so a second one would run every
// timer twice and never see the first one's events. The lock is an flock on
// dataDir/subako.db.lock, which the kernel releases when the process ends,
// however it ends. release gives it up.
func LockSQLite(dataDir string) (release func(), err error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("models: create data folder: %w", err)
	}
	path := filepath.Join(dataDir, SQLiteLockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("models: open lock file %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := ""
		b := make([]byte, 32)
		n, _ := f.ReadAt(b, 0)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b[:n]))); perr == nil && pid > 0 {
			holder = fmt.Sprintf(" (process %d)", pid)
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: another `subako serve`%s holds %s, the lock of %s. SQLite serves one process; to run several replicas, use PostgreSQL (--database-url postgres://…)",
				ErrSQLiteInUse, holder, path, filepath.Join(dataDir, "subako.db"))
		}
		return nil, fmt.Errorf("models: lock %s: %w", path, err)
	}
	// The holder's pid, for the message a second process prints; the lock
	// itself is the flock, not the file's content.
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
