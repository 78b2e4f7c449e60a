package tools

import (
	"encoding/json"
	"strings"
	"testing"
)

// globReference is the textbook matcher for * alone: a table over every
// pattern prefix and string prefix, quadratic but obviously right.
func globReference(p, s string) bool {
	m := make([][]bool, len(p)+1)
	for i := range m {
		m[i] = make([]bool, len(s)+1)
	}
	m[0][0] = true
	for i := 1; i <= len(p); i++ {
		for j := 0; j <= len(s); j++ {
			if p[i-1] == '*' {
				m[i][j] = m[i-1][j] || (j > 0 && m[i][j-1])
			} else {
				m[i][j] = j > 0 && m[i-1][j-1] && p[i-1] == s[j-1]
			}
		}
	}
	return m[len(p)][len(s)]
}

// FuzzGlob: the linear matcher agrees with the reference on every input.
func FuzzGlob(f *testing.F) {
	for _, c := range [][2]string{{"git *", "git status"}, {"*a*a*b", "aaaaab"}, {"ab*ba", "aba"}, {"*", ""},
		{"日*語", "日本語"}, {"a**b", "ab"}, {"*x*", "yyy"}} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, p, s string) {
		if len(p) > 64 || len(s) > 256 {
			return
		}
		if got, want := Glob(p, s), globReference(p, s); got != want {
			t.Fatalf("Glob(%q, %q) = %v; the reference says %v", p, s, got, want)
		}
	})
}

// FuzzDecide: any input against the table's rules decides without panic,
// with a policy of the three, and an allow by a command pattern never lets
// a shell control character or env through.
func FuzzDecide(f *testing.F) {
	for _, in := range []string{`{"command": "git status"}`, `{"command": "git status; rm -rf /"}`,
		`{"repo": "subako/x", "number": 3}`, `{"command": 1}`, `[]`, `{"command": "git x", "env": {"A": "b"}}`, `{"a":`} {
		f.Add(in)
	}
	cfg, err := Parse([]byte(argConfig), cat)
	if err != nil {
		f.Fatal(err)
	}
	ts := List(cfg, nil, cat)
	f.Fuzz(func(t *testing.T, input string) {
		for _, tl := range ts {
			d := Decide(tl, json.RawMessage(input))
			if d.Policy != PolicyAllow && d.Policy != PolicyAsk && d.Policy != PolicyDeny {
				t.Fatalf("Decide(%s, %q) = %+v", tl.Tool, input, d)
			}
			if d.Policy != PolicyAllow || d.Rule == 0 || tl.Tool != SandboxTool {
				continue
			}
			r := tl.Rules[d.Rule-1]
			var e struct {
				Command string            `json:"command"`
				Env     map[string]string `json:"env"`
			}
			json.Unmarshal([]byte(input), &e)
			if !r.Operators && (strings.ContainsAny(e.Command, ";&|<>()$`\n\r") || len(e.Env) > 0) {
				t.Fatalf("rule %d allowed %q (env %v)", d.Rule, e.Command, e.Env)
			}
		}
	})
}
