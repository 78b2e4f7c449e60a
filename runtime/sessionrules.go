package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/subako/subako/models"
)

// SessionRuleView is an approver's "allow for this session" for one exact tool.
type SessionRuleView struct {
	ID        string    `json:"id"`
	Session   string    `json:"session"`
	Tool      string    `json:"tool"`
	Policy    string    `json:"policy"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
}

// SessionRuleList is SessionRule.list: the session's rules, oldest first.
func (r *Runtime) SessionRuleList(ctx context.Context, p Principal, session string) ([]SessionRuleView, error) {
	out := []SessionRuleView{}
	err := r.run(ctx, p, "SessionRule.list", func(a *act) error {
		if _, err := r.loadSession(ctx, p, session); err != nil {
			return err
		}
		var recs []models.SessionRule
		if err := r.db.WithContext(ctx).Where("session_id = ?", session).Order("created_at, id").Find(&recs).Error; err != nil {
			return fmt.Errorf("runtime: list session rules: %w", err)
		}
		who := r.userLabels(ctx, recs)
		for _, rec := range recs {
			out = append(out, SessionRuleView{ID: rec.ID, Session: rec.SessionID, Tool: rec.Tool, Policy: rec.Policy,
				CreatedBy: who[rec.CreatedBy], CreatedAt: rec.CreatedAt})
		}
		return nil
	}, session)
	return out, err
}

// userLabels names the people who set rules by email; a person removed since
// keeps their id, so the rule still says who set it.
func (r *Runtime) userLabels(ctx context.Context, recs []models.SessionRule) map[string]string {
	ids := make([]string, 0, len(recs))
	out := map[string]string{}
	for _, rec := range recs {
		ids = append(ids, rec.CreatedBy)
		out[rec.CreatedBy] = rec.CreatedBy
	}
	if len(ids) == 0 {
		return out
	}
	var users []models.User
	r.db.WithContext(ctx).Where("id IN ?", ids).Find(&users)
	for _, u := range users {
		out[u.ID] = u.Email
	}
	return out
}

// SessionRuleRevoke is SessionRule.revoke: the tool asks first again in this
// session from the next call on.
func (r *Runtime) SessionRuleRevoke(ctx context.Context, p Principal, session, rule string) error {
	return r.run(ctx, p, "SessionRule.revoke", func(a *act) error {
		s, err := r.loadSession(ctx, p, session)
		if err != nil {
			return err
		}
		if s.State != SessionActive {
			// Nothing can be called any more; the rules stay as the record of what it allowed.
			return conflict("session_ended", "the session has ended: its rules stay as the record of what it allowed")
		}
		res := r.db.WithContext(ctx).Where("id = ? AND session_id = ?", rule, s.ID).Delete(&models.SessionRule{})
		if res.Error != nil {
			return fmt.Errorf("runtime: revoke session rule %s: %w", rule, res.Error)
		}
		if res.RowsAffected == 0 {
			return notFound("session rule", rule)
		}
		r.publish(Event{Kind: "session", ID: s.ID, SessionID: s.ID, State: s.State})
		return nil
	}, session, rule)
}
