package runtime

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/egress"
	"github.com/subako/subako/runtime/notify"
)

// NotifyOptions configure the notifier; zero fields take the defaults below.
type NotifyOptions struct {
	// BaseURL is the console's public URL, for the link to an approval.
	BaseURL string
	// SMTP is the mail server (--smtp-url, --smtp-from); nil offers no email.
	SMTP *notify.SMTP
	// Timeout bounds one delivery attempt (--notify-timeout).
	Timeout time.Duration
	// Attempts bounds the tries of one notification (--notify-attempts).
	Attempts int
	// Backoff is the wait before the first retry, doubled after each
	// failure up to MaxBackoff (--notify-backoff).
	Backoff    time.Duration
	MaxBackoff time.Duration
	// Workers bounds the deliveries in flight, so slow channels cannot
	// hold every worker (--notify-workers).
	Workers int
	// Poll is how often the outbox is read when no event wakes the notifier.
	Poll time.Duration
	// Retention is how long finished notifications and their attempts are
	// kept (--notify-retention), so the outbox does not grow without end.
	Retention time.Duration
}

// Notification states.
const (
	NotificationPending   = "pending"
	NotificationDelivered = "delivered"
	NotificationFailed    = "failed"
	// NotificationCancelled: the approval was decided or expired, or the
	// channel or recipient went away, before delivery.
	NotificationCancelled = "cancelled"
)

const maxRecipients = 200

