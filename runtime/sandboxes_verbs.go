package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/archive"
	"github.com/subako/subako/runtime/tools"
)

// SandboxView is a sandbox as interfaces show it.
type SandboxView struct {
	ID           string     `json:"id"`
	Session      string     `json:"session"`
	SessionTitle string     `json:"session_title"`
	Grant        string     `json:"grant"`
	Tool         string     `json:"tool"`
	Release      string     `json:"release"`
	Network      string     `json:"network"`
	State        string     `json:"state"`
	Error        string     `json:"error,omitempty"`
	StartedAt    *time.Time `json:"started_at"`
	LastActiveAt *time.Time `json:"last_active_at"`
	SuspendedAt  *time.Time `json:"suspended_at"`
	RetiredAt    *time.Time `json:"retired_at"`
	// MachineSeconds is the machine time billed so far, the current run
	// included; Credits is its price.
	MachineSeconds float64      `json:"machine_seconds"`
	Credits        float64      `json:"credits"`
	Archive        *ArchiveView `json:"archive"`
	// ArchiveError says why the last archiving failed; Archive is then the
	// older archive that was kept.
	ArchiveError string `json:"archive_error,omitempty"`
	// ArchiveNote says what the archive left out (pipes, sockets, links
	// pointing out of /workspace), or is empty.
	ArchiveNote string `json:"archive_note,omitempty"`
	// Exit is what the sandbox's network exit refused (destinations and DNS
	// names) and where it added a credential, newest first, since the
	// server started (sandboxes_exit.go).
	Exit []ExitEventView `json:"exit,omitempty"`
	// Replica is the replica whose machine runs it (replicas on one
	// database; empty on one process and when it is not running).
	Replica string `json:"replica,omitempty"`
}

// ArchiveView is a sandbox's archive of /workspace (tar + gzip).
type ArchiveView struct {
	Bytes     int64     `json:"bytes"`
	CreatedAt time.Time `json:"created_at"`
}

// Deletable reports whether Archive.delete would accept the archive now.
func (v SandboxView) Deletable() bool {
	return v.Archive != nil && v.State == string(sandbox.StateRetired)
}

// Uploadable reports whether Archive.upload would accept an archive now.
func (v SandboxView) Uploadable() bool {
	return v.State == string(sandbox.StateSuspended) || v.State == string(sandbox.StateRetired)
}

func (r *Runtime) sandboxView(m models.Sandbox, title string) SandboxView {
	v := SandboxView{ID: m.ID, Session: m.SessionID, SessionTitle: title, Grant: m.GrantName,
		Tool: tools.FullName(tools.KindSandbox, m.GrantName, tools.SandboxTool), Release: m.ReleaseName, Network: m.Network,
		State: m.State, Error: m.Error, StartedAt: m.StartedAt, LastActiveAt: m.LastActiveAt, SuspendedAt: m.SuspendedAt,
		RetiredAt: m.RetiredAt, MachineSeconds: m.MachineSeconds, ArchiveError: m.ArchiveError, ArchiveNote: m.ArchiveNote}
	if m.State == string(sandbox.StateRunning) && m.StartedAt != nil {
		v.MachineSeconds += max(r.now().Sub(*m.StartedAt).Seconds(), 0)
	}
	v.Credits = v.MachineSeconds * PriceMachineSecond
	if m.State == string(sandbox.StateRunning) {
		v.Replica = m.ReplicaID
	}
	v.Exit = r.sandboxExitEvents(m.ID)
	if m.ArchiveAt != nil {
		v.Archive = &ArchiveView{Bytes: m.ArchiveBytes, CreatedAt: *m.ArchiveAt}
	}
	return v
}

// SandboxFilter narrows Sandbox.list.
type SandboxFilter struct {
	Session string `query:"session" json:"session"`
	Cursor  string `query:"cursor" json:"cursor"`
	Limit   int    `query:"limit" json:"limit"`
}

func (r *Runtime) sessionTitles(ctx context.Context, ms []models.Sandbox) (map[string]string, error) {
	ids := make([]string, 0, len(ms))
	for _, m := range ms {
		ids = append(ids, m.SessionID)
	}
	var ss []models.Session
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	if err := r.db.WithContext(ctx).Select("id", "title").Where("id IN ?", ids).Find(&ss).Error; err != nil {
		return out, fmt.Errorf("runtime: session titles: %w", err)
	}
	for _, s := range ss {
		out[s.ID] = s.Title
	}
	return out, nil
}

func (r *Runtime) loadSandbox(ctx context.Context, id string) (models.Sandbox, error) {
	var m models.Sandbox
	err := r.db.WithContext(ctx).First(&m, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return m, notFound("sandbox", id)
	}
	if err != nil {
		return m, fmt.Errorf("runtime: load sandbox %s: %w", id, err)
	}
	return m, nil
}

// SandboxGet is Sandbox.get.
func (r *Runtime) SandboxGet(ctx context.Context, p Principal, id string) (SandboxView, error) {
	var out SandboxView
	err := r.run(ctx, p, "Sandbox.get", func(a *act) error {
		m, err := r.loadSandbox(ctx, id)
		if err != nil {
			return err
		}
		titles, err := r.sessionTitles(ctx, []models.Sandbox{m})
		out = r.sandboxView(m, titles[m.SessionID])
		return err
	}, id)
	return out, err
}

// ArchiveFile is a sandbox's archive opened for download; the caller closes Body.
type ArchiveFile struct {
	Body     io.ReadCloser
	Bytes    int64
	Filename string
	ModTime  time.Time
}

