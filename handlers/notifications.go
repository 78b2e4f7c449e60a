package handlers

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

// secretSlot holds a new signing secret server-side (reveal.go) between the
// POST that made it and the one page view that shows it.
const secretSlot = "channel-secret"

// Notifications is the page where each approver chooses what emails them
// and owners and admins manage channels and watch deliveries.
func (h *Handlers) Notifications(c echo.Context) error {
	return h.notificationsPage(c, http.StatusOK, pages.NotificationsView{})
}

func (h *Handlers) notificationsPage(c echo.Context, status int, v pages.NotificationsView) error {
	p := principal(c)
	v.CanManage, v.CanSubscribe = p.Can("Channel.list"), p.Can("Subscription.get")
	if s := h.RT.SMTPServer(); s != "" {
		v.SMTP = s
	}
	if v.Form.Kind == "" && v.Form.Format == "" {
		v.Form.Format = "json"
	}
	agents, err := h.RT.AgentList(ctx(c), p)
	if err != nil {
		return err
	}
	for _, a := range agents {
		v.Agents = append(v.Agents, pages.Option{Value: a.ID, Label: a.Name})
	}
	if v.CanSubscribe && v.Sub.Mode == "" {
		sub, err := h.RT.SubscriptionGet(ctx(c), p)
		if err != nil {
			return err
		}
		v.Sub = pages.SubscriptionForm{Mode: sub.Mode, Agents: set(sub.Agents), Grants: strings.Join(sub.Grants, ", ")}
	}
	if v.CanManage {
		if err := h.channelsAndDeliveries(c, p, &v); err != nil {
			return err
		}
	}
	v.NewSecretChannel, v.NewSecret = h.takeSecret(c)
	return render(c, status, pages.NotificationsPage(h.shell(c, "Notifications", "notifications"), v))
}

func (h *Handlers) channelsAndDeliveries(c echo.Context, p runtime.Principal, v *pages.NotificationsView) error {
	chans, err := h.RT.ChannelList(ctx(c), p)
	if err != nil {
		return err
	}
	names := map[string]string{}
	for _, a := range v.Agents {
		names[a.Value] = a.Label
	}
	for _, ch := range chans {
		v.Channels = append(v.Channels, pages.ChannelRow{ID: ch.ID, Name: ch.Name, Kind: ch.Kind, Format: ch.Format,
			URLHint: ch.URLHint, Filter: filterText(ch.Agents, ch.Grants, names), Created: isoTime(ch.CreatedAt), Enabled: ch.Enabled})
	}
	ns, err := h.RT.NotificationList(ctx(c), p, runtime.NotificationFilter{})
	if err != nil {
		return err
	}
	for _, n := range ns {
		d := pages.DeliveryRow{ID: n.ID, Created: isoTime(n.CreatedAt), Channel: n.ChannelName, Recipient: n.Recipient,
			Approval: n.Approval, State: n.State, LastError: n.LastError}
		if n.NextAttemptAt != nil && n.Attempts > 0 {
			d.Next = isoTime(*n.NextAttemptAt)
		}
		for _, t := range n.Tries {
			a := pages.AttemptRow{Number: t.Number, OK: t.OK, Error: t.Error, At: isoTime(t.At),
				Duration: (time.Duration(t.DurationMS) * time.Millisecond).String()}
			if t.HTTPStatus != 0 {
				a.Code = fmt.Sprintf("HTTP %d", t.HTTPStatus)
			}
			d.Attempts = append(d.Attempts, a)
		}
		v.Deliveries = append(v.Deliveries, d)
	}
	return nil
}

func filterText(agents, grants []string, names map[string]string) string {
	if len(agents) == 0 && len(grants) == 0 {
		return "every approval"
	}
	var parts []string
	for _, a := range agents {
		parts = append(parts, "agent "+orDefault(names[a], a))
	}
	for _, g := range grants {
		parts = append(parts, "grant "+g)
	}
	return strings.Join(parts, ", ")
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func set(list []string) map[string]bool {
	out := map[string]bool{}
	for _, s := range list {
		out[s] = true
	}
	return out
}

// splitList reads a comma- or space-separated field.
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' })
}