func (o NotifyOptions) withDefaults() NotifyOptions {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Attempts <= 0 {
		o.Attempts = 8
	}
	if o.Backoff <= 0 {
		o.Backoff = 10 * time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Minute
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.Retention <= 0 {
		o.Retention = 30 * 24 * time.Hour
	}
	return o
}

// notifier is the delivery side's state, made on first use.
type notifier struct {
	once   sync.Once
	opts   NotifyOptions
	client *http.Client
	slots  chan struct{}
}

func (r *Runtime) notifierState() *notifier {
	n := &r.notifier
	n.once.Do(func() {
		n.opts = r.opts.Notify.withDefaults()
		n.slots = make(chan struct{}, n.opts.Workers)
		// Webhook URLs are written by people in the console: they go through
		// the same egress guard as a version's MCP servers, and a redirect is
		// a failure, not a second destination.
		n.client = &http.Client{Transport: egress.Transport(r.opts.AllowPrivateEgress), Timeout: n.opts.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	})
	return n
}

// enqueueNotices writes the notifications of a new pending approval in the
// approval's own transaction: they exist exactly when it does, and delivery
// happens later, off the call's path.
func (r *Runtime) enqueueNotices(tx *gorm.DB, ap models.Approval, call models.ToolCall, s models.Session) error {
	var channels []models.NotificationChannel
	if err := tx.Where("enabled = ?", true).Find(&channels).Error; err != nil {
		return fmt.Errorf("runtime: notification channels: %w", err)
	}
	var out []models.Notification
	emailed := map[string]bool{} // one email a person, however many email channels match
	for _, c := range channels {
		if !matchesFilter(c.Agents, c.Grants, s.AgentID, call.GrantName) {
			continue
		}
		if c.Kind == ChannelWebhook {
			out = append(out, r.newNotice(ap, c, ""))
			continue
		}
		if r.opts.Notify.SMTP == nil {
			continue
		}
		to, err := r.recipients(tx, call, s)
		if err != nil {
			return err
		}
		for _, email := range to {
			if !emailed[email] {
				emailed[email] = true
				out = append(out, r.newNotice(ap, c, email))
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return tx.Create(&out).Error
}

func (r *Runtime) newNotice(ap models.Approval, c models.NotificationChannel, to string) models.Notification {
	return models.Notification{ID: newID("ntf"), ApprovalID: ap.ID, ChannelID: c.ID, Recipient: to, State: NotificationPending,
		NextAttemptAt: ap.CreatedAt, CreatedAt: ap.CreatedAt}
}

// recipients are the people who may decide this call and asked to hear of it.
func (r *Runtime) recipients(tx *gorm.DB, call models.ToolCall, s models.Session) ([]string, error) {
	var users []models.User
	if err := tx.Order("email").Find(&users).Error; err != nil {
		return nil, fmt.Errorf("runtime: approvers: %w", err)
	}
	var subs []models.NotificationSubscription
	if err := tx.Find(&subs).Error; err != nil {
		return nil, fmt.Errorf("runtime: subscriptions: %w", err)
	}
	byUser := map[string]models.NotificationSubscription{}
	for _, sub := range subs {
		byUser[sub.UserID] = sub
	}
	var out []string
	for _, u := range users {
		if !mayDecide(u, call) {
			continue
		}
		sub, ok := byUser[u.ID]
		if ok && !subscribed(sub, s.AgentID, call.GrantName) {
			continue
		}
		if out = append(out, u.Email); len(out) == maxRecipients {
			break
		}
	}
	return out, nil
}

// mayDecide mirrors checkDecision: the permission, and not one's own call.
func mayDecide(u models.User, call models.ToolCall) bool {
	if !UserPrincipal(u.ID, u.Email, u.Access).Can("Approval.approve") {
		return false
	}
	return call.ByKind != string(PrincipalUser) || call.ByID != u.ID
}

// DeliverNotifications delivers every notification that is due and waits
// for those it started. The notifier calls it on events and on a timer;
// tests with a fake clock call it directly.
func (r *Runtime) DeliverNotifications(ctx context.Context) {
	r.deliverDue(ctx).Wait()
}

// StartNotifier delivers in the background until ctx ends: at once when an
// approval is created, and every Poll for retries and restarts (the outbox
// is in the database, so nothing is lost across a restart).
func (r *Runtime) StartNotifier(ctx context.Context) {
	n := r.notifierState()
	events, stop := r.Subscribe(func(e Event) bool { return e.Kind == "approval" && e.State == ApprovalPending })
	go func() {
		defer stop()
		t := time.NewTicker(n.opts.Poll)
		defer t.Stop()
		var pruned time.Time // zero: the first tick prunes
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-events: // an approval asked, or a resync
				if !ok {
					return
				}
			case <-t.C:
				if time.Since(pruned) > time.Hour {
					r.runOnce(ctx, "notification-prune", 10*time.Minute, r.PruneNotifications)
					pruned = time.Now()
				}
			}
			// Every replica may deliver: each notification is claimed with
			// a conditional update (claimed_until), so it goes out once.
			r.deliverDue(ctx)
		}
	}()
}

// deliverDue claims due notifications while a worker slot is free and
// delivers each in its own goroutine; a slow channel holds one slot only.
func (r *Runtime) deliverDue(ctx context.Context) *sync.WaitGroup {
	n := r.notifierState()
	var wg sync.WaitGroup
	now := r.now()
	var due []models.Notification
	err := r.db.WithContext(ctx).Where("state = ? AND next_attempt_at <= ? AND (claimed_until IS NULL OR claimed_until < ?)",
		NotificationPending, now, now).Order("next_attempt_at, id").Limit(50).Find(&due).Error
	if err != nil {
		if ctx.Err() == nil {
			r.opts.Log.Warn("runtime: read the notification outbox", "err", err)
		}
		return &wg
	}
	for _, rec := range due {
		select {
		case n.slots <- struct{}{}:
		default:
			return &wg // every worker is busy: the next round takes the rest
		}
		// The lease makes one replica deliver each notification; a replica
		// that dies mid-delivery leaves it to be retried after the lease.
		res := r.db.WithContext(ctx).Model(&models.Notification{}).
			Where("id = ? AND state = ? AND (claimed_until IS NULL OR claimed_until < ?)", rec.ID, NotificationPending, now).
			Update("claimed_until", now.Add(n.opts.Timeout+30*time.Second))
		if res.Error != nil || res.RowsAffected != 1 {
			<-n.slots
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-n.slots }()
			r.deliverOne(ctx, n, rec)
		}()
	}
	return &wg
}

// deliverOne makes one attempt and records it. Stopping the server (ctx)
// cuts the attempt short; it is still recorded, and retried after restart.
func (r *Runtime) deliverOne(ctx context.Context, n *notifier, rec models.Notification) {
	send := ctx
	ctx = context.WithoutCancel(ctx)
	msg, ch, why := r.noticeMessage(ctx, rec)
	if why != "" {
		r.db.WithContext(ctx).Model(&models.Notification{}).Where("id = ?", rec.ID).
			Updates(map[string]any{"state": NotificationCancelled, "last_error": why, "claimed_until": nil})
		return
	}
	actx, cancel := context.WithTimeout(send, n.opts.Timeout)
	defer cancel()
	start := time.Now()
	status, err := r.send(actx, n, ch, rec, msg)
	att := models.NotificationAttempt{ID: newID("nat"), NotificationID: rec.ID, Number: rec.Attempts + 1, OK: err == nil,
		HTTPStatus: status, DurationMS: time.Since(start).Milliseconds(), CreatedAt: r.now()}
	upd := map[string]any{"attempts": att.Number, "claimed_until": nil}
	switch {
	case err == nil:
		upd["state"], upd["delivered_at"], upd["last_error"] = NotificationDelivered, r.now(), ""
	case att.Number >= n.opts.Attempts:
		att.Error = truncate(err.Error(), 1000)
		upd["state"], upd["last_error"] = NotificationFailed, att.Error
	default:
		att.Error = truncate(err.Error(), 1000)
		upd["last_error"], upd["next_attempt_at"] = att.Error, r.now().Add(backoff(n.opts, att.Number))
	}
	err = r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&att).Error; err != nil {
			return err
		}
		return tx.Model(&models.Notification{}).Where("id = ?", rec.ID).Updates(upd).Error
	})
	if err != nil {
		r.opts.Log.Error("runtime: record a notification attempt", "notification", rec.ID, "err", err)
	}
	if att.Error != "" {
		// Errors name the step and the server's answer, never a URL or password.
		r.opts.Log.Warn("notification attempt failed", "notification", rec.ID, "channel", rec.ChannelID, "attempt", att.Number, "err", att.Error)
	}
}

