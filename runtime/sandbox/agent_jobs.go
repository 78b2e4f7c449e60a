package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Limits of background jobs (exec with background: true).
const (
	// MaxJobs is how many background jobs one sandbox runs at once.
	MaxJobs = 4
	// maxKeptJobs is how many jobs, running or ended, the agent remembers
	// (each keeps at most MaxOutputBytes per stream); the oldest ended one
	// is forgotten first.
	maxKeptJobs = 16
	// JobFirstOutput is how long a background exec waits for the job's
	// first output before answering (less when the job ends sooner).
	JobFirstOutput = time.Second
	maxJobIDChars  = 64
)

// Job statuses, as ExecResult.JobStatus gives them.
const (
	JobRunning = "running"
	JobExited  = "exited"
	JobKilled  = "killed"
)

// validateJobRef checks an exec that reads (job) or ends (kill_job) a job:
// it names one job and nothing to run.
func validateJobRef(r ExecRequest) error {
	field, id := "job", r.Job
	if r.KillJob != "" {
		field, id = "kill_job", r.KillJob
	}
	var errs []error
	if r.Job != "" && r.KillJob != "" {
		errs = append(errs, &FieldError{"kill_job", "give job (read a job) or kill_job (end one), not both"})
	}
	if r.Command != "" || r.Background || r.Stdin != "" || len(r.Env) > 0 {
		errs = append(errs, &FieldError{field, "names a background job, so command, background, env and stdin must be left out"})
	}
	if len(id) > maxJobIDChars || strings.ContainsAny(id, "\x00/") {
		errs = append(errs, &FieldError{field, fmt.Sprintf("is not a job id (a background exec's answer gives it as job, at most %d characters)", maxJobIDChars)})
	}
	if r.TimeoutSecs < 0 || r.TimeoutSecs > MaxTimeoutSecs {
		errs = append(errs, &FieldError{"timeout_secs", fmt.Sprintf("is %d, it must be 1 to %d (default %d)", r.TimeoutSecs, MaxTimeoutSecs, DefaultTimeoutSecs)})
	}
	return errors.Join(errs...)
}

// job is one background command: in its own pid namespace and pid slot
// like any exec, its output kept like an exec's, until it ends.
type job struct {
	id      string
	started time.Time
	stdout  Output
	stderr  Output
	kill    context.CancelFunc
	done    chan struct{}

	mu     sync.Mutex
	killed bool
	res    ExecResult // once done
}

// jobTable holds one machine's background jobs.
type jobTable struct {
	mu   sync.Mutex
	jobs []*job // oldest first
}

func (j *job) running() bool {
	select {
	case <-j.done:
		return false
	default:
		return true
	}
}

// result is the job's status and the output kept so far.
func (j *job) result() ExecResult {
	j.mu.Lock()
	res := j.res
	killed := j.killed
	j.mu.Unlock()
	res.Job = j.id
	switch {
	case j.running():
		res = ExecResult{Job: j.id, JobStatus: JobRunning, DurationMs: time.Since(j.started).Milliseconds()}
	case killed:
		res.JobStatus = JobKilled
	default:
		res.JobStatus = JobExited
	}
	res.Stdout, res.StdoutTruncated, res.StdoutBytes = j.stdout.Result()
	res.Stderr, res.StderrTruncated, res.StderrBytes = j.stderr.Result()
	return res
}

// runJob answers an exec that starts, reads or kills a background job.
func (a *agent) runJob(ctx context.Context, req ExecRequest) (ExecResult, error) {
	if err := req.Validate(); err != nil {
		return ExecResult{}, err
	}
	t := &a.jobs
	switch {
	case req.Job != "":
		j, err := t.find("job", req.Job)
		if err != nil {
			return ExecResult{}, err
		}
		return j.result(), nil
	case req.KillJob != "":
		j, err := t.find("kill_job", req.KillJob)
		if err != nil {
			return ExecResult{}, err
		}
		if j.running() {
			j.mu.Lock()
			j.killed = true
			j.mu.Unlock()
			j.kill()
			select {
			case <-j.done:
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
			}
		}
		return j.result(), nil
	}
	j, err := t.start(req, a.baseEnv)
	if err != nil {
		return ExecResult{}, err
	}
	select {
	case <-j.done:
	case <-ctx.Done():
	case <-time.After(JobFirstOutput):
	}
	return j.result(), nil
}

