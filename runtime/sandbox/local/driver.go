// Package local runs sandboxes on this machine with bubblewrap: one bwrap
// per running sandbox, the server's own executable as the agent inside, and
// slirp4netns for Internet mode.
//
// It must never start a sandbox as host root (bwrap as root maps the
// sandbox's root to the real one), never share the host's network namespace,
// and never bind the host's /etc: the sandbox gets a generated one.
package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/release"
)

// Config configures the driver. The zero value works: release "2026" is the
// host's /usr, and a root server runs sandboxes as uid and gid 65534.
type Config struct {
	// Releases maps a release name to a root folder holding usr/ and the
	// usual bin, sbin, lib, lib64 entries (symlinks or folders), and the
	// public etc files listed in releaseEtc. Default: {"2026": "/"} when
	// Images is nil (the host's own root, for development and tests).
	Releases map[string]string
	// Images, if set, builds and caches the releases it knows (2026) as
	// images from Debian packages; a release named in Releases stays a
	// folder. Each machine on an image gets a writable overlay root (see
	// image.go), which needs a root server.
	Images *release.Cache
	// RootBytes bounds what a machine on an image writes outside
	// /workspace (a tmpfs, in memory; default DefaultRootBytes).
	RootBytes int64
	// UID and GID are the host ids sandboxes run as when the server is root
	// (default 65534, nobody). A server that is not root uses its own ids.
	UID, GID int
	// AgentPath is the executable bound at /.subako/agent (default:
	// subako-agent next to the running binary if it is of the same build,
	// else the running binary). It is copied into RunDir first.
	AgentPath string
	// Bwrap and Slirp4netns are the programs' paths (default: from PATH).
	Bwrap, Slirp4netns string
	// RunDir is the driver's own folder, where the agent executable is staged
	// for the sandbox uid to reach (default /run/subako for root, else
	// $TMPDIR/subako-<uid>).
	RunDir string
	// CgroupRoot is where cgroups are mounted (default /sys/fs/cgroup).
	CgroupRoot string
	// StartTimeout bounds one Start once its workspace disk is attached
	// (default 15s).
	StartTimeout time.Duration
	// DiskBytes is the size of each sandbox's /workspace: an ext4 image
	// mounted over the folder while the machine runs (0: no limit). It
	// needs a root server; another runs without, and logs so.
	DiskBytes int64
	// TmpBytes bounds each of the tmpfs /tmp and /dev/shm (default 512 MiB);
	// they live in memory, charged to the machine's memory limit.
	TmpBytes int64
	// WorkspaceRoot is the folder of the machines' folders
	// (<WorkspaceRoot>/<id>/workspace): at New, workspace disks a crashed
	// server left there are copied back before anything reads them.
	WorkspaceRoot string
	Logger        *slog.Logger
}

// Driver starts bubblewrap machines. It implements sandbox.Driver.
type Driver struct {
	cfg           Config
	root          bool
	agent         string // the staged copy of cfg.AgentPath
	agentMu       sync.Mutex
	cgroupWarning sync.Once
	skel          skeletons
}

