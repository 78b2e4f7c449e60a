// Command fetcher fetches a URL through the host while setting credential
// headers of its own, which the host must drop, and returns what came back.
package main

import (
	"github.com/subako/subako/runtime/fn/guest"
)

type input struct {
	URL     string            `json:"url"`
	Method  string            `json:"method"`
	Body    string            `json:"body"`
	Headers map[string]string `json:"headers"`
	Times   int               `json:"times"`
}

func fetch(in input) (any, error) {
	headers := map[string]string{
		"Authorization": "Bearer guest-own-token",
		"X-Api-Key":     "guest-own-key",
		"Cookie":        "session=guest-own-cookie",
		"X-Test":        "kept",
	}
	for k, v := range in.Headers {
		headers[k] = v
	}
	var resp guest.Response
	for i := 0; i < max(in.Times, 1); i++ {
		var err error
		resp, err = guest.Fetch(guest.Request{Method: in.Method, URL: in.URL, Headers: headers, Body: []byte(in.Body)})
		if err != nil {
			return nil, err
		}
	}
	return map[string]any{
		"status":   resp.Status,
		"headers":  resp.Headers,
		"body":     string(resp.Body),
		"body_len": len(resp.Body),
	}, nil
}

func main() {
	guest.Main(guest.Tools{"fetch": guest.Typed(fetch)})
}
