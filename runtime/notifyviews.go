package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
)

// Subscription modes: every approval the person may decide, none, or only
// those of the chosen agents or grants.
const (
	SubscribeAll  = "all"
	SubscribeNone = "none"
	SubscribeSome = "some"
)

// SubscriptionView is which approvals email one person. A person who never
// chose hears of all they may decide.
type SubscriptionView struct {
	Mode   string   `json:"mode"`
	Agents []string `json:"agents"`
	Grants []string `json:"grants"`
}

// SubscriptionGet is Subscription.get: the caller's own choice.
func (r *Runtime) SubscriptionGet(ctx context.Context, p Principal) (SubscriptionView, error) {
	out := SubscriptionView{Mode: SubscribeAll, Agents: []string{}, Grants: []string{}}
	err := r.run(ctx, p, "Subscription.get", func(a *act) error {
		if p.Kind != PrincipalUser {
			return forbidden("people_only", "subscriptions belong to people")
		}
		var sub models.NotificationSubscription
		err := r.db.WithContext(ctx).First(&sub, "user_id = ?", p.ID).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("runtime: read subscription: %w", err)
		}
		out = SubscriptionView{Mode: sub.Mode, Agents: lines(sub.Agents), Grants: lines(sub.Grants)}
		return nil
	})
	return out, err
}

// SubscriptionUpdate is Subscription.update: the caller chooses which
// approvals email them.
func (r *Runtime) SubscriptionUpdate(ctx context.Context, p Principal, in SubscriptionView) (SubscriptionView, error) {
	var out SubscriptionView
	err := r.run(ctx, p, "Subscription.update", func(a *act) error {
		if p.Kind != PrincipalUser {
			return forbidden("people_only", "subscriptions belong to people")
		}
		sub := models.NotificationSubscription{UserID: p.ID, Mode: in.Mode, UpdatedAt: r.now()}
		switch in.Mode {
		case SubscribeAll, SubscribeNone:
		case SubscribeSome:
			agents, err := r.filterAgents(ctx, in.Agents)
			if err != nil {
				return err
			}
			grants, err := filterGrants(in.Grants)
			if err != nil {
				return err
			}
			if len(agents) == 0 && len(grants) == 0 {
				return invalid("agents", "nothing_chosen", "choose at least one agent or grant, or mode all or none")
			}
			sub.Agents, sub.Grants = strings.Join(agents, "\n"), strings.Join(grants, "\n")
		default:
			return invalid("mode", "invalid_mode", "mode must be all, none or some")
		}
		if err := r.db.WithContext(ctx).Save(&sub).Error; err != nil {
			return fmt.Errorf("runtime: save subscription: %w", err)
		}
		out = SubscriptionView{Mode: sub.Mode, Agents: lines(sub.Agents), Grants: lines(sub.Grants)}
		return nil
	})
	return out, err
}

// subscribed applies a saved subscription to one approval.
func subscribed(sub models.NotificationSubscription, agentID, grant string) bool {
	switch sub.Mode {
	case SubscribeNone:
		return false
	case SubscribeSome:
		return matchesFilter(sub.Agents, sub.Grants, agentID, grant)
	}
	return true
}

// NotificationView is one notification with its attempts.
type NotificationView struct {
	ID            string        `json:"id"`
	Approval      string        `json:"approval"`
	Channel       string        `json:"channel"`
	ChannelName   string        `json:"channel_name"`
	Recipient     string        `json:"recipient,omitempty"`
	State         string        `json:"state"`
	Attempts      int           `json:"attempts"`
	NextAttemptAt *time.Time    `json:"next_attempt_at,omitempty"`
	LastError     string        `json:"last_error,omitempty"`
	CreatedAt     time.Time     `json:"created_at"`
	DeliveredAt   *time.Time    `json:"delivered_at"`
	Tries         []AttemptView `json:"tries"`
}

// AttemptView is one delivery attempt: how it ended and how long it took.
type AttemptView struct {
	Number     int       `json:"number"`
	OK         bool      `json:"ok"`
	HTTPStatus int       `json:"http_status,omitempty"`
	Error      string    `json:"error,omitempty"`
	DurationMS int64     `json:"duration_ms"`
	At         time.Time `json:"at"`
}

// NotificationFilter narrows Notification.list.
type NotificationFilter struct {
	Channel  string `query:"channel" json:"channel"`
	Approval string `query:"approval" json:"approval"`
	State    string `query:"state" json:"state"`
	Limit    int    `query:"limit" json:"limit"`
}

// NotificationList is Notification.list: the outbox, newest first, with
// every attempt, so an operator sees why a channel is not heard.
func (r *Runtime) NotificationList(ctx context.Context, p Principal, f NotificationFilter) ([]NotificationView, error) {
	out := []NotificationView{}
	err := r.run(ctx, p, "Notification.list", func(a *act) error {
		switch f.State {
		case "", NotificationPending, NotificationDelivered, NotificationFailed, NotificationCancelled:
		default:
			return invalid("state", "invalid_state", "state must be pending, delivered, failed or cancelled")
		}
		if f.Limit < 0 || f.Limit > 200 {
			return invalid("limit", "invalid_limit", "limit must be between 1 and 200")
		}
		if f.Limit == 0 {
			f.Limit = 50
		}
		q := r.db.WithContext(ctx).Order("created_at DESC, id DESC").Limit(f.Limit)
		if f.Channel != "" {
			q = q.Where("channel_id = ?", f.Channel)
		}
		if f.Approval != "" {
			q = q.Where("approval_id = ?", f.Approval)
		}
		if f.State != "" {
			q = q.Where("state = ?", f.State)
		}
		var recs []models.Notification
		if err := q.Find(&recs).Error; err != nil {
			return fmt.Errorf("runtime: list notifications: %w", err)
		}
		return r.notificationViews(ctx, recs, &out)
	})
	return out, err
}

func (r *Runtime) notificationViews(ctx context.Context, recs []models.Notification, out *[]NotificationView) error {
	if len(recs) == 0 {
		return nil
	}
	ids := make([]string, len(recs))
	for i, n := range recs {
		ids[i] = n.ID
	}
	var atts []models.NotificationAttempt
	if err := r.db.WithContext(ctx).Where("notification_id IN ?", ids).Order("number").Find(&atts).Error; err != nil {
		return fmt.Errorf("runtime: list notification attempts: %w", err)
	}
	tries := map[string][]AttemptView{}
	for _, t := range atts {
		tries[t.NotificationID] = append(tries[t.NotificationID], AttemptView{Number: t.Number, OK: t.OK, HTTPStatus: t.HTTPStatus,
			Error: t.Error, DurationMS: t.DurationMS, At: t.CreatedAt})
	}
	var chans []models.NotificationChannel
	r.db.WithContext(ctx).Select("id", "name").Find(&chans)
	names := map[string]string{}
	for _, c := range chans {
		names[c.ID] = c.Name
	}
	for _, n := range recs {
		v := NotificationView{ID: n.ID, Approval: n.ApprovalID, Channel: n.ChannelID, ChannelName: names[n.ChannelID],
			Recipient: n.Recipient, State: n.State, Attempts: n.Attempts, LastError: n.LastError, CreatedAt: n.CreatedAt,
			DeliveredAt: n.DeliveredAt, Tries: tries[n.ID]}
		if v.Tries == nil {
			v.Tries = []AttemptView{}
		}
		if n.State == NotificationPending {
			v.NextAttemptAt = ptr(n.NextAttemptAt)
		}
		*out = append(*out, v)
	}
	return nil
}
