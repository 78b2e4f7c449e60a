package handlers

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

func usageFilter(c echo.Context) runtime.UsageFilter {
	f := runtime.UsageFilter{From: c.QueryParam("from"), To: c.QueryParam("to"), Session: c.QueryParam("session"), Agent: c.QueryParam("agent"),
		Cursor: c.QueryParam("cursor")}
	if l := c.QueryParam("limit"); l != "" {
		// Not a number is out of range: the runtime refuses it naming limit.
		n, err := strconv.Atoi(l)
		if err != nil || n == 0 {
			n = -1
		}
		f.Limit = n
	}
	return f
}

// APIUsageGet is Usage.get; with Accept: text/csv it answers every record
// as CSV, like the console's /usage.csv.
func (h *Handlers) APIUsageGet(c echo.Context) error {
	if strings.Contains(c.Request().Header.Get(echo.HeaderAccept), "text/csv") {
		return h.UsageCSV(c)
	}
	out, err := h.RT.UsageGet(ctx(c), principal(c), usageFilter(c))
	return answer(c, http.StatusOK, out, err)
}

// UsageCSV downloads the records the Usage page's filters select.
func (h *Handlers) UsageCSV(c echo.Context) error {
	w := &lateCSV{c: c}
	err := h.RT.UsageCSV(ctx(c), principal(c), usageFilter(c), w)
	// An error after the CSV began reaches the router as any handler's
	// does: it breaks the answer off (web/compress.go), so no part of it
	// passes for the whole file.
	if err == nil && !w.started {
		w.start()
	}
	return err
}

// lateCSV sends the CSV headers at the first byte, so a refused filter can
// still be answered as an error.
type lateCSV struct {
	c       echo.Context
	started bool
}

func (l *lateCSV) start() {
	hd := l.c.Response().Header()
	hd.Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	hd.Set(echo.HeaderContentDisposition, `attachment; filename="usage.csv"`)
	l.c.Response().WriteHeader(http.StatusOK)
	l.started = true
}

func (l *lateCSV) Write(b []byte) (int, error) {
	if !l.started {
		l.start()
	}
	return l.c.Response().Write(b)
}

// Usage shows metered use: totals by kind and the newest records.
func (h *Handlers) Usage(c echo.Context) error {
	f := usageFilter(c)
	f.Limit = runtime.PageSize
	view := pages.UsageView{From: f.From, To: f.To, Session: f.Session, Agent: f.Agent}
	rep, err := h.RT.UsageGet(ctx(c), principal(c), f)
	if e, ok := runtime.AsError(err); ok && e.Kind == runtime.KindInvalid {
		view.Error = e.Error()
	} else if err != nil {
		return err
	}
	// The agent filter picks by name; a viewer who may not list agents types the id.
	if agents, err := h.RT.AgentList(ctx(c), principal(c)); err == nil {
		for _, a := range agents {
			view.Agents = append(view.Agents, pages.Option{Value: a.ID, Label: a.Name})
		}
	}
	view.Credits = fmt.Sprintf("%.2f SC", rep.Credits)
	for _, t := range rep.Totals {
		view.Totals = append(view.Totals, pages.UsageTotalRow{Kind: usageKindLabel(t.Kind), Quantity: usageQuantity(t.Quantity, t.Unit),
			Credits: fmt.Sprintf("%.2f SC", t.Credits), Records: t.Records})
	}
	for _, u := range rep.Records {
		view.Records = append(view.Records, pages.UsageRecordRow{Kind: usageKindLabel(u.Kind), Session: u.Session, SessionTitle: u.SessionTitle,
			Agent: u.Agent, AgentName: u.AgentName, Subject: u.Subject,
			Quantity: usageQuantity(u.Quantity, u.Unit), Credits: fmt.Sprintf("%.4f SC", u.Credits), When: isoTime(u.StartedAt)})
	}
	if len(rep.Days) > 0 {
		view.Chart = usageChart(rep.Days)
	}
	q := url.Values{}
	for k, v := range map[string]string{"from": f.From, "to": f.To, "session": f.Session, "agent": f.Agent} {
		if v != "" {
			q.Set(k, v)
		}
	}
	view.CSV = "/usage.csv"
	if len(q) > 0 {
		view.CSV += "?" + q.Encode()
	}
	pg := pagerOf("/usage", q, f.Cursor, rep.PageLinks)
	view.Newer, view.Older = pg.Newer, pg.Older
	return render(c, http.StatusOK, pages.Usage(h.shell(c, "Usage", "usage"), view))
}

func usageKindLabel(k string) string {
	switch k {
	case runtime.UsageFunctionSeconds:
		return "Function time"
	case runtime.UsageMachineSeconds:
		return "Sandbox machine time"
	case runtime.UsageArchiveBytes:
		return "Archive storage"
	case runtime.UsageVolumeBytes:
		return "Volume storage"
	}
	return k
}

// usageQuantity says an amount in the unit a person reads: bytes in
// KiB/MiB/GiB, seconds in s, min or h.
func usageQuantity(q float64, unit string) string {
	switch unit {
	case "second", "seconds", "s":
		return humanSeconds(q)
	case "byte", "bytes":
		return humanBytes(q)
	case "GB-hour":
		return fmt.Sprintf("%.2f GB-hours", q)
	}
	return fmt.Sprintf("%.0f %s", q, unit)
}

func humanSeconds(s float64) string {
	switch {
	case s < 60:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", s), ".0") + " s"
	case s < 3600:
		m := int(s) / 60
		if rest := int(s) % 60; rest > 0 {
			return fmt.Sprintf("%d min %d s", m, rest)
		}
		return fmt.Sprintf("%d min", m)
	}
	h, m := int(s)/3600, int(s)%3600/60
	if m > 0 {
		return fmt.Sprintf("%d h %d min", h, m)
	}
	return fmt.Sprintf("%d h", h)
}

func humanBytes(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", b)
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", b), ".0") + " " + units[i]
}
