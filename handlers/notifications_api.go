package handlers

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
)

// APIChannelList is Channel.list.
func (h *Handlers) APIChannelList(c echo.Context) error {
	out, err := h.RT.ChannelList(ctx(c), principal(c))
	return answer(c, http.StatusOK, out, err)
}

// APIChannelCreate is Channel.create: a webhook's signing secret is in this
// answer only.
func (h *Handlers) APIChannelCreate(c echo.Context) error {
	var in runtime.ChannelInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	out, err := h.RT.ChannelCreate(ctx(c), principal(c), in)
	return answer(c, http.StatusCreated, out, err)
}

// APIChannelUpdate is Channel.update.
func (h *Handlers) APIChannelUpdate(c echo.Context) error {
	var in runtime.ChannelInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	in.Channel = c.Param("channel")
	out, err := h.RT.ChannelUpdate(ctx(c), principal(c), in)
	return answer(c, http.StatusOK, out, err)
}

// APIChannelDelete is Channel.delete.
func (h *Handlers) APIChannelDelete(c echo.Context) error {
	return answerEmpty(c, h.RT.ChannelDelete(ctx(c), principal(c), c.Param("channel")))
}

// APINotificationList is Notification.list.
func (h *Handlers) APINotificationList(c echo.Context) error {
	q := c.QueryParams()
	f := runtime.NotificationFilter{Channel: q.Get("channel"), Approval: q.Get("approval"), State: q.Get("state")}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil {
			return &runtime.Error{Kind: runtime.KindInvalid, Code: "invalid_limit", Title: "Invalid query", Field: "limit",
				Detail: "limit must be a whole number between 1 and 200"}
		}
		f.Limit = n
	}
	out, err := h.RT.NotificationList(ctx(c), principal(c), f)
	return answer(c, http.StatusOK, out, err)
}

// APISubscriptionGet is Subscription.get: the caller's own.
func (h *Handlers) APISubscriptionGet(c echo.Context) error {
	out, err := h.RT.SubscriptionGet(ctx(c), principal(c))
	return answer(c, http.StatusOK, out, err)
}

// APISubscriptionUpdate is Subscription.update.
func (h *Handlers) APISubscriptionUpdate(c echo.Context) error {
	var in runtime.SubscriptionView
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	out, err := h.RT.SubscriptionUpdate(ctx(c), principal(c), in)
	return answer(c, http.StatusOK, out, err)
}
