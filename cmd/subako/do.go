package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/subako/subako/runtime/verbs"
)

// doCmd calls one verb of the API by its name, the same name the Action
// record and the audit page show. Path parameters and query fields come from
// the JSON input's fields of the same name.
func doCmd(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("usage: subako do Noun.verb [--json '{...}' | JSON on stdin] [--body-file PATH|-]\n\nverbs (GET /api/v1/openapi.json describes each):\n  %s", strings.Join(verbNames(), "\n  "))
	}
	verb := args[0]
	fs := flag.NewFlagSet("do", flag.ContinueOnError)
	raw := fs.String("json", "", "the verb's input as a JSON object (default: standard input when it is not a terminal)")
	bodyFile := fs.String("body-file", "", "send this file (- for standard input) as the request body, as is: the .tar.gz of Archive.upload, the agent config of Version.update")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	route, ok := verbs.Get(verb)
	if !ok {
		return fmt.Errorf("unknown verb %q; known verbs:\n  %s", verb, strings.Join(verbNames(), "\n  "))
	}
	base, token := strings.TrimRight(os.Getenv("SUBAKO_URL"), "/"), os.Getenv("SUBAKO_TOKEN")
	if base == "" || token == "" {
		return fmt.Errorf("set SUBAKO_URL (e.g. http://127.0.0.1:8080) and SUBAKO_TOKEN (from `subako token create`)")
	}
	file, err := openBody(route, *bodyFile, *raw, stdin)
	if err != nil {
		return err
	}
	if file != nil {
		defer file.Close()
		if *bodyFile == "-" {
			stdin = nil // the body; the input is --json alone
		}
	}
	input, err := readInput(*raw, stdin)
	if err != nil {
		return err
	}
	req, err := buildRequest(base, route, input, file)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	// The Action records its client as "subako do" (docs/api.md, "Who called").
	req.Header.Set("User-Agent", UserAgent())
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
	if raw == "" && stdin != nil {
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

// openBody opens --body-file for a verb that takes a whole body; a verb
// whose body is a file (RawBody) needs one, since its body is no JSON field.
func openBody(r verbs.Verb, path, raw string, stdin io.Reader) (io.ReadCloser, error) {
	switch {
	case path == "" && (r.Body == verbs.BodyRaw):
		return nil, fmt.Errorf("%s sends a file as its body: --body-file PATH (or - for standard input), with the path's ids in --json", r.Name)
	case path == "":
		return nil, nil
	case !(r.Body == verbs.BodyRaw) && !(r.Body == verbs.BodyWhole):
		return nil, fmt.Errorf("%s takes its input as JSON fields, not --body-file", r.Name)
	case path == "-" && raw == "":
		return nil, fmt.Errorf("--body-file - reads the body from standard input, so give the path's ids with --json")
	case path == "-":
		return io.NopCloser(stdin), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--body-file: %w", err)
	}
	return f, nil
}

// buildRequest fills the route's :params from the input, sends the rest as the
// query (GET, DELETE) or the JSON body; a body from --body-file is sent as is.
func buildRequest(base string, r verbs.Verb, in map[string]any, file io.Reader) (*http.Request, error) {
	path, missing := verbs.FillPath(r.Path, func(name string) (string, bool) {
		v, ok := in[name]
		delete(in, name)
		return fmt.Sprint(v), ok
	})
	if missing != "" {
		return nil, fmt.Errorf("%s needs %q in its input", r.Name, missing)
	}
	u := base + "/api/v1" + path
	var body io.Reader
	if file != nil {
		if len(in) > 0 {
			return nil, fmt.Errorf("%s takes only the path's ids in --json with --body-file, not %s", r.Name, strings.Join(slices.Sorted(maps.Keys(in)), ", "))
		}
		req, err := http.NewRequest(r.Method, u, file)
		if err != nil {
			return nil, err
		}
		if f, ok := file.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
				req.ContentLength = st.Size() // streamed, with its length
			}
		}
		req.Header.Set("Content-Type", "application/json")
		if r.Body == verbs.BodyRaw {
			req.Header.Set("Content-Type", "application/gzip")
		}
		if r.Name == "Volume.put" || r.Name == "Sandbox.writeFile" {
			req.Header.Set("Content-Type", "application/octet-stream")
		}
		return req, nil
	}
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
		if r.Body == verbs.BodyWhole {
			b, ok := in["body"]
			if !ok || len(in) != 1 {
				return nil, fmt.Errorf(`%s takes its input as "body" (and the path's ids), e.g. {"version": "ver_…", "body": {…}}`, r.Name)
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

// verbNames lists each verb with its route and doc line, in the registry's
// order (API.md's), for `subako do` with no verb or an unknown one.
func verbNames() []string {
	var out []string
	for _, v := range verbs.All() {
		out = append(out, fmt.Sprintf("%-22s %-6s /api/v1%s\n  %22s %s", v.Name, v.Method, v.Path, "", v.Doc))
	}
	return out
}

// UserAgent is what `subako do` sends: "subako-cli/<version>"; the server
// records such a call's client as "subako do".
func UserAgent() string {
	v := "dev"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	return "subako-cli/" + v
}
