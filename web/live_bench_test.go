package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/mcpclient/mcptest"
	"github.com/subako/subako/web"
)

// Live pages (issue 11): how long an ask-first call takes to reach an
// approver's open Approvals page, over HTTP, on a whole server.

// liveEvent is one server-sent event and when the reader had all of it.
type liveEvent struct {
	name, data string
	at         time.Time
}

// readLiveEvents parses an event stream into events, stamped on arrival.
func readLiveEvents(body interface{ Read([]byte) (int, error) }) <-chan liveEvent {
	out := make(chan liveEvent, 256)
	go func() {
		defer close(out)
		var ev liveEvent
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" {
					ev.at = time.Now()
					out <- ev
				}
				ev = liveEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				if ev.data != "" {
					ev.data += "\n"
				}
				ev.data += strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return out
}

// liveBench is a served Subako with an ask-first tool, a session to call it,
// and the owner's browser signed in.
type liveBench struct {
	rt      *runtime.Runtime
	srv     *httptest.Server
	owner   runtime.Principal
	session runtime.SessionView
	browser *http.Client
}

func newLiveBench(b *testing.B) *liveBench {
	b.Helper()
	ctx := b.Context()
	rt := runtime.New(modelstest.Open(b), runtime.Options{Log: quiet, AllowPrivateEgress: true})
	b.Cleanup(rt.Close)
	const token = "live-bench-token-0123456789"
	mcpURL := mcptest.StartEverything(b, token)
	l := &liveBench{rt: rt}
	must := func(err error) {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
	}
	_, _, err := rt.UserCreate(ctx, runtime.System, "owner@example.com", "owner", password)
	must(err)
	l.owner, err = rt.PrincipalForEmail(ctx, "owner@example.com")
	must(err)
	v, err := rt.VaultCreate(ctx, l.owner, runtime.VaultInput{Name: "bench"})
	must(err)
	_, err = rt.CredentialSet(ctx, l.owner, runtime.CredentialInput{Vault: v.ID, Prefix: mcpURL, Type: "bearer", Secret: token})
	must(err)
	name := "bench"
	a, err := rt.AgentCreate(ctx, l.owner, runtime.AgentInput{Name: &name})
	must(err)
	cfg, _ := json.Marshal(map[string]any{"mcp_servers": []any{map[string]any{"name": "everything", "url": mcpURL, "default_policy": "ask"}}})
	ver, err := rt.VersionCreate(ctx, l.owner, runtime.VersionCreateInput{Agent: a.ID, Config: cfg})
	must(err)
	_, err = rt.VersionPublish(ctx, l.owner, ver.ID)
	must(err)
	l.session, err = rt.SessionCreate(ctx, l.owner, runtime.SessionCreateInput{Version: ver.ID, Vaults: []string{v.ID}})
	must(err)
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
	must(err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		b.Fatalf("login answered %d", resp.StatusCode)
	}
	return l
}

// ask makes the session's ask-first call over the API, answering at once
// with the approval it waits on.
func (l *liveBench) ask(b *testing.B, api *http.Client) string {
	body := `{"tool": "mcp__everything__get-env", "input": {}, "model": "bench", "wait_seconds": 0}`
	req, _ := http.NewRequest(http.MethodPost, l.srv.URL+"/api/v1/sessions/"+l.session.ID+"/tool_calls", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+l.session.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := api.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		Status   string `json:"status"`
		Approval *struct {
			ID string `json:"id"`
		} `json:"approval"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || c.Approval == nil {
		b.Fatalf("the call did not ask first: %d %+v %v", resp.StatusCode, c, err)
	}
	return c.Approval.ID
}

// quiet takes the stream's events until none has come for d.
func quietFor(b *testing.B, events <-chan liveEvent, d time.Duration) {
	for {
		select {
		case _, ok := <-events:
			if !ok {
				b.Fatal("the approvals stream ended")
			}
		case <-time.After(d):
			return
		}
	}
}

func percentile(ds []time.Duration, p float64) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := min(int(float64(len(s))*p), len(s)-1)
	return float64(s[i].Microseconds()) / 1000
}

// BenchmarkLiveApprovalEvent: an ask-first call (the session's, over the
// API, answering at once) until the event naming its approval arrives on the
// owner's open Approvals page stream (/approvals/events) — what an approver
// sees. Each iteration starts after a quiet spell (the previous approval
// denied and its removal sent), as a call that comes alone does. Reported:
// event_p50_ms and event_p90_ms, from sending the call; the baseline is the
// same call's own HTTP answer (call_p50_ms), ratio is event p50 over call
// p50, and after_answer_p50_ms is how long after the call's answer the event
// arrives (below 0: before it). Goal: event p50 ≤ 10 ms.
func BenchmarkLiveApprovalEvent(b *testing.B) {
	l := newLiveBench(b)
	cx, hangUp := context.WithCancel(b.Context())
	defer hangUp()
	req, _ := http.NewRequestWithContext(cx, http.MethodGet, l.srv.URL+"/approvals/events", nil)
	resp, err := l.browser.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("approvals stream: %v %v", resp, err)
	}
	defer resp.Body.Close()
	events := readLiveEvents(resp.Body)
	api := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	defer api.CloseIdleConnections()

	round := func() (event, call time.Duration) {
		quietFor(b, events, 120*time.Millisecond)
		start := time.Now()
		id := l.ask(b, api)
		call = time.Since(start)
		deadline := time.After(30 * time.Second)
		for event == 0 {
			select {
			case ev, ok := <-events:
				if !ok {
					b.Fatal("the approvals stream ended")
				}
				if strings.Contains(ev.data, `id="approval-`+id+`"`) {
					event = ev.at.Sub(start)
				}
			case <-deadline:
				b.Fatalf("no event named %s within 30 s", id)
			}
		}
		if _, err := l.rt.ApprovalDeny(b.Context(), l.owner, runtime.DecisionInput{Approval: id, Reason: "bench"}); err != nil {
			b.Fatal(err)
		}
		return event, call
	}
	round() // warm: tool discovery, pooled connections
	var evs, calls, after []time.Duration
	b.ResetTimer()
	for range b.N {
		e, c := round()
		evs, calls, after = append(evs, e), append(calls, c), append(after, e-c)
	}
	b.StopTimer()
	b.ReportMetric(percentile(evs, 0.5), "event_p50_ms")
	b.ReportMetric(percentile(evs, 0.9), "event_p90_ms")
	b.ReportMetric(percentile(calls, 0.5), "call_p50_ms")
	b.ReportMetric(percentile(after, 0.5), "after_answer_p50_ms")
	b.ReportMetric(percentile(evs, 0.5)/percentile(calls, 0.5), "ratio")
	b.ReportMetric(0, "ns/op") // the figures above are the ones that mean something
}
