package sandbox

import (
	"errors"
	"path"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// envNameOracle is what validEnvName must accept.
var envNameOracle = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// FuzzExecRequestValidate checks Validate against its limits as documented:
// every refusal is a *FieldError naming a field of the request; an accepted
// request keeps every limit, and its defaults keep it valid.
func FuzzExecRequestValidate(f *testing.F) {
	f.Add("ls -la", "", "", 0, "HOME", "/workspace")
	f.Add("echo hi", "/workspace/sub", "input", 30, "LANG", "C.UTF-8")
	f.Add("   ", "relative", "", -1, "1BAD", "x")
	f.Add("a\x00b", "/a\x00", "", 3601, "OK", "v\x00")
	f.Add(strings.Repeat("x", MaxCommandChars+1), "/", "", MaxTimeoutSecs, "_", "")
	f.Fuzz(func(t *testing.T, command, cwd, stdin string, timeout int, envKey, envValue string) {
		req := ExecRequest{Command: command, Cwd: cwd, Stdin: stdin, TimeoutSecs: timeout, Env: map[string]string{envKey: envValue}}
		err := req.Validate()
		if err != nil {
			for _, e := range unjoin(err) {
				var fe *FieldError
				if !errors.As(e, &fe) || fe.Message == "" || !knownField(fe.Field, envKey) {
					t.Fatalf("a refusal does not name a field of the request: %#v", e)
				}
			}
			return
		}
		switch {
		case strings.TrimSpace(command) == "", utf8.RuneCountInString(command) > MaxCommandChars, strings.IndexByte(command, 0) >= 0:
			t.Fatalf("accepted command %q", command)
		case len(stdin) > MaxStdinBytes:
			t.Fatalf("accepted %d bytes of stdin", len(stdin))
		case timeout < 0 || timeout > MaxTimeoutSecs:
			t.Fatalf("accepted timeout %d", timeout)
		case cwd != "" && (!path.IsAbs(cwd) || strings.IndexByte(cwd, 0) >= 0):
			t.Fatalf("accepted cwd %q", cwd)
		case !envNameOracle.MatchString(envKey) || strings.IndexByte(envValue, 0) >= 0 || len(envValue) > MaxEnvValueBytes:
			t.Fatalf("accepted env %q=%q", envKey, envValue)
		}
		d := req.WithDefaults()
		if err := d.Validate(); err != nil || !path.IsAbs(d.Cwd) || d.TimeoutSecs < 1 {
			t.Fatalf("defaults broke a valid request: %+v (%v)", d, err)
		}
	})
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func knownField(field, envKey string) bool {
	switch field {
	case "command", "cwd", "stdin", "timeout_secs", "env", "env." + envKey:
		return true
	}
	return false
}