var validID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// New checks the configuration. A missing bwrap is reported by Start, so a
// server without sandboxes configured still starts.
func New(cfg Config) (*Driver, error) {
	if cfg.Releases == nil && cfg.Images == nil {
		cfg.Releases = map[string]string{"2026": "/"}
	}
	if cfg.UID == 0 {
		cfg.UID = 65534
	}
	if cfg.GID == 0 {
		cfg.GID = 65534
	}
	if cfg.UID < 0 || cfg.GID < 0 {
		return nil, fmt.Errorf("local: uid %d / gid %d: must be positive (0 is refused: sandboxes never run as root)", cfg.UID, cfg.GID)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.AgentPath == "" {
		// subako-agent from the same build, else the running binary itself,
		// even if an upgrade replaced the file os.Executable names: host and
		// agent must speak the same protocol.
		var why string
		if cfg.AgentPath, why = defaultAgent(); why != "" {
			cfg.Logger.Warn("sandbox: not using "+AgentName+"; the server's own binary is the agent, and cold starts take longer", "reason", why)
		}
	}
	if cfg.RunDir == "" {
		cfg.RunDir = "/run/subako"
		if os.Geteuid() != 0 {
			cfg.RunDir = filepath.Join(os.TempDir(), fmt.Sprintf("subako-%d", os.Geteuid()))
		}
	}
	if err := prepareRunDir(cfg.RunDir); err != nil {
		return nil, err
	}
	staged, err := stageAgent(cfg.RunDir, cfg.AgentPath)
	if err != nil {
		return nil, err
	}
	pruneStagedAgents(cfg.RunDir, staged)
	pruneSkeletons(cfg.RunDir, func(string) bool { return false })
	if cfg.CgroupRoot == "" {
		cfg.CgroupRoot = "/sys/fs/cgroup"
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 15 * time.Second
	}
	if cfg.TmpBytes == 0 {
		cfg.TmpBytes = 512 << 20
	}
	d := &Driver{cfg: cfg, root: os.Geteuid() == 0, agent: staged}
	// Once here for the helpers the driver runs (mount, mkfs.ext4, cp,
	// slirp4netns), and again before each bwrap.
	if err := closeInheritedFDs(); err != nil {
		cfg.Logger.Warn("sandbox: descriptors the server inherited stay open to its helper programs", "err", err)
	}
	removeStaleCgroups(cfg.CgroupRoot)
	if d.root {
		hintDynMods(cfg.Logger) // cgroup_dynmods.go
	}
	removeStaleOverlays(cfg.RunDir)
	switch {
	case cfg.DiskBytes > 0 && !d.root:
		cfg.Logger.Warn("sandbox: the server is not root, so /workspace has no size limit (--sandbox-disk needs root to mount each sandbox's disk)")
	case cfg.DiskBytes > 0:
		for _, err := range recoverStaleDisks(cfg.WorkspaceRoot) {
			cfg.Logger.Error("sandbox: recover a workspace disk left by a crash", "err", err)
		}
	}
	return d, nil
}

func lookPath(configured, name, pkg string) (string, error) {
	if configured != "" {
		name = configured
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("local: %s is not installed (apt-get install %s): %w", name, pkg, err)
	}
	return p, nil
}

// ids returns the host uid and gid the sandbox runs as.
func (d *Driver) ids() (uid, gid int) {
	if d.root {
		return d.cfg.UID, d.cfg.GID
	}
	return os.Getuid(), os.Getgid()
}

// Start implements sandbox.Driver.
func (d *Driver) Start(ctx context.Context, spec sandbox.Spec) (sandbox.Machine, error) {
	bwrap, err := lookPath(d.cfg.Bwrap, "bwrap", "bubblewrap")
	if err != nil {
		return nil, err
	}
	image, err := d.imageRoot(ctx, spec.Release)
	if err != nil {
		return nil, err
	}
	releaseRoot, err := d.checkSpec(spec, image)
	if err != nil {
		return nil, err
	}
	agent, err := d.stagedAgent()
	if err != nil {
		return nil, err
	}
	uid, gid := d.ids()
	var disk *workspaceDisk
	if d.root {
		if err := chownTree(spec.WorkspaceDir, uid, gid); err != nil {
			return nil, err
		}
		if size := d.diskBytes(spec); size > 0 {
			if disk, err = attachDiskFrom(spec.WorkspaceDir, size, uid, gid, d.cfg.RunDir); err != nil {
				return nil, err
			}
		}
	}
	// The timeout bounds the sandbox's own start, from here: copying the
	// workspace onto its disk takes as long as its files take, and counted
	// in, a workspace grown big would time out at every start from then on.
	ctx, cancel := context.WithTimeout(ctx, d.cfg.StartTimeout)
	defer cancel()
	cg, err := newCgroups(d.cfg.CgroupRoot, spec.ID, spec.Limits)
	if errors.Is(err, errCgroupsUnavailable) {
		d.cgroupWarning.Do(func() {
			d.cfg.Logger.Warn("sandbox: cgroups are not writable; machines run without memory, pids and cpu limits", "root", d.cfg.CgroupRoot, "err", err)
		})
	} else if err != nil {
		return nil, errors.Join(err, disk.detach())
	}
	slots := cg.pidsDir(d.cfg.CgroupRoot)
	if slots != "" {
		if err := makeExecSlots(slots, spec.Limits.Pids, uid, gid); err != nil {
			return nil, errors.Join(err, cg.remove(), disk.detach())
		}
	}
	m, err := d.launch(ctx, bwrap, releaseRoot, agent, spec, cg, disk, slots)
	if err != nil {
		cg.remove()
		return nil, errors.Join(fmt.Errorf("local: start %s: %w", spec.ID, err), disk.detach())
	}
	return m, nil
}

func (d *Driver) checkSpec(spec sandbox.Spec, image string) (string, error) {
	if !validID.MatchString(spec.ID) {
		return "", fmt.Errorf("local: id %q: must be 1-64 of A-Z, a-z, 0-9, _ and -", spec.ID)
	}
	root, ok := d.cfg.Releases[spec.Release]
	if image != "" {
		root, ok = image, true
	}
	if !ok {
		return "", fmt.Errorf("local: release %q is not configured", spec.Release)
	}
	if spec.Network != sandbox.NetworkNone && spec.Network != sandbox.NetworkUnrestricted && spec.Network != sandbox.NetworkAllowlist {
		return "", fmt.Errorf("local: network %q: must be %q or %q", spec.Network, sandbox.NetworkNone, sandbox.NetworkUnrestricted)
	}
	if fi, err := os.Stat(spec.WorkspaceDir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("local: workspace %q is not a folder: %v", spec.WorkspaceDir, err)
	}
	paths := []string{spec.WorkspaceDir, filepath.Join(root, "usr")}
	for name, dir := range spec.Skills {
		if !validSkill.MatchString(name) {
			return "", fmt.Errorf("local: skill name %q: must be 1-64 of a-z, 0-9 and -", name)
		}
		paths = append(paths, filepath.Join(dir, "."))
	}
	if d.root {
		uid, gid := d.ids()
		for _, p := range paths {
			if err := checkReachable(p, uid, gid); err != nil {
				return "", err
			}
		}
	}
	return root, nil
}

var validSkill = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// stagedAgent returns the staged agent, staging it again if the copy was
// removed (RunDir on a tmpfs cleaned by the system, for instance).
func (d *Driver) stagedAgent() (string, error) {
	d.agentMu.Lock()
	defer d.agentMu.Unlock()
	if _, err := os.Stat(d.agent); err == nil {
		return d.agent, nil
	}
	staged, err := stageAgent(d.cfg.RunDir, d.cfg.AgentPath)
	if err != nil {
		return "", err
	}
	d.agent = staged
	return staged, nil
}
