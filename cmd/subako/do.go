package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/subako/subako/web"
)

// doCmd calls one verb of the API by its name, the same name the Action
// record and the audit page show. Path parameters and query fields come from
// the JSON input's fields of the same name.
func doCmd(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("usage: subako do Noun.verb [--json '{...}' | JSON on stdin]\n\nverbs:\n  %s", strings.Join(verbNames(), "\n  "))
	}
	verb := args[0]
	fs := flag.NewFlagSet("do", flag.ContinueOnError)
	raw := fs.String("json", "", "the verb's input as a JSON object (default: standard input when it is not a terminal)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	route, ok := findVerb(verb)
	if !ok {
		return fmt.Errorf("unknown verb %q; known verbs:\n  %s", verb, strings.Join(verbNames(), "\n  "))
	}
	base, token := strings.TrimRight(os.Getenv("SUBAKO_URL"), "/"), os.Getenv("SUBAKO_TOKEN")
	if base == "" || token == "" {
		return fmt.Errorf("set SUBAKO_URL (e.g. http://127.0.0.1:8080) and SUBAKO_TOKEN (from `subako token create`)")
	}
	input, err := readInput(*raw, stdin)
	if err != nil {
		return err
	}
	req, err := buildRequest(base, route, input)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 10 * time.Minute}).Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", verb, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var pretty bytes.Buffer
	if json.Indent(&pretty, body, "", "  ") == nil {
		body = append(pretty.Bytes(), '\n')
	}
	if resp.StatusCode >= 300 {
		os.Stderr.Write(body)
		return fmt.Errorf("%s answered %s", verb, resp.Status)
	}
	_, err = stdout.Write(body)
	return err
}

func readInput(raw string, stdin io.Reader) (map[string]any, error) {
	if raw == "" {
		if f, ok := stdin.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				return map[string]any{}, nil
			}
		}
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, err
		}
		raw = string(b)
	}
	in := map[string]any{}
	if strings.TrimSpace(raw) == "" {
		return in, nil
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("the input must be a JSON object: %w", err)
	}
	return in, nil
}

// buildRequest fills the route's :params from the input, sends the rest as the
// query (GET, DELETE) or the JSON body.
func buildRequest(base string, r web.APIRoute, in map[string]any) (*http.Request, error) {
	var parts []string
	for _, seg := range strings.Split(r.Path, "/") {
		if name, ok := strings.CutPrefix(seg, ":"); ok {
			v, ok := in[name]
			if !ok {
				return nil, fmt.Errorf("%s needs %q in its input", r.Verb, name)
			}
			delete(in, name)
			seg = url.PathEscape(fmt.Sprint(v))
		}
		parts = append(parts, seg)
	}
	u := base + "/api/v1" + strings.Join(parts, "/")
	var body io.Reader
	if r.Method == http.MethodGet || r.Method == http.MethodDelete {
		q := url.Values{}
		for k, v := range in {
			q.Set(k, fmt.Sprint(v))
		}
		if len(q) > 0 {
			u += "?" + q.Encode()
		}
	} else {
		payload := any(in)
		if r.WholeBody() {
			b, ok := in["body"]
			if !ok || len(in) != 1 {
				return nil, fmt.Errorf(`%s takes its input as "body" (and the path's ids), e.g. {"version": "ver_…", "body": {…}}`, r.Verb)
			}
			payload = b
		}
		b, err := json.Marshal(payload)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(r.Method, u, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

func findVerb(name string) (web.APIRoute, bool) {
	for _, r := range web.APIVerbs() {
		if r.Verb == name {
			return r, true
		}
	}
	return web.APIRoute{}, false
}

func verbNames() []string {
	var out []string
	for _, r := range web.APIVerbs() {
		out = append(out, fmt.Sprintf("%-18s %s /api/v1%s", r.Verb, r.Method, r.Path))
	}
	sort.Strings(out)
	return out
}