// CreateChannel creates a channel from the form, then redirects: a reload
// creates nothing, and a webhook's secret shows once on the page after.
func (h *Handlers) CreateChannel(c echo.Context) error {
	form, _ := c.FormParams()
	name, format, rawURL := c.FormValue("name"), c.FormValue("format"), c.FormValue("url")
	in := runtime.ChannelInput{Name: &name, Kind: c.FormValue("kind")}
	agents, grants := form["agents"], splitList(c.FormValue("grants"))
	if agents == nil {
		agents = []string{}
	}
	in.Agents, in.Grants = &agents, &grants
	if in.Kind == runtime.ChannelWebhook {
		in.Format, in.URL = &format, &rawURL
	}
	ch, err := h.RT.ChannelCreate(ctx(c), principal(c), in)
	if e, ok := formError(err); ok {
		f := pages.ChannelForm{Name: name, Kind: in.Kind, Format: format, URL: rawURL, Grants: c.FormValue("grants"), Agents: set(agents)}
		f.Errors, f.Error = fieldErrors(e)
		return h.notificationsPage(c, statusOf(e.Kind), pages.NotificationsView{Form: f})
	}
	if err != nil {
		return err
	}
	h.stashSecret(c, ch.Name, ch.Secret)
	h.flash(c, "ok", "Channel "+ch.Name+" added.")
	return redirect(c, "/notifications")
}

// UpdateChannel enables or disables a channel.
func (h *Handlers) UpdateChannel(c echo.Context) error {
	enabled := c.FormValue("enabled") == "true"
	ch, err := h.RT.ChannelUpdate(ctx(c), principal(c), runtime.ChannelInput{Channel: c.Param("channel"), Enabled: &enabled})
	if err != nil {
		return h.flashError(c, err, "/notifications")
	}
	state := "disabled"
	if ch.Enabled {
		state = "enabled"
	}
	h.flash(c, "ok", "Channel "+ch.Name+" "+state+".")
	return redirect(c, "/notifications")
}

// RotateChannelSecret makes a new signing secret, shown once.
func (h *Handlers) RotateChannelSecret(c echo.Context) error {
	ch, err := h.RT.ChannelUpdate(ctx(c), principal(c), runtime.ChannelInput{Channel: c.Param("channel"), RotateSecret: true})
	if err != nil {
		return h.flashError(c, err, "/notifications")
	}
	h.stashSecret(c, ch.Name, ch.Secret)
	h.flash(c, "ok", "New signing secret for "+ch.Name+": the old one no longer signs.")
	return redirect(c, "/notifications")
}

// DeleteChannel deletes a channel and its undelivered notifications.
func (h *Handlers) DeleteChannel(c echo.Context) error {
	if err := h.RT.ChannelDelete(ctx(c), principal(c), c.Param("channel")); err != nil {
		return h.flashError(c, err, "/notifications")
	}
	h.flash(c, "ok", "Channel deleted.")
	return redirect(c, "/notifications")
}

// SaveSubscription saves which approvals email the signed-in person.
func (h *Handlers) SaveSubscription(c echo.Context) error {
	form, _ := c.FormParams()
	in := runtime.SubscriptionView{Mode: c.FormValue("mode"), Agents: form["agents"], Grants: splitList(c.FormValue("grants"))}
	_, err := h.RT.SubscriptionUpdate(ctx(c), principal(c), in)
	if e, ok := formError(err); ok {
		f := pages.SubscriptionForm{Mode: in.Mode, Agents: set(in.Agents), Grants: c.FormValue("grants")}
		f.Errors, f.Error = fieldErrors(e)
		if f.Mode == "" {
			f.Mode = "all"
		}
		return h.notificationsPage(c, statusOf(e.Kind), pages.NotificationsView{Sub: f})
	}
	if err != nil {
		return err
	}
	h.flash(c, "ok", "Saved: your notifications follow your choice.")
	return redirect(c, "/notifications")
}

func (h *Handlers) stashSecret(c echo.Context, channel, secret string) {
	if secret == "" {
		return
	}
	h.reveal(c, secretSlot, channel+"\x00"+secret)
}

func (h *Handlers) takeSecret(c echo.Context) (channel, secret string) {
	v, ok := h.takeRevealed(c, secretSlot)
	if !ok {
		return "", ""
	}
	channel, secret, _ = strings.Cut(v, "\x00")
	return channel, secret
}
