// Package web assembles the HTTP server: echo, middleware and the one route
// table. It decides no permissions; the runtime does.
package web

import (
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/sessions"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/subako/subako/handlers"
	"github.com/subako/subako/runtime"
)

// Config is what the server needs beyond the runtime.
type Config struct {
	// BaseURL is the console's public address, used in one-time links.
	BaseURL string
	// CookieHashKey and CookieBlockKey sign and encrypt the session cookie.
	CookieHashKey, CookieBlockKey []byte
	Log                           *slog.Logger
	// AllowedHosts are host names besides the base URL's that requests may
	// be addressed to (--allowed-hosts); any other Host is refused.
	AllowedHosts []string
	// MetricsToken, when set, lets a scraper read /metrics with it as a
	// bearer token; owners' and admins' API tokens always may.
	MetricsToken string
	// MetricsElsewhere leaves /metrics off this server: NewWithMetrics's
	// handler is served on its own address (--metrics-addr).
	MetricsElsewhere bool
	// RevealFor and RevealMax bound the secrets (a session's token, an
	// invitation link) kept for the page a creating form redirects to
	// (--reveal-for, --reveal-max); zero takes the defaults.
	RevealFor time.Duration
	RevealMax int
	// InternalSecret lets other replicas reach /internal/ (--internal-secret);
	// empty: those routes answer 404.
	InternalSecret string
}

// contentSecurityPolicy forbids inline scripts and any origin but our own.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

// New builds the server over a runtime.
func New(rt *runtime.Runtime, cfg Config) *echo.Echo {
	e, _ := NewWithMetrics(rt, cfg)
	return e
}

// NewWithMetrics builds the server and returns the /metrics handler too, for
// serving it on an address of its own.
func NewWithMetrics(rt *runtime.Runtime, cfg Config) (*echo.Echo, http.Handler) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	store := sessions.NewCookieStore(cfg.CookieHashKey, cfg.CookieBlockKey)
	h := &handlers.Handlers{RT: rt, Cookies: store, BaseURL: cfg.BaseURL, Log: cfg.Log, RevealFor: cfg.RevealFor, RevealMax: cfg.RevealMax}

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = h.ErrorHandler
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(functionLoad(rt)...)
	reg.MustRegister(clusterMetrics(rt)...)
	e.Pre(checkHost(cfg.BaseURL, cfg.AllowedHosts), headAsGet)
	// Recover sits inside requestLog and metrics, so that a handler's panic
	// is logged and counted as the 500 it is answered with.
	e.Use(headAgain, requestLog(cfg.Log), metrics(reg), middleware.Recover(), securityHeaders, compress, crossOrigin(), bodyLimits(), h.CheckInput)
	metricsHandler := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	if !cfg.MetricsElsewhere {
		e.GET("/metrics", metricsAuth(rt, cfg.MetricsToken, metricsHandler))
	}
	routes(e, h, rt)
	internalRoutes(e, h, rt, cfg.InternalSecret)
	return e, metricsHandler
}

// headAsGet routes HEAD as GET, for uptime checks and link checkers: echo
// routes on the request's method before any middleware of e.Use runs, so the
// method is GET while the route is found, and headAgain makes it HEAD again
// before anything is written: net/http then sends the GET's headers and
// drops the body, as HEAD requires.
//
// Only pages and health checks: an event stream would run on for nothing,
// and the API's GETs include verbs that act (ClientCall.next claims a call,
// Archive.download is recorded), so HEAD there stays a 405.
func headAsGet(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if r := c.Request(); r.Method == http.MethodHead && headServed(r.URL.Path) {
			r.Method = http.MethodGet
			c.Set(headKey, true)
		}
		return next(c)
	}
}

func headServed(path string) bool {
	switch {
	case strings.HasPrefix(path, "/api/"), strings.HasPrefix(path, "/mcp/"),
		strings.HasSuffix(path, "/events"), strings.HasSuffix(path, "/archive"):
		return false
	}
	return true
}

func headAgain(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if head, _ := c.Get(headKey).(bool); head {
			c.Request().Method = http.MethodHead
		}
		return next(c)
	}
}

const headKey = "subako.head"

// uploadPaths take packages and skills (up to 64 MB); every other request body
// is small, and a large one is refused before it is read.
var uploadPaths = []string{"/api/v1/functions", "/functions", "/api/v1/skills", "/skills"}