// backoff after the n-th failure: Backoff, doubled each time, capped.
func backoff(o NotifyOptions, n int) time.Duration {
	d := o.Backoff
	for i := 1; i < n && d < o.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, o.MaxBackoff)
}

func (r *Runtime) send(ctx context.Context, n *notifier, ch models.NotificationChannel, rec models.Notification, msg notify.Message) (int, error) {
	if ch.Kind == ChannelEmail {
		if r.opts.Notify.SMTP == nil {
			return 0, errors.New("no mail server: the server was started without --smtp-url")
		}
		return 0, r.opts.Notify.SMTP.Send(ctx, rec.Recipient, notify.EmailSubject(msg), notify.EmailText(msg))
	}
	w, err := r.openWebhook(ch)
	if err != nil {
		return 0, err
	}
	return notify.Webhook{URL: w.URL, Secret: w.Secret, Format: ch.Format}.Send(ctx, n.client, msg, r.now())
}

// noticeMessage reads what the message says, or why it should not be sent.
func (r *Runtime) noticeMessage(ctx context.Context, rec models.Notification) (notify.Message, models.NotificationChannel, string) {
	var ch models.NotificationChannel
	if err := r.db.WithContext(ctx).First(&ch, "id = ?", rec.ChannelID).Error; err != nil || !ch.Enabled {
		return notify.Message{}, ch, "the channel was disabled or deleted"
	}
	var rows []queueRow
	r.queueFrom(ctx).Select(queueColumns).Where("a.id = ?", rec.ApprovalID).Scan(&rows)
	if len(rows) == 0 {
		return notify.Message{}, ch, "the approval no longer exists"
	}
	row := rows[0]
	if row.State != ApprovalPending || !r.now().Before(row.ExpiresAt) {
		return notify.Message{}, ch, "the approval was already " + orID(row.State, "decided") + " before delivery"
	}
	if rec.Recipient != "" {
		var u models.User
		err := r.db.WithContext(ctx).First(&u, "email = ?", rec.Recipient).Error
		if err != nil || !mayDecide(u, models.ToolCall{}) {
			return notify.Message{}, ch, "the recipient may no longer decide approvals"
		}
	}
	return notify.Message{Delivery: rec.ID, Approval: row.ID, Call: row.ToolCallID, Session: row.SessionID,
		SessionTitle: row.SessionTitle, Agent: row.AgentID, AgentName: row.AgentName, Tool: row.Tool, Kind: row.Kind,
		Grant: row.GrantName, By: row.ByLabel, Model: row.Model, CreatedAt: row.CreatedAt, ExpiresAt: row.ExpiresAt,
		URL: approvalURL(r.opts.Notify.BaseURL, row.ID)}, ch, ""
}

// approvalURL opens the approvals page filtered to one approval and
// scrolled to it. It carries no token: deciding needs a signed-in approver.
func approvalURL(base, id string) string {
	return base + "/approvals?approval=" + id + "#approval-" + id
}

// SMTPServer names the mail server for pages (scheme, host and port, never
// the credentials), or "" when email is off.
func (r *Runtime) SMTPServer() string {
	if r.opts.Notify.SMTP == nil {
		return ""
	}
	return r.opts.Notify.SMTP.Server()
}

// PruneNotifications deletes finished notifications (delivered, failed,
// cancelled) older than the retention, with their attempts. Pending ones
// are kept whatever their age: they end by delivery or by their attempts.
func (r *Runtime) PruneNotifications(ctx context.Context) {
	cutoff := r.now().Add(-r.notifierState().opts.Retention)
	old := r.db.WithContext(ctx).Model(&models.Notification{}).Select("id").Where("state <> ? AND created_at < ?", NotificationPending, cutoff)
	err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("notification_id IN (?)", old).Delete(&models.NotificationAttempt{}).Error; err != nil {
			return err
		}
		return tx.Where("state <> ? AND created_at < ?", NotificationPending, cutoff).Delete(&models.Notification{}).Error
	})
	if err != nil && ctx.Err() == nil {
		r.opts.Log.Warn("runtime: prune notifications", "err", err)
	}
}
