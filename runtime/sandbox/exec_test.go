package sandbox

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValidateNamesFieldAndLimit(t *testing.T) {
	tests := []struct {
		name  string
		req   ExecRequest
		field string
		limit string
	}{
		{"command missing", ExecRequest{}, "command", "required"},
		{"command blank", ExecRequest{Command: "  \n"}, "command", "required"},
		{"command too long", ExecRequest{Command: strings.Repeat("é", MaxCommandChars+1)}, "command", "8192"},
		{"command NUL", ExecRequest{Command: "a\x00b"}, "command", "NUL"},
		{"stdin too big", ExecRequest{Command: "cat", Stdin: strings.Repeat("x", MaxStdinBytes+1)}, "stdin", "1048576"},
		{"timeout negative", ExecRequest{Command: "true", TimeoutSecs: -1}, "timeout_secs", "1 to 3600"},
		{"timeout too long", ExecRequest{Command: "true", TimeoutSecs: 3601}, "timeout_secs", "1 to 3600"},
		{"cwd relative", ExecRequest{Command: "true", Cwd: "src"}, "cwd", "absolute"},
		{"env name", ExecRequest{Command: "true", Env: map[string]string{"A-B": "x"}}, "env.A-B", "valid variable name"},
		{"env value", ExecRequest{Command: "true", Env: map[string]string{"A": strings.Repeat("x", MaxEnvValueBytes+1)}}, "env.A", "32768"},
		{"too many env", ExecRequest{Command: "true", Env: manyEnv(MaxEnvVars + 1)}, "env", "128"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.Validate()
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(err.Error(), tc.limit) {
				t.Fatalf("error = %v, want field %s mentioning %s", err, tc.field, tc.limit)
			}
		})
	}
}

func manyEnv(n int) map[string]string {
	env := map[string]string{}
	for i := range n {
		env["V"+strings.Repeat("X", i)] = "1"
	}
	return env
}

func TestValidateAcceptsLimitsAndDefaults(t *testing.T) {
	ok := []ExecRequest{
		{Command: strings.Repeat("é", MaxCommandChars)},
		{Command: "cat", Stdin: strings.Repeat("x", MaxStdinBytes)},
		{Command: "true", TimeoutSecs: 1}, {Command: "true", TimeoutSecs: MaxTimeoutSecs},
		{Command: "true", Cwd: "/workspace/src", Env: map[string]string{"_X1": ""}},
	}
	for _, req := range ok {
		if err := req.Validate(); err != nil {
			t.Errorf("%.20q: %v", req.Command, err)
		}
	}
	d := ExecRequest{Command: "true"}.WithDefaults()
	if d.Cwd != "/workspace" || d.TimeoutSecs != 300 {
		t.Errorf("defaults = cwd %q timeout %d, want /workspace and 300", d.Cwd, d.TimeoutSecs)
	}
}

func TestOutputKeepsHeadAndTail(t *testing.T) {
	tests := []struct {
		name      string
		writes    []string
		truncated bool
	}{
		{"short", []string{"hello"}, false},
		{"exactly the limit", []string{strings.Repeat("a", MaxOutputBytes)}, false},
		{"one byte over in small writes", chunks(strings.Repeat("b", MaxOutputBytes+1), 100), true},
		{"long in one write", []string{"HEAD" + strings.Repeat("m", 1<<20) + "TAIL"}, true},
		{"long multibyte", chunks(strings.Repeat("日本語", 100000), 4093), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var o Output
			full := strings.Join(tc.writes, "")
			for _, w := range tc.writes {
				o.Write([]byte(w))
			}
			text, truncated, total := o.Result()
			if truncated != tc.truncated || total != int64(len(full)) {
				t.Fatalf("truncated %v total %d; want %v %d", truncated, total, tc.truncated, len(full))
			}
			if !truncated {
				if text != full {
					t.Fatal("output changed although it fits")
				}
				return
			}
			head, tail, found := strings.Cut(text, "\n[... ")
			if !found || len(text) > MaxOutputBytes || !utf8.ValidString(text) {
				t.Fatalf("kept %d bytes, marker %v, valid UTF-8 %v", len(text), found, utf8.ValidString(text))
			}
			_, tail, _ = strings.Cut(tail, " bytes omitted ...]\n")
			if !strings.HasPrefix(full, head) || !strings.HasSuffix(full, tail) || len(head) < 32000 || len(tail) < 32000 {
				t.Errorf("head %d bytes, tail %d bytes: not the start and end of the output", len(head), len(tail))
			}
		})
	}
}

func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}
