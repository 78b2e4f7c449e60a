package sandbox

import (
	"errors"
	"fmt"
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
		{"env too big in all", ExecRequest{Command: "true", Env: bigEnv(MaxEnvBytes/MaxEnvValueBytes + 1)}, "env", "1048576"},
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

// bigEnv is n variables of the largest value each.
func bigEnv(n int) map[string]string {
	env := map[string]string{}
	for i := range n {
		env[fmt.Sprintf("V%d", i)] = strings.Repeat("x", MaxEnvValueBytes)
	}
	return env
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
		{Command: "true", Env: bigEnv(MaxEnvBytes / (MaxEnvValueBytes + 8))}, // 31 of 32 KiB: just under 1 MiB
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

// TestWarmableLeavesSomeVariablesCold: an exec setting a variable that acts
// on a cold init's own shell, or one of Subako's, runs under a cold init
// (agent_warm.go); any other folder and variables take a warm one.
func TestWarmableLeavesSomeVariablesCold(t *testing.T) {
	for name, want := range map[string]bool{
		"HOME": true, "PATH": true, "IFS": true, "CDPATH": true, "LD": true, "subako": true, "PROBE_LD_X": true,
		"PWD": false, "OLDPWD": false, "LD_PRELOAD": false, "LD_SHOW_AUXV": false, "GLIBC_TUNABLES": false,
		"SUBAKO_EXEC_SLOT": false, "subako_command": false,
	} {
		req := ExecRequest{Command: "true", Cwd: "/tmp", Env: map[string]string{"A": "1", name: "x"}}
		if got := warmable(req); got != want {
			t.Errorf("an exec setting %s: warmable %v, want %v", name, got, want)
		}
	}
}
