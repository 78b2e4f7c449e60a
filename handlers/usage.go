package handlers

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

func usageFilter(c echo.Context) runtime.UsageFilter {
	return runtime.UsageFilter{From: c.QueryParam("from"), To: c.QueryParam("to"), Session: c.QueryParam("session"), Agent: c.QueryParam("agent")}
}

// APIUsageGet is Usage.get.
func (h *Handlers) APIUsageGet(c echo.Context) error {
	out, err := h.RT.UsageGet(ctx(c), principal(c), usageFilter(c))
	return answer(c, http.StatusOK, out, err)
}

// Usage shows metered use: totals by kind and the newest records.
func (h *Handlers) Usage(c echo.Context) error {
	f := usageFilter(c)
	view := pages.UsageView{From: f.From, To: f.To, Session: f.Session, Agent: f.Agent}
	rep, err := h.RT.UsageGet(ctx(c), principal(c), f)
	if e, ok := runtime.AsError(err); ok && e.Kind == runtime.KindInvalid {
		view.Error = e.Error()
	} else if err != nil {
		return err
	}
	view.Credits = fmt.Sprintf("%.2f SC", rep.Credits)
	for _, t := range rep.Totals {
		view.Totals = append(view.Totals, pages.UsageTotalRow{Kind: usageKindLabel(t.Kind), Quantity: usageQuantity(t.Quantity, t.Unit),
			Credits: fmt.Sprintf("%.2f SC", t.Credits), Records: t.Records})
	}
	for _, u := range rep.Records {
		view.Records = append(view.Records, pages.UsageRecordRow{Kind: usageKindLabel(u.Kind), Session: u.Session, Subject: u.Subject,
			Quantity: usageQuantity(u.Quantity, u.Unit), Credits: fmt.Sprintf("%.4f SC", u.Credits), When: fmtTime(u.StartedAt)})
	}
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
	}
	return k
}

func usageQuantity(q float64, unit string) string {
	switch unit {
	case "second", "seconds", "s":
		return fmt.Sprintf("%.1f s", q)
	case "GB-hour":
		return fmt.Sprintf("%.4f GB-hours", q)
	}
	return fmt.Sprintf("%.0f %s", q, unit)
}
