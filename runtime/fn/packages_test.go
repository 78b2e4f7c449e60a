package fn

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// runTool calls a shipped package's tool and decodes its output into out.
func runTool(t *testing.T, pkg, tool string, input any, req CallRequest, out any) error {
	t.Helper()
	e := sharedEngine(t)
	p := load(t, e, "packages", pkg)
	req.Tool = tool
	req.Input, _ = json.Marshal(input)
	res, err := e.Call(t.Context(), p, req)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(res.Output, out); err != nil {
		t.Fatalf("output %s: %v", res.Output, err)
	}
	return nil
}

func TestJQQuery(t *testing.T) {
	items := map[string]any{"items": []map[string]any{{"name": "a", "price": 5}, {"name": "b", "price": 12}, {"name": "c", "price": 30}}}
	tests := []struct {
		name, filter string
		input        any
		want         string // results as JSON, or the error's text
		fails        bool
	}{
		{"select", `.items[] | select(.price > 10) | .name`, items, `["b","c"]`, false},
		{"aggregate", `[.items[].price] | add`, items, `[47]`, false},
		{"construct", `{names: [.items[].name], n: (.items | length)}`, items, `[{"n":3,"names":["a","b","c"]}]`, false},
		{"no input", `1 + 1`, nil, `[2]`, false},
		{"no results", `empty`, items, `[]`, false},
		{"parse error", `.items[`, items, "filter: unexpected EOF", true},
		{"runtime error", `.items | keys | .[0] + "x"`, items, "jq: cannot add", true},
		{"error()", `error("boom")`, items, "boom", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out struct{ Results json.RawMessage }
			err := runTool(t, "jq", "query", map[string]any{"filter": tt.filter, "input": tt.input}, CallRequest{}, &out)
			if tt.fails {
				if !errors.Is(err, ErrToolFailed) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Call = %v, want a tool error saying %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out.Results) != tt.want {
				t.Fatalf("results %s, want %s", out.Results, tt.want)
			}
		})
	}
}

const testPage = `<!doctype html><html lang="en"><head><title> Orders  </title>
<meta name="description" content="Order lookup"><style>body{color:red}</style></head>
<body><h1>Orders</h1><p>Find an <b>order</b> by number.</p>
<script>var secret = "not text";</script>
<a href="/orders/17">Order 17</a> <a href="https://example.com/help">Help</a>
<form action="/search" method="post"><input name="q" type="text"><select name="state"></select><button type="submit">Go</button></form>
<h2>Recent</h2></body></html>`

type page struct {
	URL, Title, Lang, Description, Text string
	Status                              int
	Headings                            []struct {
		Level int
		Text  string
	}
	Links []struct{ Href, Text string }
	Forms []struct {
		Action, Method string
		Inputs         []struct{ Tag, Name, Type string }
	}
}

