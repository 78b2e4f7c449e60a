package runtime

import "context"

// giveBackUnit returns the unit of g's count limit that a call took when the
// verb then refused the call for its input (422): such a call did nothing,
// so a mistyped field does not use up the period's calls. A spend ceiling's
// reservation is not given back here.
func (r *Runtime) giveBackUnit(ctx context.Context, p Principal, g Grant) {
	if g.Limit.Count <= 0 || g.PermissionID == "" || r.db == nil {
		return
	}
	start, _, err := periodBounds(g.Limit.Period, r.now())
	if err != nil {
		return
	}
	err = r.db.WithContext(context.WithoutCancel(ctx)).Exec(`UPDATE limit_usage SET used = used - 1
WHERE permission_id = ? AND holder_id = ? AND period_start = ? AND used > 0`, g.PermissionID, p.ID, start).Error
	if err != nil {
		r.opts.Log.Error("runtime: give back a limit's unit", "permission", g.PermissionID, "err", err)
	}
}
