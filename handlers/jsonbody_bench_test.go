package handlers

import (
	"strings"
	"testing"
)

// BenchmarkCheckJSONBody: every JSON body the API and the MCP endpoint
// take is checked (checkJSONBody); "scan" is the token-by-token check
// alone, which the quick pass leaves only doubtful bodies to.
func BenchmarkCheckJSONBody(b *testing.B) {
	bodies := []struct{ name, body string }{
		{"exec", `{"tool":"sandbox__workbench__exec","input":{"command":"true"},"wait_seconds":30}`},
		{"mcp_call", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"skill__docs__read","arguments":{"path":"SKILL.md"},"_meta":{"progressToken":7}}}`},
		{"4MiB_numbers", `{"tool":"x","input":{"a":[` + strings.Repeat("1,", 2_000_000) + `1]}}`},
	}
	for _, c := range bodies {
		body := []byte(c.body)
		for _, way := range []struct {
			name  string
			check func([]byte) error
		}{{"checked", checkJSONBody}, {"scan", scanJSONBody}} {
			b.Run(c.name+"/"+way.name, func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					if err := way.check(body); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkDecodeStrict: a tool call's body decoded as the API decodes it
// (checked, keys compared in their case, then decoded into the verb's
// input).
func BenchmarkDecodeStrict(b *testing.B) {
	type toolCall struct {
		Tool        string         `json:"tool"`
		Input       map[string]any `json:"input"`
		WaitSeconds int            `json:"wait_seconds"`
	}
	for _, c := range []struct{ name, body string }{
		{"exec", `{"tool":"sandbox__workbench__exec","input":{"command":"true"},"wait_seconds":30}`},
		{"4MiB_numbers", `{"tool":"x","input":{"a":[` + strings.Repeat("1,", 2_000_000) + `1]}}`},
	} {
		body := []byte(c.body)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				var v toolCall
				if err := decodeStrict(body, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