func noArchive(id string) *Error {
	return &Error{Kind: KindNotFound, Code: "no_archive", Title: "No archive",
		Detail: fmt.Sprintf("sandbox %s has no archive: one is written each time it is suspended", id)}
}

// ArchiveDownload is Archive.download: the archive of /workspace as it was
// at the last suspension, tar + gzip.
func (r *Runtime) ArchiveDownload(ctx context.Context, p Principal, id string) (ArchiveFile, error) {
	var out ArchiveFile
	err := r.run(ctx, p, "Archive.download", func(a *act) error {
		set := r.sandboxes()
		if set == nil {
			return errNoSandboxes
		}
		m, err := r.loadSandbox(ctx, id)
		if err != nil {
			return err
		}
		body, info, err := set.mgr.OpenArchive(ctx, id)
		if errors.Is(err, archive.ErrNotExist) {
			return noArchive(id)
		}
		if e := r.storeDown(err, "the archive cannot be downloaded"); e != nil {
			return e
		}
		if err != nil {
			return fmt.Errorf("runtime: open archive of %s: %w", id, err)
		}
		out = ArchiveFile{Body: body, Bytes: info.Bytes, ModTime: info.ModTime,
			Filename: fmt.Sprintf("%s-%s.tar.gz", m.GrantName, m.ID)}
		return nil
	}, id)
	return out, err
}

// ArchiveDelete is Archive.delete: only a retired sandbox's archive, since
// a suspended sandbox restores from it at its next exec.
func (r *Runtime) ArchiveDelete(ctx context.Context, p Principal, id string) error {
	return r.run(ctx, p, "Archive.delete", func(a *act) error {
		set := r.sandboxes()
		if set == nil {
			return errNoSandboxes
		}
		m, err := r.loadSandbox(ctx, id)
		if err != nil {
			return err
		}
		if m.ArchiveAt == nil && m.State == string(sandbox.StateRetired) {
			return noArchive(id)
		}
		switch err := set.mgr.DeleteArchive(ctx, id); {
		case errors.Is(err, sandbox.ErrNotRetired):
			return conflict("sandbox_not_retired", fmt.Sprintf("sandbox %s is %s: its archive can be deleted only once it is retired, "+
				"since it restores from it at its next exec", id, m.State))
		case errors.Is(err, sandbox.ErrNotFound):
			return notFound("sandbox", id)
		case errors.As(err, new(*archive.UnavailableError)):
			return r.storeDown(err, "the archive was not deleted")
		case err != nil:
			return fmt.Errorf("runtime: delete archive of %s: %w", id, err)
		}
		// The archive is gone either way; a metering failure must not say otherwise.
		if err := r.archiveKept(ctx, id, m.SessionID, 0, r.now()); err != nil {
			r.opts.Log.Error("runtime: close archive storage usage", "sandbox", id, "err", err)
		}
		return nil
	}, id)
}

// ArchiveUpload is Archive.upload: body (tar + gzip, at most the archive
// limit) becomes a suspended or retired sandbox's archive once a trial
// restore with a restore's limits accepts it, so a sandbox whose archive
// cannot be restored is not lost for good. It clears archive_error, and
// archive_note says who uploaded it when; a suspended sandbox's next exec
// restores it, even over a folder kept by a failed archiving.
func (r *Runtime) ArchiveUpload(ctx context.Context, p Principal, id string, body io.Reader) (SandboxView, error) {
	var out SandboxView
	err := r.run(ctx, p, "Archive.upload", func(a *act) error {
		set := r.sandboxes()
		if set == nil {
			return errNoSandboxes
		}
		m, err := r.loadSandbox(ctx, id)
		if err != nil {
			return err
		}
		note := fmt.Sprintf("uploaded by %s at %s", p.Label, r.now().UTC().Format(time.RFC3339))
		_, err = set.mgr.UploadArchive(ctx, id, body, note)
		if e := r.storeDown(err, "the uploaded archive was not kept"); e != nil {
			return e
		}
		if err := uploadError(id, m.State, err); err != nil {
			return err
		}
		m, err = r.loadSandbox(ctx, id)
		if err != nil {
			return err
		}
		titles, err := r.sessionTitles(ctx, []models.Sandbox{m})
		out = r.sandboxView(m, titles[m.SessionID])
		return err
	}, id)
	return out, err
}

// uploadError turns UploadArchive's refusals into answers naming the field
// and the limit.
func uploadError(id, state string, err error) error {
	var tooLarge *archive.TooLargeError
	var bad *archive.InvalidError
	var disk *sandbox.DiskFullError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sandbox.ErrRunning):
		return conflict("sandbox_running", fmt.Sprintf("sandbox %s is %s: an archive can be uploaded only while it is suspended or retired, "+
			"since a running sandbox writes its own at its next suspension", id, state))
	case errors.Is(err, sandbox.ErrChangedDuringUpload):
		return conflict("sandbox_changed", fmt.Sprintf("sandbox %s ran and was archived again while the upload was read: "+
			"its newer archive is kept; upload again if it should still be replaced", id))
	case errors.Is(err, sandbox.ErrNotFound):
		return notFound("sandbox", id)
	case errors.As(err, &tooLarge):
		return invalid("archive", "archive_too_large", fmt.Sprintf("the archive is over the %d MiB compressed limit (max_archive_bytes %d)",
			tooLarge.Limit>>20, tooLarge.Limit))
	case errors.As(err, &bad):
		return invalid("archive", "invalid_archive", fmt.Sprintf("a restore would refuse this archive, so it was not kept: %v", bad.Err))
	case errors.As(err, &disk):
		return overCapacity(disk.Error(), sandbox.DiskFullRetry)
	}
	return fmt.Errorf("runtime: upload archive of %s: %w", id, err)
}
