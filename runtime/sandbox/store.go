package sandbox

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/subako/subako/runtime/sandbox/archive"
)

// State is where a sandbox is in its lifecycle.
type State string

// A sandbox is running from its first exec, suspended (stopped, /workspace
// archived) after IdleTimeout without an exec, and retired (its folders
// removed, only the archive left) after RetireAfter suspended.
const (
	StateRunning   State = "running"
	StateSuspended State = "suspended"
	StateRetired   State = "retired"
)

// Record is a sandbox's persisted state; the lead stores it with gorm.
type Record struct {
	ID        string `json:"id"`
	SessionID string `json:"session_id"`
	Grant     string `json:"grant"`
	Release   string `json:"release"`
	Network   string `json:"network"`
	State     State  `json:"state"`
	// Error is the last start or machine failure, empty once it starts again.
	Error        string    `json:"error,omitempty"`
	StartedAt    time.Time `json:"started_at,omitzero"`
	LastActiveAt time.Time `json:"last_active_at,omitzero"`
	SuspendedAt  time.Time `json:"suspended_at,omitzero"`
	RetiredAt    time.Time `json:"retired_at,omitzero"`
	// MachineSeconds adds up every run from start to suspension, idle
	// minutes included: what the machine is billed for.
	MachineSeconds float64   `json:"machine_seconds"`
	ArchiveBytes   int64     `json:"archive_bytes"`
	ArchiveAt      time.Time `json:"archive_at,omitzero"`
	// ArchiveSHA256 is the archive's checksum as recorded when it was
	// written: at a restart it tells the complete archive of an interrupted
	// suspension from one that is not the one recorded.
	ArchiveSHA256 string `json:"archive_sha256,omitempty"`
	// ArchiveGen is the generation of the archive the record names (see
	// archive.Ref): each archive is stored under a new one, so no upload
	// replaces an archive a record names. "" is the one archive per
	// sandbox kept before generations.
	ArchiveGen string `json:"archive_gen,omitempty"`
	// ArchiveError is why the last archiving failed; the previous archive
	// (ArchiveBytes, ArchiveAt) is still the one kept.
	ArchiveError string `json:"archive_error,omitempty"`
	// ArchiveNote says what the last archive left out (pipes, sockets,
	// links pointing out of /workspace), or is empty.
	ArchiveNote string `json:"archive_note,omitempty"`
	// Owner is the replica that runs the machine (Ownership; empty on one
	// process or when not running), as the Store last read it.
	Owner string `json:"owner,omitempty"`
}

// ArchiveRef names the archive the record names in the archive store.
func (r Record) ArchiveRef() archive.Ref { return archive.Ref{ID: r.ID, Gen: r.ArchiveGen} }

// ErrNotFound is returned by a Store for an unknown sandbox.
var ErrNotFound = errors.New("sandbox: not found")

// Store persists Records. Put must be durable when it returns: the manager
// acknowledges a state change only after Put.
type Store interface {
	Get(ctx context.Context, id string) (Record, error)
	// FindBySession returns the sandbox of one grant in one session.
	FindBySession(ctx context.Context, sessionID, grant string) (Record, error)
	ListByState(ctx context.Context, state State) ([]Record, error)
	Put(ctx context.Context, rec Record) error
}

// CondStore is a Store shared by replicas that can write a record only if
// it is still as it was read: same state, owner and archive (the record's
// generation). A replica archiving a folder it kept (retryArchives) writes
// through it, so that a record another replica changed meanwhile (took
// the sandbox over, restored or retired it) is never overwritten.
type CondStore interface {
	// PutIf writes rec if the stored record of rec.ID still has expect's
	// State, Owner, ArchiveSHA256, ArchiveGen and ArchiveError, and
	// reports whether it did.
	PutIf(ctx context.Context, rec, expect Record) (bool, error)
}

// sameGeneration: the fields PutIf compares.
func sameGeneration(a, b Record) bool {
	return a.State == b.State && a.Owner == b.Owner && a.ArchiveSHA256 == b.ArchiveSHA256 &&
		a.ArchiveGen == b.ArchiveGen && a.ArchiveError == b.ArchiveError
}

// MemStore is a Store in memory, for tests and for trying things out.
type MemStore struct {
	mu   sync.Mutex
	recs map[string]Record
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{recs: map[string]Record{}} }

// Get implements Store.
func (s *MemStore) Get(_ context.Context, id string) (Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.recs[id]
	if !ok {
		return Record{}, ErrNotFound
	}
	return rec, nil
}

// FindBySession implements Store.
func (s *MemStore) FindBySession(_ context.Context, sessionID, grant string) (Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rec := range s.recs {
		if rec.SessionID == sessionID && rec.Grant == grant {
			return rec, nil
		}
	}
	return Record{}, ErrNotFound
}

// ListByState implements Store, oldest first.
func (s *MemStore) ListByState(_ context.Context, state State) ([]Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Record
	for _, rec := range s.recs {
		if rec.State == state {
			out = append(out, rec)
		}
	}
	slices.SortFunc(out, func(a, b Record) int { return a.StartedAt.Compare(b.StartedAt) })
	return out, nil
}

// Put implements Store.
func (s *MemStore) Put(_ context.Context, rec Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs[rec.ID] = rec
	return nil
}
