package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/volume"
)

// Default limits of a session's volume (--volume-max-file, --volume-max-files,
// --volume-max-bytes).
const (
	DefaultVolumeMaxFileBytes  int64 = 100 << 20
	DefaultVolumeMaxFiles            = 1000
	DefaultVolumeMaxTotalBytes int64 = 1 << 30
)

// UsageVolumeBytes is the volume's storage: like an archive's, a series of
// records each holding the volume's size over a stretch of time.
const UsageVolumeBytes = "volume_bytes"

// PriceVolumeGBHour is what a GB-hour of volume storage costs. The product
// spec prices no storage yet (archives are recorded at 0 too), so volumes
// are metered in GB-hours and priced 0 SC until it does.
const PriceVolumeGBHour = 0.0

// VolumeOptions is what the server gives the runtime to keep volumes.
type VolumeOptions struct {
	Store volume.Store
	// DiskDir is the folder whose disk the volumes fill, for --min-free-disk.
	DiskDir       string
	MaxFileBytes  int64 // one file (0: DefaultVolumeMaxFileBytes)
	MaxFiles      int   // files per session (0: DefaultVolumeMaxFiles)
	MaxTotalBytes int64 // bytes per session (0: DefaultVolumeMaxTotalBytes)
	// MinFreeDisk is --min-free-disk: under it no upload is taken (0: 1 GiB; negative: no floor).
	MinFreeDisk int64
}

type volumeSet struct {
	VolumeOptions
	locks sync.Map // session id → *sync.Mutex: one writer per volume at a time
}

func (v *volumeSet) lock(session string) func() {
	m, _ := v.locks.LoadOrStore(session, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// StartVolumes gives sessions their volumes; without it the Volume verbs
// answer 409 volumes_unavailable and functions get no /volume. It meters
// the volumes' storage every minute until ctx ends.
func (r *Runtime) StartVolumes(ctx context.Context, o VolumeOptions) {
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultVolumeMaxFileBytes
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultVolumeMaxFiles
	}
	if o.MaxTotalBytes <= 0 {
		o.MaxTotalBytes = DefaultVolumeMaxTotalBytes
	}
	r.volumes.Store(&volumeSet{VolumeOptions: o})
	go func() {
		t := time.NewTicker(time.Minute)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				// One replica meters (leases.go): two would each add the hour.
				r.runOnce(ctx, "volume-usage", 5*time.Minute, func(ctx context.Context) {
					if err := r.accrueVolumes(ctx, time.Hour); err != nil {
						r.opts.Log.Error("runtime: meter volumes", "err", err)
					}
				})
			}
		}
	}()
}

var errNoVolumes = &Error{Kind: KindConflict, Code: "volumes_unavailable", Title: "Volumes unavailable",
	Detail: "this server keeps no session volumes"}

// VolumeFileView is one file of a volume as interfaces show it.
type VolumeFileView struct {
	Path       string    `json:"path"`
	Size       int64     `json:"size"`
	SHA256     string    `json:"sha256"`
	ModifiedAt time.Time `json:"modified_at"`
	ModifiedBy string    `json:"modified_by"`
}

// VolumeListing is Volume.list's answer: the files, path order, and where
// the volume stands against its limits.
type VolumeListing struct {
	Session    string           `json:"session"`
	Files      []VolumeFileView `json:"files"`
	Count      int              `json:"count"`
	TotalBytes int64            `json:"total_bytes"`
	Limits     VolumeLimitsView `json:"limits"`
}

// VolumeLimitsView states a volume's limits.
type VolumeLimitsView struct {
	MaxFileBytes  int64 `json:"max_file_bytes"`
	MaxFiles      int   `json:"max_files"`
	MaxTotalBytes int64 `json:"max_total_bytes"`
}

func volumeFileView(f models.VolumeFile) VolumeFileView {
	return VolumeFileView{Path: f.Path, Size: f.Size, SHA256: f.SHA256, ModifiedAt: f.ModifiedAt.UTC(), ModifiedBy: f.ModifiedBy}
}

// volumeSession loads the session a Volume verb acts on; a session token
// reaches its own session's volume only.
func (r *Runtime) volumeSession(ctx context.Context, p Principal, a *act, id string) (*volumeSet, models.Session, error) {
	v := r.volumes.Load()
	if v == nil {
		return nil, models.Session{}, errNoVolumes
	}
	s, err := r.loadSession(ctx, p, id)
	if err == nil {
		a.target(s.ID)
	}
	return v, s, err
}

func volumePathError(err error) error {
	var pe *volume.PathError
	if errors.As(err, &pe) {
		return invalid("path", pe.Code, pe.Detail)
	}
	return nil
}

