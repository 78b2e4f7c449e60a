package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/sandbox"
)

// sandboxStore keeps the lifecycle Manager's records in the sandboxes table,
// so state survives a restart and the console reads what the Manager wrote.
type sandboxStore struct {
	db *models.DB
	// owner is this replica's id, written on a running sandbox's record
	// with its lease (nil or "": no owner, one process).
	owner func() string
	// clock is the database's clock, which the lease's end is counted on
	// (dbclock.go); nil: this process's.
	clock func(context.Context) (time.Time, error)
}

// NewSandboxStore is the Store the server runs on, for tests that restart a
// Manager over the same database.
func NewSandboxStore(db *models.DB) sandbox.Store { return sandboxStore{db: db} }

// ownerOf is who a record of state holds: this replica while it runs the
// machine, with a lease its heartbeat renews; nobody otherwise.
func (s sandboxStore) ownerOf(ctx context.Context, state sandbox.State) (string, *time.Time, error) {
	if s.owner == nil || state != sandbox.StateRunning {
		return "", nil, nil
	}
	me := s.owner()
	if me == "" {
		return "", nil, nil
	}
	now := time.Now()
	if s.clock != nil {
		var err error
		if now, err = s.clock(ctx); err != nil {
			return "", nil, err
		}
	}
	until := now.Add(SandboxLeaseTTL).UTC()
	return me, &until, nil
}

var _ sandbox.Store = sandboxStore{}

func (s sandboxStore) Get(ctx context.Context, id string) (sandbox.Record, error) {
	return s.first(ctx, "id = ?", id)
}

func (s sandboxStore) FindBySession(ctx context.Context, sessionID, grant string) (sandbox.Record, error) {
	return s.first(ctx, "session_id = ? AND grant_name = ?", sessionID, grant)
}

func (s sandboxStore) first(ctx context.Context, cond string, args ...any) (sandbox.Record, error) {
	var m models.Sandbox
	err := s.db.WithContext(ctx).Where(cond, args...).First(&m).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return sandbox.Record{}, sandbox.ErrNotFound
	}
	if err != nil {
		return sandbox.Record{}, fmt.Errorf("runtime: load sandbox: %w", err)
	}
	return recordOf(m), nil
}

func (s sandboxStore) ListByState(ctx context.Context, state sandbox.State) ([]sandbox.Record, error) {
	var ms []models.Sandbox
	if err := s.db.WithContext(ctx).Where("state = ?", string(state)).Order("started_at, id").Find(&ms).Error; err != nil {
		return nil, fmt.Errorf("runtime: list %s sandboxes: %w", state, err)
	}
	out := make([]sandbox.Record, 0, len(ms))
	for _, m := range ms {
		out = append(out, recordOf(m))
	}
	return out, nil
}

// Put inserts or replaces the whole record in one statement: the Manager
// acknowledges a state change only once this returns.
func (s sandboxStore) Put(ctx context.Context, rec sandbox.Record) error {
	m := modelOf(rec)
	var err error
	if m.ReplicaID, m.LeaseExpiresAt, err = s.ownerOf(ctx, rec.State); err != nil {
		return fmt.Errorf("runtime: store sandbox %s: %w", rec.ID, err)
	}
	if kept := sandbox.KeptOn(rec); kept != "" && s.owner != nil {
		m.ReplicaID = kept // where its newest /workspace is, until archived
	}
	err = s.db.WithContext(ctx).Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, UpdateAll: true}).Create(&m).Error
	if err != nil {
		return fmt.Errorf("runtime: store sandbox %s: %w", rec.ID, err)
	}
	return nil
}

var _ sandbox.CondStore = sandboxStore{}

// PutIf replaces the record as Put does, but only while the stored one is
// still of expect's generation (state, owner, archive): one conditional
// UPDATE, so a replica archiving a folder it kept never overwrites what
// another replica wrote meanwhile.
func (s sandboxStore) PutIf(ctx context.Context, rec, expect sandbox.Record) (bool, error) {
	m := modelOf(rec)
	var err error
	if m.ReplicaID, m.LeaseExpiresAt, err = s.ownerOf(ctx, rec.State); err != nil {
		return false, fmt.Errorf("runtime: store sandbox %s: %w", rec.ID, err)
	}
	if kept := sandbox.KeptOn(rec); kept != "" && s.owner != nil {
		m.ReplicaID = kept
	}
	res := s.db.WithContext(ctx).Model(&models.Sandbox{}).
		Where("id = ? AND state = ? AND replica_id = ? AND archive_sha256 = ? AND archive_gen = ? AND archive_error = ?",
			rec.ID, string(expect.State), expect.Owner, expect.ArchiveSHA256, expect.ArchiveGen, expect.ArchiveError).
		Select("*").Omit("id", "created_at").Updates(&m)
	if res.Error != nil {
		return false, fmt.Errorf("runtime: store sandbox %s: %w", rec.ID, res.Error)
	}
	return res.RowsAffected == 1, nil
}

func modelOf(r sandbox.Record) models.Sandbox {
	return models.Sandbox{ID: r.ID, SessionID: r.SessionID, GrantName: r.Grant, ReleaseName: r.Release, Network: r.Network,
		State: string(r.State), Error: r.Error, StartedAt: timePtr(r.StartedAt), LastActiveAt: timePtr(r.LastActiveAt),
		SuspendedAt: timePtr(r.SuspendedAt), RetiredAt: timePtr(r.RetiredAt), MachineSeconds: r.MachineSeconds,
		ArchiveBytes: r.ArchiveBytes, ArchiveAt: timePtr(r.ArchiveAt), ArchiveSHA256: r.ArchiveSHA256, ArchiveGen: r.ArchiveGen, ArchiveError: r.ArchiveError, ArchiveNote: r.ArchiveNote}
}

func recordOf(m models.Sandbox) sandbox.Record {
	return sandbox.Record{ID: m.ID, SessionID: m.SessionID, Grant: m.GrantName, Release: m.ReleaseName, Network: m.Network,
		State: sandbox.State(m.State), Error: m.Error, StartedAt: timeOf(m.StartedAt), LastActiveAt: timeOf(m.LastActiveAt),
		SuspendedAt: timeOf(m.SuspendedAt), RetiredAt: timeOf(m.RetiredAt), MachineSeconds: m.MachineSeconds,
		ArchiveBytes: m.ArchiveBytes, ArchiveAt: timeOf(m.ArchiveAt), ArchiveSHA256: m.ArchiveSHA256, ArchiveGen: m.ArchiveGen, ArchiveError: m.ArchiveError, ArchiveNote: m.ArchiveNote, Owner: m.ReplicaID}
}

// timePtr stores a zero time as NULL: "never suspended", not year 1.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}