func bodyLimits() echo.MiddlewareFunc {
	small := middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{Limit: "4M", Skipper: func(c echo.Context) bool {
		return slices.Contains(uploadPaths, c.Request().URL.Path) || archiveUpload(c) || handlers.VolumeUpload(c.Request()) ||
			handlers.SandboxFileUpload(c.Request()) // up to sandbox.MaxFileWriteBytes, under the 64M below
	}})
	large := middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{Limit: "64M", Skipper: func(c echo.Context) bool {
		return archiveUpload(c) || handlers.VolumeUpload(c.Request())
	}})
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		h := large(small(next))
		return func(c echo.Context) error {
			err := h(c)
			var he *echo.HTTPError
			if errors.As(err, &he) && he.Code == http.StatusRequestEntityTooLarge {
				// echo says only "Request Entity Too Large": name the limit.
				limit := "4 MiB (a package or skill upload: 64 MiB)"
				if slices.Contains(uploadPaths, c.Request().URL.Path) {
					limit = "64 MiB"
				}
				return echo.NewHTTPError(http.StatusRequestEntityTooLarge, "the request body is larger than "+limit+", the most this request may send")
			}
			return err
		}
	}
}

// archiveUpload is Archive.upload (PUT on the API, POST from the console):
// its body is streamed to disk and bounded by the archive limit (256 MiB by
// default) in the runtime, not here.
func archiveUpload(c echo.Context) bool {
	p, m := c.Request().URL.Path, c.Request().Method
	return m == http.MethodPut && strings.HasPrefix(p, "/api/v1/sandboxes/") && strings.HasSuffix(p, "/archive") ||
		m == http.MethodPost && strings.HasPrefix(p, "/sandboxes/") && strings.HasSuffix(p, "/archive/upload")
}

func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		hd := c.Response().Header()
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("X-Frame-Options", "DENY")
		return next(c)
	}
}

// crossOrigin refuses unsafe cross-origin browser requests (Go's
// http.CrossOriginProtection, from Sec-Fetch-Site and Origin). API clients
// with bearer tokens send neither header and pass.
func crossOrigin() echo.MiddlewareFunc {
	cop := http.NewCrossOriginProtection()
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			// A port's preview runs in an opaque origin (its requests are
			// all cross-site) and its ticket, not a cookie, authenticates it.
			if strings.HasPrefix(c.Request().URL.Path, "/sandbox-preview/") {
				return next(c)
			}
			if err := cop.Check(c.Request()); err != nil {
				return &runtime.Error{Kind: runtime.KindForbidden, Code: "cross_origin", Title: "Cross-origin request refused",
					Detail: "this request came from another site; reload the page and try again"}
			}
			return next(c)
		}
	}
}

// requestLog writes one line per request, naming the route pattern rather than
// the path: paths can hold one-time tokens that must not reach a log.
func requestLog(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			if err != nil {
				c.Error(err)
			}
			if c.Path() != "/healthz" && c.Path() != "/metrics" {
				log.Debug("request", "method", c.Request().Method, "route", c.Path(), "status", c.Response().Status,
					"ms", time.Since(start).Milliseconds())
			}
			return nil
		}
	}
}

// statusClientClosed is what the request counter says of an answer whose
// client left before it ended (nginx's 499); it is never sent.
const statusClientClosed = 499

func metrics(reg *prometheus.Registry) echo.MiddlewareFunc {
	count := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "subako_http_requests_total",
		Help: "HTTP requests by route, method and status (aborted: the answer was broken off after it began; 499: the client left first)."}, []string{"route", "method", "status"})
	dur := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "subako_http_request_duration_seconds",
		Help: "HTTP request durations by route and method.", Buckets: prometheus.DefBuckets}, []string{"route", "method"})
	reg.MustRegister(count, dur)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			status := ""
			defer func() {
				route := c.Path()
				if route == "" {
					route = "unmatched"
				}
				if status == "" {
					// An answer broken off passes here as a panic on its
					// way to net/http (compress's, or a reverse proxy's
					// http.ErrAbortHandler): the client's leaving, or a
					// failure on this side.
					status = "aborted"
					if left, _ := c.Get(clientLeftKey).(bool); left || c.Request().Context().Err() != nil {
						status = strconv.Itoa(statusClientClosed)
					}
				}
				count.WithLabelValues(route, c.Request().Method, status).Inc()
				dur.WithLabelValues(route, c.Request().Method).Observe(time.Since(start).Seconds())
			}()
			if err := next(c); err != nil {
				c.Error(err)
			}
			status = strconv.Itoa(c.Response().Status)
			return nil
		}
	}
}

// functionLoad reports the function engine's capacity in use at each scrape,
// beside its limits (--max-function-instances, --function-memory).
func functionLoad(rt *runtime.Runtime) []prometheus.Collector {
	gauge := func(name, help string, pick func(running, reservedMB, queued int) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return pick(rt.FunctionLoad()) })
	}
	return []prometheus.Collector{
		gauge("subako_function_instances_running", "Function instances running now.",
			func(n, _, _ int) float64 { return float64(n) }),
		gauge("subako_function_memory_reserved_bytes", "Guest memory reserved by running function instances.",
			func(_, mb, _ int) float64 { return float64(mb) * (1 << 20) }),
		gauge("subako_function_calls_waiting", "Function calls waiting for an instance or memory.",
			func(_, _, q int) float64 { return float64(q) }),
	}
}