// VolumeList is Volume.list: every file of the session's volume (at most
// its file limit), in path order; prefix keeps those under a folder.
func (r *Runtime) VolumeList(ctx context.Context, p Principal, session, prefix string) (VolumeListing, error) {
	out := VolumeListing{Session: session, Files: []VolumeFileView{}}
	err := r.run(ctx, p, "Volume.list", func(a *act) error {
		v, s, err := r.volumeSession(ctx, p, a, session)
		if err != nil {
			return err
		}
		out.Limits = VolumeLimitsView{MaxFileBytes: v.MaxFileBytes, MaxFiles: v.MaxFiles, MaxTotalBytes: v.MaxTotalBytes}
		q := r.db.WithContext(ctx).Where("session_id = ?", s.ID)
		if prefix = strings.Trim(prefix, "/"); prefix != "" {
			if err := volume.CheckPath(prefix); err != nil {
				var pe *volume.PathError
				errors.As(err, &pe)
				return invalid("prefix", pe.Code, strings.Replace(pe.Detail, "path", "prefix", 1))
			}
			q = q.Where("path LIKE ? ESCAPE '\\'", likeEscape(prefix)+"/%")
		}
		var files []models.VolumeFile
		if err := q.Order("path").Limit(v.MaxFiles + 1000).Find(&files).Error; err != nil {
			return err
		}
		for _, f := range files {
			out.Files = append(out.Files, volumeFileView(f))
		}
		out.Count, out.TotalBytes, err = r.volumeTotals(ctx, r.db.DB, s.ID)
		return err
	}, session)
	return out, err
}

func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

func (r *Runtime) volumeTotals(ctx context.Context, db *gorm.DB, session string) (int, int64, error) {
	var t struct {
		N     int
		Bytes int64
	}
	err := db.WithContext(ctx).Model(&models.VolumeFile{}).Select("COUNT(*) AS n, COALESCE(SUM(size), 0) AS bytes").
		Where("session_id = ?", session).Scan(&t).Error
	return t.N, t.Bytes, err
}

// VolumeGet is Volume.get: the file's bytes, streamed, and what it is. The
// caller closes the reader.
func (r *Runtime) VolumeGet(ctx context.Context, p Principal, session, path string) (io.ReadCloser, VolumeFileView, error) {
	var body io.ReadCloser
	var out VolumeFileView
	err := r.run(ctx, p, "Volume.get", func(a *act) error {
		v, s, err := r.volumeSession(ctx, p, a, session)
		if err != nil {
			return err
		}
		if err := volumePathError(volume.CheckPath(path)); err != nil {
			return err
		}
		var f models.VolumeFile
		if err := r.db.WithContext(ctx).First(&f, "session_id = ? AND path = ?", s.ID, path).Error; errors.Is(err, gorm.ErrRecordNotFound) {
			return notFound("file", path)
		} else if err != nil {
			return err
		}
		out = volumeFileView(f)
		body, _, err = v.Store.Open(ctx, s.ID, path)
		if errors.Is(err, volume.ErrNotFound) || errors.Is(err, volume.ErrNotFile) {
			return notFound("file", path)
		}
		return err
	}, session)
	return body, out, err
}

// VolumePut is Volume.put: body becomes the file at path, whole or not at
// all. The file, the file count and the volume's total are bounded; the
// disk keeps --min-free-disk free.
func (r *Runtime) VolumePut(ctx context.Context, p Principal, session, path string, body io.Reader) (VolumeFileView, error) {
	var out VolumeFileView
	err := r.run(ctx, p, "Volume.put", func(a *act) error {
		v, s, err := r.volumeSession(ctx, p, a, session)
		if err != nil {
			return err
		}
		if s.State == SessionEnded {
			return conflict("session_ended", "the session has ended: its volume is kept to read and delete from, not to write to")
		}
		if err := volumePathError(volume.CheckPath(path)); err != nil {
			return err
		}
		if err := v.checkDisk(); err != nil {
			return err
		}
		unlock := v.lock(s.ID)
		defer unlock()
		n, total, err := r.volumeTotals(ctx, r.db.DB, s.ID)
		if err != nil {
			return err
		}
		var old models.VolumeFile
		exists := r.db.WithContext(ctx).Limit(1).Find(&old, "session_id = ? AND path = ?", s.ID, path).RowsAffected > 0
		if !exists && n >= v.MaxFiles {
			return invalid("path", "too_many_files", fmt.Sprintf("the volume holds %d files, its limit (max_files %d): delete some first", n, v.MaxFiles))
		}
		room := v.MaxTotalBytes - total + old.Size
		max, field, code := v.MaxFileBytes, "max_file_bytes", "file_too_large"
		if room < max {
			max, field, code = room, "max_total_bytes", "volume_full"
		}
		info, err := v.Store.Put(ctx, s.ID, path, body, max)
		var tooLarge *volume.TooLargeError
		switch {
		case errors.As(err, &tooLarge) && code == "file_too_large":
			return invalid("body", code, fmt.Sprintf("the file is larger than %d bytes, the most one file of the volume may hold (max_file_bytes %d)", max, max))
		case errors.As(err, &tooLarge):
			return invalid("body", code, fmt.Sprintf("the file would take the volume past its %d bytes (max_total_bytes %d; %d bytes are used by other files)",
				v.MaxTotalBytes, v.MaxTotalBytes, total-old.Size))
		case errors.As(err, new(*volume.ReadError)):
			return invalid("body", "body_incomplete", fmt.Sprintf("the upload ended before its end (%v): nothing was written, %q is as it was", errors.Unwrap(err), path))
		case errors.Is(err, volume.ErrNotFile):
			return conflict("not_a_file", fmt.Sprintf("%q cannot be written: it or one of its folders is already used by a folder or a file of that name", path))
		case err != nil:
			if e := volumePathError(err); e != nil {
				return e
			}
			return err
		}
		_ = field
		rec := models.VolumeFile{SessionID: s.ID, Path: path, Size: info.Size, SHA256: info.SHA256, ModifiedAt: r.now(), ModifiedBy: truncate(p.Label, 200)}
		if err := r.saveVolumeFile(ctx, rec); err != nil {
			return err
		}
		out = volumeFileView(rec)
		r.volumeChanged(ctx, s, path, "written")
		return nil
	}, session)
	return out, err
}

