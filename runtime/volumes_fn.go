package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/fn"
	"github.com/subako/subako/runtime/tools"
	"github.com/subako/subako/runtime/volume"
)

// volumeMount is what a function call sees of its session's volume: nothing
// unless its grant says read or write (and the store keeps files on this
// machine). A writing call may add what the volume's limits leave room for
// when it starts.
func (r *Runtime) volumeMount(ctx context.Context, c FunctionCall) *fn.VolumeMount {
	v := r.volumes.Load()
	if v == nil || c.Grant.Volume == "" || c.Grant.Volume == tools.VolumeNone {
		return nil
	}
	dir, ok := v.Store.LocalDir(c.SessionID)
	if !ok {
		return nil
	}
	m := &fn.VolumeMount{Dir: dir, Write: c.Grant.Volume == tools.VolumeWrite, MaxFileBytes: v.MaxFileBytes}
	if m.Write {
		n, total, err := r.volumeTotals(ctx, r.db.DB, c.SessionID)
		if err != nil || v.checkDisk() != nil {
			m.Write = false // no room can be promised: read only
		}
		m.MaxNewBytes, m.MaxNewFiles = max(v.MaxTotalBytes-total, 0), max(v.MaxFiles-n, 0)
	}
	return m
}

// volumeAfterCall brings the volume's records up to date with what a call
// wrote and deleted, notes on the call what it touched, and tells the
// session page.
func (r *Runtime) volumeAfterCall(ctx context.Context, c FunctionCall, accesses []fn.VolumeAccess) {
	v := r.volumes.Load()
	if v == nil || len(accesses) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if b, err := json.Marshal(accesses); err == nil {
		rec := models.ToolCallVolume{ToolCallID: c.CallID, SessionID: c.SessionID, Access: string(b)}
		if err := r.db.WithContext(ctx).Save(&rec).Error; err != nil {
			r.opts.Log.Error("runtime: record a call's volume use", "call", c.CallID, "err", err)
		}
	}
	changed := map[string]bool{}
	folderMoved := false
	for _, a := range accesses {
		if a.Op == fn.VolumeRead {
			continue
		}
		if strings.HasSuffix(a.Path, "/") {
			folderMoved = true
			continue
		}
		changed[a.Path] = true
	}
	if len(changed) == 0 && !folderMoved {
		return
	}
	unlock := v.lock(c.SessionID)
	defer unlock()
	if folderMoved { // a folder renamed: every path under it moved
		var known []string
		r.db.WithContext(ctx).Model(&models.VolumeFile{}).Where("session_id = ?", c.SessionID).Pluck("path", &known)
		for _, p := range known {
			changed[p] = true
		}
		if dir, ok := v.Store.LocalDir(c.SessionID); ok {
			files, _ := volume.Walk(dir, v.MaxFiles+1000)
			for _, f := range files {
				changed[f.Path] = true
			}
		}
	}
	var s models.Session
	r.db.WithContext(ctx).First(&s, "id = ?", c.SessionID)
	for p := range changed {
		info, err := v.Store.Hash(ctx, c.SessionID, p)
		switch {
		case errors.Is(err, volume.ErrNotFound) || errors.Is(err, volume.ErrNotFile) || volume.CheckPath(p) != nil:
			err = r.db.WithContext(ctx).Where("session_id = ? AND path = ?", c.SessionID, p).Delete(&models.VolumeFile{}).Error
		case err == nil:
			err = r.saveVolumeFile(ctx, models.VolumeFile{SessionID: c.SessionID, Path: p, Size: info.Size, SHA256: info.SHA256,
				ModifiedAt: r.now(), ModifiedBy: "call " + c.CallID})
		}
		if err != nil {
			r.opts.Log.Error("runtime: record a volume file", "session", c.SessionID, "path", p, "err", err)
		}
	}
	for p := range changed {
		r.publish(Event{Kind: "volume", ID: p, SessionID: c.SessionID, State: "written"})
	}
	_, total, err := r.volumeTotals(ctx, r.db.DB, c.SessionID)
	if err == nil {
		err = r.storageKept(ctx, UsageVolumeBytes, c.SessionID, c.SessionID, s.AgentID, total, r.now())
	}
	if err != nil {
		r.opts.Log.Error("runtime: meter volume", "session", c.SessionID, "err", err)
	}
}

// callVolume is what a call read and wrote in its volume, for ToolCall.get.
func (r *Runtime) callVolume(ctx context.Context, callID string) []fn.VolumeAccess {
	var rec models.ToolCallVolume
	if r.db.WithContext(ctx).Limit(1).Find(&rec, "tool_call_id = ?", callID).RowsAffected == 0 {
		return nil
	}
	var out []fn.VolumeAccess
	_ = json.Unmarshal([]byte(rec.Access), &out)
	return out
}

// fillCallVolumes adds to a session's calls what each function call or
// sandbox exec among them read and wrote in the volume, in one query by
// the calls' ids (none when the page has neither): not the session's every
// record.
func (r *Runtime) fillCallVolumes(ctx context.Context, session string, calls []ToolCallView) {
	var ids []string
	for _, c := range calls {
		if touchesVolume(c.Kind) {
			ids = append(ids, c.ID)
		}
	}
	if len(ids) == 0 {
		return
	}
	var recs []models.ToolCallVolume
	if r.db.WithContext(ctx).Where("tool_call_id IN ? AND session_id = ?", ids, session).Find(&recs).Error != nil || len(recs) == 0 {
		return
	}
	by := map[string][]fn.VolumeAccess{}
	for _, rec := range recs {
		var a []fn.VolumeAccess
		if json.Unmarshal([]byte(rec.Access), &a) == nil {
			by[rec.ToolCallID] = a
		}
	}
	for i := range calls {
		calls[i].Volume = by[calls[i].ID]
	}
}

// touchesVolume tells whether a call of kind may leave a record of what it
// did in the session's volume: a function's call, a sandbox's exec.
func touchesVolume(kind string) bool { return kind == tools.KindFn || kind == tools.KindSandbox }
