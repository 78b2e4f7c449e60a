package sandbox

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// Limits of the exec tool, from the product spec (seed 001).
const (
	MaxCommandChars    = 8192
	MaxStdinBytes      = 1 << 20
	DefaultTimeoutSecs = 300
	MaxTimeoutSecs     = 3600
	MaxOutputBytes     = 64 << 10
	MaxEnvVars         = 128
	MaxEnvValueBytes   = 32 << 10
	// MaxEnvBytes bounds the variables in all (each name=value and its
	// NUL): with the command and the base environment they stay well under
	// what the kernel lets one execve carry (a quarter of an 8 MiB stack).
	MaxEnvBytes = 1 << 20
	DefaultCwd  = "/workspace"
	// TimeoutExitCode is the exit code of a command killed at its deadline,
	// the same as coreutils' timeout(1), so scripts reading it see a familiar value.
	TimeoutExitCode = 124
)

// ExecRequest is the input of the exec tool.
type ExecRequest struct {
	Command     string            `json:"command"`
	Cwd         string            `json:"cwd,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Stdin       string            `json:"stdin,omitempty"`
	TimeoutSecs int               `json:"timeout_secs,omitempty"`
	// Background starts the command as a job that outlives this exec
	// (agent_jobs.go); Job reads a job's output and status, KillJob ends one.
	Background bool   `json:"background,omitempty"`
	Job        string `json:"job,omitempty"`
	KillJob    string `json:"kill_job,omitempty"`
}

// ExecResult is what the model gets back. Stdout and Stderr hold at most
// MaxOutputBytes each; the byte counts are always the full amounts printed.
type ExecResult struct {
	ExitCode        int    `json:"exit_code"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutBytes     int64  `json:"stdout_bytes"`
	StderrBytes     int64  `json:"stderr_bytes"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
	TimedOut        bool   `json:"timed_out"`
	DurationMs      int64  `json:"duration_ms"`
	// Job and JobStatus ("running", "exited", "killed") answer a background
	// exec and a read or kill of its job.
	Job       string `json:"job,omitempty"`
	JobStatus string `json:"job_status,omitempty"`
}

// FieldError is a user-caused error about one input field; Field is the JSON
// name so the API can put it in its problem document.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// validEnvName reports whether name is a shell variable name: letters,
// digits and _, not starting with a digit. (Not a regexp: the agent links
// this file, and regexp's init would run at every cold start.)
func validEnvName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return name != ""
}

// Validate checks the request against the exec limits. A zero TimeoutSecs and
// an empty Cwd are valid: WithDefaults fills them in.
func (r ExecRequest) Validate() error {
	var errs []error
	if r.Job != "" || r.KillJob != "" {
		return validateJobRef(r)
	}
	switch n := utf8.RuneCountInString(r.Command); {
	case strings.TrimSpace(r.Command) == "":
		errs = append(errs, &FieldError{"command", "is required"})
	case n > MaxCommandChars:
		errs = append(errs, &FieldError{"command", fmt.Sprintf("is %d characters, the limit is %d", n, MaxCommandChars)})
	case strings.IndexByte(r.Command, 0) >= 0:
		errs = append(errs, &FieldError{"command", "must not contain a NUL byte"})
	}
	if len(r.Stdin) > MaxStdinBytes {
		errs = append(errs, &FieldError{"stdin", fmt.Sprintf("is %d bytes, the limit is %d (1 MiB)", len(r.Stdin), MaxStdinBytes)})
	}
	if r.TimeoutSecs < 0 || r.TimeoutSecs > MaxTimeoutSecs {
		errs = append(errs, &FieldError{"timeout_secs", fmt.Sprintf("is %d, it must be 1 to %d (default %d)", r.TimeoutSecs, MaxTimeoutSecs, DefaultTimeoutSecs)})
	}
	if r.Cwd != "" && (!path.IsAbs(r.Cwd) || strings.IndexByte(r.Cwd, 0) >= 0) {
		errs = append(errs, &FieldError{"cwd", fmt.Sprintf("%q must be an absolute path such as /workspace", r.Cwd)})
	}
	return errors.Join(append(errs, validateEnv(r.Env)...)...)
}

func validateEnv(env map[string]string) []error {
	var errs []error
	if len(env) > MaxEnvVars {
		errs = append(errs, &FieldError{"env", fmt.Sprintf("has %d variables, the limit is %d", len(env), MaxEnvVars)})
	}
	total := 0
	for name, value := range env {
		total += len(name) + len(value) + 2
		if !validEnvName(name) || len(name) > 256 {
			errs = append(errs, &FieldError{"env." + name, "is not a valid variable name: letters, digits and _, not starting with a digit, at most 256 characters"})
			continue
		}
		if len(value) > MaxEnvValueBytes {
			errs = append(errs, &FieldError{"env." + name, fmt.Sprintf("value is %d bytes, the limit is %d", len(value), MaxEnvValueBytes)})
		}
		if strings.IndexByte(value, 0) >= 0 {
			errs = append(errs, &FieldError{"env." + name, "value must not contain a NUL byte"})
		}
	}
	if total > MaxEnvBytes {
		errs = append(errs, &FieldError{"env", fmt.Sprintf("is %d bytes in all (each name=value and its terminator), the limit is %d (1 MiB)", total, MaxEnvBytes)})
	}
	return errs
}

// WithDefaults returns the request with the documented defaults filled in:
// cwd /workspace and a 300-second timeout.
func (r ExecRequest) WithDefaults() ExecRequest {
	if r.Cwd == "" {
		r.Cwd = DefaultCwd
	}
	r.Cwd = path.Clean(r.Cwd)
	if r.TimeoutSecs == 0 {
		r.TimeoutSecs = DefaultTimeoutSecs
	}
	return r
}