func (t *jobTable) find(field, id string) (*job, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, j := range t.jobs {
		if j.id == id {
			return j, nil
		}
	}
	return nil, &FieldError{field, fmt.Sprintf("no background job %q in this sandbox: jobs end when the sandbox suspends or stops, and it keeps the last %d", clipID(id), maxKeptJobs)}
}

func clipID(id string) string {
	if len(id) > maxJobIDChars {
		return id[:maxJobIDChars] + "…"
	}
	return id
}

// start begins req as a job, refused when MaxJobs already run.
func (t *jobTable) start(req ExecRequest, baseEnv []string) (*job, error) {
	timeout := time.Duration(req.TimeoutSecs) * time.Second // 0: until it ends or is killed
	req = req.WithDefaults()
	if fi, err := os.Stat(req.Cwd); err != nil || !fi.IsDir() {
		return nil, &FieldError{"cwd", fmt.Sprintf("%q is not a folder in the sandbox", req.Cwd)}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var running []string
	for _, j := range t.jobs {
		if j.running() {
			running = append(running, j.id)
		}
	}
	if len(running) >= MaxJobs {
		return nil, &FieldError{"background", fmt.Sprintf("this sandbox already runs %d background jobs (%s), the limit is %d: end one with kill_job first",
			len(running), strings.Join(running, ", "), MaxJobs)}
	}
	ctx, cancel := context.WithCancel(context.Background())
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), timeout)
	}
	j := &job{id: newJobID(), started: time.Now(), kill: cancel, done: make(chan struct{})}
	newPID := canNewPID()
	cmd := execInitCommand(ctx, req.Command, newPID)
	cmd.Dir = req.Cwd
	cmd.Env = commandEnv(baseEnv, req.Env)
	slot := ""
	if newPID {
		slot = pidSlots.take()
		cmd.Env = withSlot(cmd.Env, slot)
	}
	cmd.Stdout, cmd.Stderr = &j.stdout, &j.stderr
	if req.Stdin != "" {
		cmd.Stdin = strings.NewReader(req.Stdin)
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = pipeGrace
	if err := startWithoutCaps(cmd); err != nil {
		pidSlots.give(slot)
		cancel()
		return nil, fmt.Errorf("agent: start sh: %w", err)
	}
	go func() {
		defer close(j.done)
		defer cancel()
		defer pidSlots.give(slot)
		err := cmd.Wait()
		res := ExecResult{DurationMs: time.Since(j.started).Milliseconds()}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
			res.ExitCode = ws.ExitStatus()
			if ws.Signaled() {
				res.ExitCode = 128 + int(ws.Signal())
			}
		} else if err != nil {
			res.ExitCode = -1
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			res.TimedOut, res.ExitCode = true, TimeoutExitCode
		}
		j.mu.Lock()
		j.res = res
		j.mu.Unlock()
	}()
	t.jobs = append(t.jobs, j)
	t.forgetOld()
	return j, nil
}

// forgetOld drops the oldest ended jobs past maxKeptJobs (t.mu held).
func (t *jobTable) forgetOld() {
	for len(t.jobs) > maxKeptJobs {
		i := slices.IndexFunc(t.jobs, func(j *job) bool { return !j.running() })
		if i < 0 {
			return
		}
		t.jobs = slices.Delete(t.jobs, i, i+1)
	}
}

// killAll ends every job (the agent is stopping).
func (t *jobTable) killAll() {
	t.mu.Lock()
	jobs := slices.Clone(t.jobs)
	t.mu.Unlock()
	for _, j := range jobs {
		j.kill()
	}
	for _, j := range jobs {
		<-j.done
	}
}

func newJobID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return "job_" + hex.EncodeToString(b)
}

// isJobRequest reports whether req starts, reads or kills a background job.
func isJobRequest(req ExecRequest) bool {
	return req.Background || req.Job != "" || req.KillJob != ""
}
