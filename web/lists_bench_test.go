package web_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/web"
)

// List pages (issue 11): each list page over 100,000 sessions, actions,
// approvals, sandboxes and usage records, beside the same page of an empty
// server, alternating in one run. SUBAKO_BENCH_LIST_ROWS changes the count.

// listServer is a served Subako with the owner's browser signed in.
type listServer struct {
	srv     *httptest.Server
	browser *http.Client
	seed    listSeed
}

func newListServer(b *testing.B, rows int) *listServer {
	b.Helper()
	ctx := b.Context()
	rt := runtime.New(modelstest.Open(b), runtime.Options{Log: quiet})
	b.Cleanup(rt.Close)
	if _, _, err := rt.UserCreate(ctx, runtime.System, "owner@example.com", "owner", password); err != nil {
		b.Fatal(err)
	}
	owner, err := rt.PrincipalForEmail(ctx, "owner@example.com")
	if err != nil {
		b.Fatal(err)
	}
	l := &listServer{}
	if rows > 0 {
		l.seed = seedLists(b, rt, owner, rows)
		seedCallActions(b, rt, l.seed)
	}
	key := []byte("0123456789abcdef0123456789abcdef")
	var handler http.Handler
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	handler = web.New(rt, web.Config{BaseURL: l.srv.URL, CookieHashKey: key, CookieBlockKey: key, Log: quiet})
	b.Cleanup(l.srv.Close)
	jar, _ := cookiejar.New(nil)
	l.browser = &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest(http.MethodPost, l.srv.URL+"/login",
		strings.NewReader(url.Values{"email": {"owner@example.com"}, "password": {password}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := l.browser.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		b.Fatalf("login answered %d", resp.StatusCode)
	}
	return l
}

// get renders one page and says how long it took, body read.
func (l *listServer) get(b *testing.B, path string) time.Duration {
	start := time.Now()
	resp, err := l.browser.Get(l.srv.URL + path)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	return time.Since(start)
}

func p50ms(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2].Microseconds()) / 1000
}

func BenchmarkListPages(b *testing.B) {
	rows := 100_000
	if s := os.Getenv("SUBAKO_BENCH_LIST_ROWS"); s != "" {
		rows, _ = strconv.Atoi(s)
	}
	start := time.Now()
	full := newListServer(b, rows)
	b.Logf("seeded %d rows of each list in %s (%s)", rows, time.Since(start).Round(time.Millisecond), modelstest.Dialect())
	empty := newListServer(b, 0)
	// A session's page needs the session: the baseline holds one row of each.
	one := newListServer(b, 1)
	// A deep page starts at the middle row: the cursor a person reaches
	// after following Older a thousand times.
	mid := rows / 2
	deep := func(prefix string, shift time.Duration) string {
		return runtime.Cursor{At: full.seed.at(mid).Add(shift), ID: seedID(prefix, mid)}.String()
	}
	pages := []struct {
		name, path string
		base       *listServer // the baseline; nil: the empty server
	}{
		{"sessions", "/sessions", nil},
		{"sessions-deep", "/sessions?cursor=" + deep("ses", 0), nil},
		{"audit", "/audit", nil},
		{"audit-deep", "/audit?cursor=" + deep("act", 0), nil},
		{"approvals-history", "/approvals/history", nil},
		{"approvals-history-deep", "/approvals/history?cursor=" + deep("apr", time.Minute), nil},
		{"sandboxes", "/sandboxes", nil},
		{"sandboxes-deep", "/sandboxes?cursor=" + deep("sbx", 0), nil},
		{"usage", "/usage", nil},
		{"usage-deep", "/usage?cursor=" + deep("use", 0), nil},
		// A period of whole days: its totals and chart from the rollup.
		{"usage-period", "/usage?from=" + full.seed.base.AddDate(0, 0, -30).Format("2006-01-02") + "&to=" + full.seed.base.Format("2006-01-02"), nil},
		// A period after every record, as the Dashboard's today on a quiet
		// day, and the Dashboard itself (its figures: active sessions,
		// running sandboxes, today's spend).
		{"usage-quiet", "/usage?from=" + url.QueryEscape(full.seed.base.Add(time.Minute).Format(time.RFC3339)), nil},
		{"dashboard", "/", nil},
		// The day after the records, from its midnight: the Dashboard's
		// today, and the Usage page's dates, after a busy day.
		{"usage-next-day", "/usage?from=" + full.seed.base.AddDate(0, 0, 1).Format("2006-01-02"), nil},
		// The person filter: the owner, whose Actions are half the log, and
		// a person with one failed sign-in, the oldest Action of all, which
		// only its label (the email) names.
		{"audit-person", "/audit?by=owner%40example.com", nil},
		{"audit-person-rare", "/audit?by=rare%40example.com", nil},
		// The decided approvals of a tool none of them called, and of the
		// agent all of them did: a rare filter value seeks its own index.
		{"approvals-history-tool-rare", "/approvals/history?tool=builtin__session__end", nil},
		{"approvals-history-agent", "/approvals/history?agent=seeded", nil},
		// One session's page (its calls) among all the others' calls.
		{"session", "/sessions/" + seedID("ses", 0), one},
	}
	for _, pg := range pages {
		b.Run(pg.name, func(b *testing.B) {
			base := empty
			if pg.base != nil {
				base = pg.base
			}
			full.get(b, pg.path) // warm both
			base.get(b, pg.path)
			var tf, te []time.Duration
			for b.Loop() {
				tf = append(tf, full.get(b, pg.path))
				te = append(te, base.get(b, pg.path))
			}
			f, e := p50ms(tf), p50ms(te)
			b.ReportMetric(f, "p50-ms")
			b.ReportMetric(e, "empty-p50-ms")
			b.ReportMetric(f/e, "ratio")
		})
	}
}

// seedCallActions writes each seeded call's own Action (ToolCall.create,
// targets "<session> <call>"), as every call has, for the pages that read
// calls: not in seedLists, whose Actions the list tests count.
func seedCallActions(b *testing.B, rt *runtime.Runtime, seed listSeed) {
	n := seed.n
	b.Helper()
	const batch = 1000
	for lo := 0; lo < n; lo += batch {
		var acts []models.Action
		for i := lo; i < min(lo+batch, n); i++ {
			sid := seedID("ses", i)
			acts = append(acts, models.Action{ID: seedID("cact", i), Verb: "ToolCall.create", ByKind: "session", ByID: sid,
				ByLabel: "session " + sid, Targets: sid + " " + seedID("call", i), Verdict: runtime.VerdictAllowed, CreatedAt: seed.at(i)})
		}
		if err := rt.DB().Create(&acts).Error; err != nil {
			b.Fatal(err)
		}
	}
	// A sign-in that failed long ago, filed under the email it gave.
	rare := models.Action{ID: seedID("lact", 0), Verb: "User.login", ByKind: string(runtime.PrincipalAnonymous), ByID: "anonymous",
		ByLabel: "rare@example.com", Verdict: runtime.VerdictRefused, CreatedAt: seed.at(n).Add(-time.Hour)}
	if err := rt.DB().Create(&rare).Error; err != nil {
		b.Fatal(err)
	}
	if modelstest.Dialect() == models.Postgres {
		if err := rt.DB().Exec("ANALYZE actions").Error; err != nil {
			b.Fatal(err)
		}
	}
}
