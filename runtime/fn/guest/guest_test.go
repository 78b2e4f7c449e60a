package guest

import (
	"errors"
	"strings"
	"testing"
)

type addInput struct {
	A, B int
}

var tools = Tools{"add": Typed(func(in addInput) (any, error) {
	return map[string]int{"sum": in.A + in.B}, nil
})}

func TestRun(t *testing.T) {
	tests := []struct {
		name, stdin, out, err string
	}{
		{"ok", `{"tool":"add","input":{"a":2,"b":3}}`, `{"sum":5}`, ""},
		{"no input", `{"tool":"add"}`, `{"sum":0}`, ""},
		{"unknown tool", `{"tool":"mul","input":{}}`, "", `unknown tool "mul"`},
		{"unknown field", `{"tool":"add","input":{"c":1}}`, "", `input: json: unknown field "c"`},
		{"not JSON", `add 2 3`, "", "read call from stdin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Run(tools, strings.NewReader(tt.stdin))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Run = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || string(out) != tt.out {
				t.Fatalf("Run = %s, %v; want %s", out, err, tt.out)
			}
		})
	}
}

func TestDecodeResponse(t *testing.T) {
	tests := []struct {
		name, wire, body, err string
	}{
		{"text", `{"status":200,"headers":{"Content-Type":["text/plain"]},"body":"hi"}`, "hi", ""},
		{"bytes", `{"status":200,"body_base64":"/wD+"}`, "\xff\x00\xfe", ""},
		{"refused", `{"error":"http_fetch: origin https://x.example is not granted"}`, "", "is not granted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := decodeResponse([]byte(tt.wire))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("decode = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || string(resp.Body) != tt.body || resp.Status != 200 {
				t.Fatalf("decode = %+v, %v", resp, err)
			}
		})
	}
	if got := (Response{Headers: map[string][]string{"Content-Type": {"a"}}}).Header("content-type"); got != "a" {
		t.Fatalf("Header = %q, want a case-insensitive match", got)
	}
}

func TestFetchOutsideTheHost(t *testing.T) {
	if _, err := Fetch(Request{URL: "https://example.com"}); !errors.Is(err, ErrNoHost) {
		t.Fatalf("Fetch = %v, want ErrNoHost", err)
	}
}