func (r *Runtime) saveVolumeFile(ctx context.Context, rec models.VolumeFile) error {
	return r.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "session_id"}, {Name: "path"}},
		DoUpdates: clause.AssignmentColumns([]string{"size", "sha256", "modified_at", "modified_by"}),
	}).Create(&rec).Error
}

// VolumeDelete is Volume.delete; allowed after the session ended, to free
// its storage.
func (r *Runtime) VolumeDelete(ctx context.Context, p Principal, session, path string) error {
	return r.run(ctx, p, "Volume.delete", func(a *act) error {
		v, s, err := r.volumeSession(ctx, p, a, session)
		if err != nil {
			return err
		}
		if err := volumePathError(volume.CheckPath(path)); err != nil {
			return err
		}
		unlock := v.lock(s.ID)
		defer unlock()
		res := r.db.WithContext(ctx).Where("session_id = ? AND path = ?", s.ID, path).Delete(&models.VolumeFile{})
		if res.Error != nil {
			return res.Error
		}
		err = v.Store.Delete(ctx, s.ID, path)
		if errors.Is(err, volume.ErrNotFound) || errors.Is(err, volume.ErrNotFile) {
			if res.RowsAffected == 0 {
				return notFound("file", path)
			}
			err = nil
		}
		if err != nil {
			return err
		}
		r.volumeChanged(ctx, s, path, "deleted")
		return nil
	}, session)
}

// volumeChanged tells live pages and meters the volume's new size.
func (r *Runtime) volumeChanged(ctx context.Context, s models.Session, path, state string) {
	r.publish(Event{Kind: "volume", ID: path, SessionID: s.ID, State: state})
	_, total, err := r.volumeTotals(ctx, r.db.DB, s.ID)
	if err == nil {
		err = r.storageKept(ctx, UsageVolumeBytes, s.ID, s.ID, s.AgentID, total, r.now())
	}
	if err != nil {
		r.opts.Log.Error("runtime: meter volume", "session", s.ID, "err", err)
	}
}

func (v *volumeSet) checkDisk() error {
	min := v.MinFreeDisk
	if min < 0 || v.DiskDir == "" {
		return nil
	}
	if min == 0 {
		min = sandbox.DefaultMinFreeDisk
	}
	free, err := sandbox.FreeBytes(v.DiskDir)
	if err != nil {
		return err
	}
	if free < min {
		return overCapacity((&sandbox.DiskFullError{What: "write to the volume", Free: free, Min: min}).Error(), sandbox.DiskFullRetry)
	}
	return nil
}

// accrueVolumes extends the storage records of volumes whose last record is
// at least every old.
func (r *Runtime) accrueVolumes(ctx context.Context, every time.Duration) error {
	var ids []string
	if err := r.db.WithContext(ctx).Model(&models.VolumeFile{}).Distinct("session_id").Pluck("session_id", &ids).Error; err != nil {
		return fmt.Errorf("runtime: volumes: %w", err)
	}
	now := r.now()
	var errs []error
	for _, id := range ids {
		last, err := r.lastStorageUsage(ctx, UsageVolumeBytes, id)
		if err != nil || last == nil || now.Sub(last.EndedAt) < every {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, r.accrueStorage(ctx, *last, now))
	}
	return errors.Join(errs...)
}
