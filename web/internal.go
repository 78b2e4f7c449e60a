package web

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/subako/subako/handlers"
	"github.com/subako/subako/runtime"
)

// internalRoutes are the replicas' own channel (handlers/internal.go),
// refused without the shared secret; and /readyz answers 503 while this
// replica drains, before the readiness of its parts is even asked.
func internalRoutes(e *echo.Echo, h *handlers.Handlers, rt *runtime.Runtime, secret string) {
	e.Pre(drainingNotReady(rt))
	g := e.Group("/internal", handlers.InternalAuth(secret))
	g.POST("/v1/exec", h.InternalExec)
	g.GET("/v1/sandboxes/:sandbox/files", h.InternalFiles)
	g.GET("/v1/sandboxes/:sandbox/file", h.InternalReadFile)
	g.PUT("/v1/sandboxes/:sandbox/file", h.InternalWriteFile)
	g.GET("/v1/sandboxes/:sandbox/ports", h.InternalPorts)
	g.GET("/v1/sandboxes/:sandbox/ports/:port", h.InternalDialPort)
	g.Any("/*", func(c echo.Context) error {
		return c.JSON(http.StatusNotFound, map[string]string{"error": "no such internal route"})
	})
}

// drainingNotReady answers /readyz 503 once the replica drains (SIGTERM),
// so the proxy sends its requests to the other replicas.
func drainingNotReady(rt *runtime.Runtime) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if rt.Draining() && c.Request().URL.Path == "/readyz" {
				return c.JSON(http.StatusServiceUnavailable, map[string]any{"ready": false, "draining": true, "replica": rt.Replica().ID,
					"detail": "this replica is stopping: it suspends its sandboxes so the other replicas can restore them"})
			}
			return next(c)
		}
	}
}

// clusterMetrics are the replica figures at /metrics: the calls waiting
// (database-wide, by status), the sandboxes this replica runs, the
// sandboxes taken over from dead replicas, the requests forwarded, and
// the events missed by slow subscribers or sent between replicas.
func clusterMetrics(rt *runtime.Runtime) []prometheus.Collector {
	waiting := prometheus.NewDesc("subako_calls_waiting", "Calls waiting, across replicas, by status (queued, awaiting_approval, waiting_client).", []string{"status"}, nil)
	counter := func(name, help string, read func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(read()) })
	}
	return []prometheus.Collector{
		waitingCalls{rt: rt, desc: waiting},
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "subako_sandboxes_running", Help: "Sandbox machines this replica runs now."},
			func() float64 { return float64(rt.ClusterCounts().RunningSandboxes) }),
		counter("subako_sandbox_failovers_total", "Sandboxes this replica took over from a dead replica (restored from the last archive, or recorded suspended from it).",
			func() int64 { return rt.ClusterCounts().Failovers }),
		counter("subako_sandbox_forwarded_total", "Sandbox requests (exec, files, ports) this replica forwarded to the replica running the sandbox.",
			func() int64 { return rt.ClusterCounts().Forwarded }),
		counter("subako_events_missed_total", "Events this replica's subscribers (live pages, waiting calls, the sandboxes' suspension) missed because they were 64 behind; each was told to re-read, so what they missed came late, not lost.",
			func() int64 { return rt.EventCounts().Missed }),
		counter("subako_events_replicas_sent_total", "Events this replica sent to the other replicas (PostgreSQL NOTIFY).",
			func() int64 { return rt.EventCounts().Sent }),
		counter("subako_events_replicas_received_total", "Events of the other replicas this replica heard and handed to its subscribers.",
			func() int64 { return rt.EventCounts().Received }),
		counter("subako_events_replicas_not_sent_total", "Events this replica could not send to the other replicas (its queue was full or the NOTIFY failed); they are told to re-read with the next notification.",
			func() int64 { return rt.EventCounts().NotSent }),
	}
}

// waitingCalls counts at each scrape, bounded to a second.
type waitingCalls struct {
	rt   *runtime.Runtime
	desc *prometheus.Desc
}

func (w waitingCalls) Describe(ch chan<- *prometheus.Desc) { ch <- w.desc }

func (w waitingCalls) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	counts, err := w.rt.WaitingCalls(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(w.desc, err)
		return
	}
	for status, n := range counts {
		ch <- prometheus.MustNewConstMetric(w.desc, prometheus.GaugeValue, float64(n), status)
	}
}
