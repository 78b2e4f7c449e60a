package sandbox

import (
	"context"
	"errors"
)

// Network modes of a sandbox grant, spelled as in the agent config.
const (
	NetworkNone         = "none"
	NetworkUnrestricted = "unrestricted"
)

// ErrMachineExited is returned by Exec when the machine is gone (stopped, or
// its first process died, for example killed by its memory limit).
var ErrMachineExited = errors.New("sandbox: machine exited")

// Limits are the resource limits of one machine; zero means no limit.
type Limits struct {
	MemoryBytes int64
	Pids        int64
	// CPUPercent is a share of one core: 100 is one core, 250 two and a half.
	CPUPercent int
	// DiskBytes is the size of /workspace while the machine runs (0: the
	// driver's own default).
	DiskBytes int64
}

// Spec says what a driver starts.
type Spec struct {
	ID      string
	Release string
	Network string
	// WorkspaceDir is a host folder that appears read-write at /workspace.
	WorkspaceDir string
	// Skills maps a skill name to a host folder that appears read-only at
	// /skills/<name>.
	Skills map[string]string
	Limits Limits
	// VolumeDir, if set, is the session's volume folder, bound at /volume:
	// read-only, or read-write with VolumeWrite. It is the session's, not
	// the sandbox's: no archive of /workspace includes it.
	VolumeDir   string
	VolumeWrite bool
	// EgressDir, if set, is the host folder of the sandbox's network exit
	// (its proxy's socket and the certificates to trust), bound read-only at
	// EgressDir; the agent relays the proxy and, in allowlist mode, DNS.
	EgressDir string
}

// Driver starts machines. The local driver uses bubblewrap; a Kubernetes
// driver can implement the same interface.
type Driver interface {
	Start(ctx context.Context, spec Spec) (Machine, error)
}

// Machine is one running sandbox. Exec may be called concurrently; Stop kills
// every process in the machine and may be called more than once.
type Machine interface {
	Exec(ctx context.Context, req ExecRequest) (ExecResult, error)
	Stop() error
}

// WorkspaceRecoverer is a Driver whose failed Stop can leave a workspace
// folder in a state of its own (the local driver's disk, still mounted on
// it). The Manager calls RecoverWorkspace before a start touches the folder.
type WorkspaceRecoverer interface {
	RecoverWorkspace(dir string) error
}
