package web

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
)

// allowedHosts is the set of host names requests may be addressed to: the
// base URL's, the --allowed-hosts list, and the loopback names. A DNS
// rebinding page reaches this server under its own name, which is not in
// the set; no such page can make a browser send "localhost".
func allowedHosts(baseURL string, extra []string) map[string]bool {
	set := map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}
	if u, err := url.Parse(baseURL); err == nil && u.Hostname() != "" {
		set[hostName(u.Host)] = true
	}
	for _, h := range extra {
		if h = strings.TrimSpace(h); h != "" {
			set[hostName(h)] = true
		}
	}
	return set
}

// hostName is a Host header's name, without port, brackets, case or final dot.
func hostName(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	return strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
}

// checkHost refuses requests addressed to a host this server is not. With
// neither a base URL nor allowed hosts (an embedded test server), or with
// "*" among the allowed hosts (a proxy that checks Host itself), it checks
// nothing. Health checks pass whatever the Host: probes address pods by IP.
func checkHost(baseURL string, extra []string) echo.MiddlewareFunc {
	set := allowedHosts(baseURL, extra)
	off := (baseURL == "" && len(extra) == 0) || set["*"]
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if off || set[hostName(r.Host)] || r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
				return next(c)
			}
			return echo.NewHTTPError(http.StatusMisdirectedRequest,
				"this server does not answer for host "+truncateHost(r.Host)+": add it to --allowed-hosts if it should")
		}
	}
}

// MetricsHostCheck guards the --metrics-addr listener, which takes no
// token, against DNS rebinding: a scraper addresses it by IP or by a name
// the console allows (--base-url's, --allowed-hosts), while a rebinding
// page can only send its own host name. Any other Host is answered 421.
func MetricsHostCheck(baseURL string, extra []string, h http.Handler) http.Handler {
	set := allowedHosts(baseURL, extra)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := hostName(r.Host)
		if _, err := netip.ParseAddr(name); err != nil && !set[name] && !set["*"] {
			http.Error(w, "this server does not answer for host "+truncateHost(r.Host)+": address it by IP, or add the name to --allowed-hosts",
				http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func truncateHost(h string) string {
	if len(h) > 100 {
		h = h[:100]
	}
	return strings.ToValidUTF8(h, "?")
}

// metricsAuth lets a scraper in with the --metrics-token or an owner's or
// admin's API token; nothing else sees the server's figures.
func metricsAuth(rt *runtime.Runtime, token string, h http.Handler) echo.HandlerFunc {
	return func(c echo.Context) error {
		scheme, got, _ := strings.Cut(strings.TrimSpace(c.Request().Header.Get(echo.HeaderAuthorization)), " ")
		got = strings.TrimSpace(got)
		ok := strings.EqualFold(scheme, "Bearer") && got != "" &&
			((token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1) || rt.MetricsAllowed(c.Request().Context(), got))
		if !ok {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="subako metrics"`)
			return runtime.ErrUnauthenticated
		}
		h.ServeHTTP(c.Response(), c.Request())
		return nil
	}
}
