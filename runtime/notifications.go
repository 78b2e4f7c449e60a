package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/egress"
	"github.com/subako/subako/runtime/notify"
)

// Channel kinds.
const (
	ChannelWebhook = "webhook"
	ChannelEmail   = "email"
)

// Limits of notification channels.
const (
	maxChannels       = 50
	maxChannelName    = 64
	maxChannelURL     = 2048
	maxFilterEntries  = 100
	channelSecretSize = 32
)

// ChannelView is a channel as interfaces show it. Secret is set only in the
// answer that created it or rotated it: it is sealed and never shown again.
type ChannelView struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Kind      string    `json:"kind"`
	Format    string    `json:"format,omitempty"`
	URLHint   string    `json:"url_hint,omitempty"`
	Agents    []string  `json:"agents"`
	Grants    []string  `json:"grants"`
	Enabled   bool      `json:"enabled"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Secret    string    `json:"secret,omitempty"`
}

// ChannelInput is Channel.create's body and, with pointers set, Channel.update's.
type ChannelInput struct {
	Channel      string    `json:"-" param:"channel"`
	Name         *string   `json:"name"`
	Kind         string    `json:"kind"`
	Format       *string   `json:"format"`
	URL          *string   `json:"url"`
	Agents       *[]string `json:"agents"`
	Grants       *[]string `json:"grants"`
	Enabled      *bool     `json:"enabled"`
	RotateSecret bool      `json:"rotate_secret"`
}

// sealedWebhook is what a webhook channel keeps sealed: its URL (a Slack
// URL is itself a credential) and its signing secret.
type sealedWebhook struct {
	URL    string `json:"url"`
	Secret string `json:"secret"`
}

func channelView(c models.NotificationChannel) ChannelView {
	return ChannelView{ID: c.ID, Name: c.Name, Kind: c.Kind, Format: c.Format, URLHint: c.URLHint, Agents: lines(c.Agents),
		Grants: lines(c.Grants), Enabled: c.Enabled, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

func lines(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, "\n")
}

// ChannelList is Channel.list.
func (r *Runtime) ChannelList(ctx context.Context, p Principal) ([]ChannelView, error) {
	out := []ChannelView{}
	err := r.run(ctx, p, "Channel.list", func(a *act) error {
		var recs []models.NotificationChannel
		if err := r.db.WithContext(ctx).Order("name").Find(&recs).Error; err != nil {
			return fmt.Errorf("runtime: list channels: %w", err)
		}
		for _, c := range recs {
			out = append(out, channelView(c))
		}
		return nil
	})
	return out, err
}

// ChannelCreate is Channel.create. A webhook gets a fresh signing secret,
// returned in this answer only.
func (r *Runtime) ChannelCreate(ctx context.Context, p Principal, in ChannelInput) (ChannelView, error) {
	var out ChannelView
	err := r.run(ctx, p, "Channel.create", func(a *act) error {
		now := r.now()
		c := models.NotificationChannel{ID: newID("chn"), Kind: in.Kind, Enabled: true, CreatedBy: p.ID, CreatedAt: now, UpdatedAt: now}
		a.target(c.ID)
		if in.Kind != ChannelWebhook && in.Kind != ChannelEmail {
			return invalid("kind", "invalid_kind", "kind must be webhook or email")
		}
		if in.Kind == ChannelEmail && r.opts.Notify.SMTP == nil {
			return invalid("kind", "smtp_not_configured", "email needs a mail server: start subako serve with --smtp-url and --smtp-from")
		}
		if in.Name == nil {
			return invalid("name", "name_required", fmt.Sprintf("name must be 1 to %d characters", maxChannelName))
		}
		if in.Kind == ChannelWebhook && in.URL == nil {
			return invalid("url", "url_required", "a webhook needs the url it posts to")
		}
		if in.Enabled != nil {
			c.Enabled = *in.Enabled
		}
		secret, err := r.applyChannelInput(ctx, &c, in, sealedWebhook{})
		if err != nil {
			return err
		}
		return r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var n int64
			if err := tx.Model(&models.NotificationChannel{}).Count(&n).Error; err != nil {
				return err
			}
			if n >= maxChannels {
				return conflict("too_many_channels", fmt.Sprintf("a server holds at most %d channels: delete one first", maxChannels))
			}
			if err := r.channelNameFree(tx, c.Name, ""); err != nil {
				return err
			}
			if err := tx.Create(&c).Error; err != nil {
				return fmt.Errorf("runtime: create channel: %w", err)
			}
			out = channelView(c)
			out.Secret = secret
			return nil
		})
	})
	return out, err
}

func (r *Runtime) channelNameFree(tx *gorm.DB, name, except string) error {
	var n int64
	if err := tx.Model(&models.NotificationChannel{}).Where("name = ? AND id <> ?", name, except).Count(&n).Error; err != nil {
		return err
	}
	if n > 0 {
		return &Error{Kind: KindConflict, Code: "name_taken", Title: "Name taken", Field: "name",
			Detail: fmt.Sprintf("a channel named %q already exists", name)}
	}
	return nil
}

// ChannelUpdate is Channel.update: only the fields given change. A new URL
// keeps the signing secret; rotate_secret makes a new one, returned once.
func (r *Runtime) ChannelUpdate(ctx context.Context, p Principal, in ChannelInput) (ChannelView, error) {
	var out ChannelView
	err := r.run(ctx, p, "Channel.update", func(a *act) error {
		return r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var c models.NotificationChannel
			if err := tx.First(&c, "id = ? OR name = ?", in.Channel, in.Channel).Error; err != nil {
				if errors.Is(err, gorm.ErrRecordNotFound) {
					return notFound("channel", in.Channel)
				}
				return err
			}
			a.target(c.ID)
			if in.Kind != "" && in.Kind != c.Kind {
				return invalid("kind", "kind_fixed", "a channel's kind cannot change: create another channel")
			}
			var old sealedWebhook
			if c.Kind == ChannelWebhook {
				var err error
				if old, err = r.openWebhook(c); err != nil {
					return err
				}
			}
			secret, err := r.applyChannelInput(ctx, &c, in, old)
			if err != nil {
				return err
			}
			if in.Enabled != nil {
				c.Enabled = *in.Enabled
			}
			if err := r.channelNameFree(tx, c.Name, c.ID); err != nil {
				return err
			}
			c.UpdatedAt = r.now()
			if err := tx.Save(&c).Error; err != nil {
				return fmt.Errorf("runtime: update channel: %w", err)
			}
			out = channelView(c)
			out.Secret = secret
			return nil
		})
	}, in.Channel)
	return out, err
}

// ChannelDelete is Channel.delete; its undelivered notifications go with it.
func (r *Runtime) ChannelDelete(ctx context.Context, p Principal, ref string) error {
	return r.run(ctx, p, "Channel.delete", func(a *act) error {
		return r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var c models.NotificationChannel
			if err := tx.First(&c, "id = ? OR name = ?", ref, ref).Error; err != nil {
				if errors.Is(err, gorm.ErrRecordNotFound) {
					return notFound("channel", ref)
				}
				return err
			}
			a.target(c.ID)
			// Explicit, not left to ON DELETE CASCADE: SQLite enforces it
			// only when foreign keys are switched on.
			sub := tx.Model(&models.Notification{}).Select("id").Where("channel_id = ?", c.ID)
			if err := tx.Where("notification_id IN (?)", sub).Delete(&models.NotificationAttempt{}).Error; err != nil {
				return err
			}
			if err := tx.Where("channel_id = ?", c.ID).Delete(&models.Notification{}).Error; err != nil {
				return err
			}
			return tx.Delete(&c).Error
		})
	}, ref)
}

var channelNamePattern = regexp.MustCompile(`^[\p{L}\p{N} ._-]+$`)

// applyChannelInput checks and applies what the input sets; it returns a
// signing secret when one was made.
func (r *Runtime) applyChannelInput(ctx context.Context, c *models.NotificationChannel, in ChannelInput, sealed sealedWebhook) (string, error) {
	if in.Name != nil {
		name := strings.TrimSpace(*in.Name)
		if name == "" || utf8.RuneCountInString(name) > maxChannelName || !channelNamePattern.MatchString(name) {
			return "", invalid("name", "invalid_name", fmt.Sprintf("name must be 1 to %d letters, digits, spaces, '.', '_' or '-'", maxChannelName))
		}
		c.Name = name
	}
	if in.Format != nil {
		switch {
		case c.Kind == ChannelEmail && *in.Format != "":
			return "", invalid("format", "invalid_format", "format applies to webhooks only")
		case c.Kind == ChannelWebhook && *in.Format != notify.FormatJSON && *in.Format != notify.FormatSlack:
			return "", invalid("format", "invalid_format", "format must be json or slack")
		}
		c.Format = *in.Format
	}
	if c.Kind == ChannelWebhook && c.Format == "" {
		c.Format = notify.FormatJSON
	}
	if in.Agents != nil {
		ids, err := r.filterAgents(ctx, *in.Agents)
		if err != nil {
			return "", err
		}
		c.Agents = strings.Join(ids, "\n")
	}
	if in.Grants != nil {
		names, err := filterGrants(*in.Grants)
		if err != nil {
			return "", err
		}
		c.Grants = strings.Join(names, "\n")
	}
	if c.Kind != ChannelWebhook {
		if in.URL != nil {
			return "", invalid("url", "invalid_url", "url applies to webhooks only: email goes to subscribed approvers")
		}
		if in.RotateSecret {
			return "", invalid("rotate_secret", "invalid_rotate", "only webhooks are signed")
		}
		return "", nil
	}
	fresh := ""
	if sealed.Secret == "" || in.RotateSecret {
		fresh, _ = newSecret("whsec")
		sealed.Secret = fresh
	}
	if in.URL != nil {
		hint, err := checkWebhookURL(*in.URL)
		if err != nil {
			return "", err
		}
		if err := r.checkWebhookAddress(*in.URL); err != nil {
			return "", err
		}
		sealed.URL, c.URLHint = strings.TrimSpace(*in.URL), hint
	}
	plain, _ := json.Marshal(sealed)
	keyID, ct, err := r.opts.Keys.Seal(plain, []byte(c.ID))
	if err != nil {
		return "", fmt.Errorf("runtime: seal channel: %w", err)
	}
	c.KeyID, c.Ciphertext = keyID, ct
	return fresh, nil
}

func (r *Runtime) openWebhook(c models.NotificationChannel) (sealedWebhook, error) {
	var w sealedWebhook
	plain, err := r.opts.Keys.Open(c.KeyID, c.Ciphertext, []byte(c.ID))
	if err != nil {
		return w, fmt.Errorf("runtime: open channel %s: %w", c.ID, err)
	}
	err = json.Unmarshal(plain, &w)
	return w, err
}

// checkWebhookURL accepts an http(s) URL and returns what may be shown of
// it: the scheme and host. Where it may lead is judged at dial time by the
// egress guard, as for MCP servers.
func checkWebhookURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if len(raw) > maxChannelURL {
		return "", invalid("url", "url_too_long", fmt.Sprintf("url must be at most %d bytes; it has %d", maxChannelURL, len(raw)))
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", invalid("url", "invalid_url", "url must be an http:// or https:// address such as https://hooks.example.com/subako")
	}
	return u.Scheme + "://" + u.Host + "/…", nil
}

// checkWebhookAddress refuses, when the channel is saved, a URL whose host
// is an address the egress guard refuses (http://127.0.0.1:9000/hook,
// http://10.0.0.5/...), instead of accepting it and failing at the first
// waiting call. A name is still judged at dial time only, on the address it
// resolves to then (see package egress).
func (r *Runtime) checkWebhookAddress(raw string) error {
	if r.opts.AllowPrivateEgress {
		return nil
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil
	}
	addr, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return nil
	}
	var refused *egress.RefusedError
	if !errors.As(egress.Check(addr), &refused) {
		return nil
	}
	if refused.Own {
		return invalid("url", "egress_refused", fmt.Sprintf("url points at %s, this server's own address, which webhooks may not reach; start the server with --egress-allow-private to allow it", addr))
	}
	return invalid("url", "egress_refused", fmt.Sprintf("url points at %s, a private or loopback address, which webhooks may not reach; start the server with --egress-allow-private to allow them", addr))
}

// filterAgents resolves agent ids or names to ids; each must exist.
func (r *Runtime) filterAgents(ctx context.Context, refs []string) ([]string, error) {
	if len(refs) > maxFilterEntries {
		return nil, invalid("agents", "too_many", fmt.Sprintf("agents may list at most %d agents; it lists %d", maxFilterEntries, len(refs)))
	}
	var out []string
	for i, ref := range refs {
		var g models.Agent
		if err := r.db.WithContext(ctx).First(&g, "id = ? OR name = ?", ref, ref).Error; err != nil {
			return nil, invalid(fmt.Sprintf("agents[%d]", i), "unknown_agent", fmt.Sprintf("no agent %q", truncate(ref, 100)))
		}
		if !contains(out, g.ID) {
			out = append(out, g.ID)
		}
	}
	return out, nil
}

var grantFilterPattern = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)

func filterGrants(names []string) ([]string, error) {
	if len(names) > maxFilterEntries {
		return nil, invalid("grants", "too_many", fmt.Sprintf("grants may list at most %d names; it lists %d", maxFilterEntries, len(names)))
	}
	var out []string
	for i, n := range names {
		n = strings.TrimSpace(n)
		if !grantFilterPattern.MatchString(n) {
			return nil, invalid(fmt.Sprintf("grants[%d]", i), "invalid_name", "a grant name is 1 to 32 characters of a-z, 0-9, - and _")
		}
		if !contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// matchesFilter: empty lists match everything; otherwise the agent must be
// listed (when agents are) and the grant too (when grants are).
func matchesFilter(agents, grants, agentID, grant string) bool {
	return (agents == "" || contains(lines(agents), agentID)) && (grants == "" || contains(lines(grants), grant))
}