func TestHTMLParse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(testPage))
	}))
	defer srv.Close()

	t.Run("inline", func(t *testing.T) {
		var p page
		if err := runTool(t, "html", "parse", map[string]any{"html": testPage}, CallRequest{}, &p); err != nil {
			t.Fatal(err)
		}
		if p.Title != "Orders" || p.Lang != "en" || p.Description != "Order lookup" {
			t.Fatalf("title %q lang %q description %q", p.Title, p.Lang, p.Description)
		}
		if len(p.Headings) != 2 || p.Headings[0].Text != "Orders" || p.Headings[1].Level != 2 {
			t.Fatalf("headings %+v", p.Headings)
		}
		if len(p.Links) != 2 || p.Links[0].Href != "/orders/17" || p.Links[0].Text != "Order 17" {
			t.Fatalf("links %+v", p.Links)
		}
		if len(p.Forms) != 1 || p.Forms[0].Method != "POST" || len(p.Forms[0].Inputs) != 3 || p.Forms[0].Inputs[1].Name != "state" {
			t.Fatalf("forms %+v", p.Forms)
		}
		if !strings.Contains(p.Text, "Find an order by number.") || strings.Contains(p.Text, "secret") || strings.Contains(p.Text, "color") {
			t.Fatalf("text %q: want the visible text without scripts and styles", p.Text)
		}
	})
	t.Run("url on a granted origin", func(t *testing.T) {
		var p page
		err := runTool(t, "html", "parse", map[string]any{"url": srv.URL + "/orders"}, CallRequest{Origins: []string{srv.URL}}, &p)
		if err != nil {
			t.Fatal(err)
		}
		if p.Status != 200 || p.Links[0].Href != srv.URL+"/orders/17" || p.Forms[0].Action != srv.URL+"/search" {
			t.Fatalf("status %d, links %+v, forms %+v: want links resolved against the page", p.Status, p.Links, p.Forms)
		}
	})
	t.Run("url not granted", func(t *testing.T) {
		err := runTool(t, "html", "parse", map[string]any{"url": srv.URL}, CallRequest{}, &page{})
		if !errors.Is(err, ErrToolFailed) || !strings.Contains(err.Error(), "is not granted") {
			t.Fatalf("Call = %v, want the origin refused", err)
		}
	})
	t.Run("neither html nor url", func(t *testing.T) {
		err := runTool(t, "html", "parse", map[string]any{}, CallRequest{}, &page{})
		if !errors.Is(err, ErrToolFailed) || !strings.Contains(err.Error(), "give exactly one of html or url") {
			t.Fatalf("Call = %v", err)
		}
	})
}

func TestJavaScriptRun(t *testing.T) {
	tests := []struct {
		name, code string
		result     string // JSON
		logs       []string
		fails      string // error text when the call must fail
	}{
		{"expression", `[1, 2, 3].map(x => x * 2)`, `[2,4,6]`, nil, ""},
		{"console", "console.log('hi', {a: 1}, [2]); console.error('bad'); 'done'", `"done"`, []string{`hi {"a":1} [2]`, "error: bad"}, ""},
		{"object", `({when: new Date(0), f: function() {}, n: null})`, `{"n":null,"when":"1970-01-01T00:00:00.000Z"}`, nil, ""},
		{"undefined", `var x = 1;`, `null`, nil, ""},
		{"resolved promise", `Promise.resolve(42)`, `42`, nil, ""},
		{"exception", `throw new TypeError("nope")`, "", nil, "TypeError: nope"},
		{"rejected promise", `Promise.reject("why")`, "", nil, "promise rejected: why"},
		{"syntax error", `let = ;`, "", nil, "SyntaxError"},
		{"one long log line before an exception", "console.log('x'.repeat(20000) + 'END'); throw new Error('boom')", "", nil, "xxxxEND"},
		{"logs before an exception", "console.log('step 1'); console.log('step 2'); throw new Error('boom')", "", nil,
			"console output before the error:\nstep 1\nstep 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out struct {
				Result json.RawMessage
				Logs   []string
			}
			err := runTool(t, "javascript", "run", map[string]any{"code": tt.code}, CallRequest{}, &out)
			if tt.fails != "" {
				if !errors.Is(err, ErrToolFailed) || !strings.Contains(err.Error(), tt.fails) {
					t.Fatalf("Call = %v, want a tool error saying %q", err, tt.fails)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			json.Unmarshal(out.Result, &got)
			json.Unmarshal([]byte(tt.result), &want)
			gotJSON, _ := json.Marshal(got)
			wantJSON, _ := json.Marshal(want)
			if string(gotJSON) != string(wantJSON) {
				t.Fatalf("result %s, want %s", out.Result, tt.result)
			}
			if strings.Join(out.Logs, "\n") != strings.Join(tt.logs, "\n") {
				t.Fatalf("logs %q, want %q", out.Logs, tt.logs)
			}
		})
	}
}

func TestJavaScriptEndlessLoopStopsAtTheDeadline(t *testing.T) {
	err := runTool(t, "javascript", "run", map[string]any{"code": "while (true) {}"}, CallRequest{Timeout: 500 * time.Millisecond}, &struct{}{})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("Call = %v, want ErrTimeout", err)
	}
}
