package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/objstore"
	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/archive"
	"github.com/subako/subako/runtime/sandbox/local"
)

// sandboxLimits bound one machine: enough for a build or a test suite, not
// enough for one session to starve the server.
var sandboxLimits = sandbox.Limits{MemoryBytes: 2 << 30, Pids: 1024, CPUPercent: 100}

// sandboxTick is how often the lifecycle's timers are checked.
const sandboxTick = 5 * time.Second

// startSandboxes runs sandboxes on this machine with bubblewrap: machines in
// DATA/sandboxes, archives in DATA/archives, skills unpacked in
// DATA/sandbox-skills. It returns the function that suspends them all at
// shutdown. A server whose sandboxes cannot start still serves everything
// else: sandbox calls then answer that sandboxes are not available.
func startSandboxes(ctx context.Context, c *Config, rt *runtime.Runtime, log *slog.Logger) (stop func()) {
	stop = func() {}
	data, err := filepath.Abs(c.Data)
	if err == nil {
		err = openDataToSandboxes(data, log)
	}
	var driver *local.Driver
	images, err := sandboxImages(c, data, err, log)
	if err == nil {
		driver, err = local.New(local.Config{Logger: log, DiskBytes: int64(c.SandboxDisk), TmpBytes: int64(c.SandboxTmp),
			WorkspaceRoot: filepath.Join(data, "sandboxes"), Images: images, RootBytes: int64(c.Releases.RootSize)})
	}
	var archives archive.Store
	if err == nil {
		archives, err = openArchives(ctx, &c.ArchiveStore, data, log)
	}
	if s, ok := archives.(*objstore.S3); ok {
		// /readyz lists it, degraded when down (every replica shares it: it
		// must not take them all out of the load balancer); its error goes
		// to the log (it names the endpoint).
		rt.AddReadyCheck(runtime.ReadyCheck{Name: "archive_store", Check: s.Ping, Degrades: true})
	}
	if err == nil {
		err = rt.StartSandboxes(ctx, runtime.SandboxOptions{Driver: driver, Archives: archives,
			Dir: filepath.Join(data, "sandboxes"), SkillsDir: filepath.Join(data, "sandbox-skills"),
			IdleTimeout: c.SandboxIdleTimeout, RetireAfter: c.SandboxRetireAfter, Limits: sandboxLimits,
			MaxRunning: c.MaxSandboxes, MinFreeDisk: int64(c.MinFreeDisk), Ceilings: c.SandboxCeilings.tools()})
	}
	if err != nil {
		log.Error("sandboxes are off: they could not start", "err", err)
		return stop
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		log.Warn("bubblewrap is not installed: sandbox calls will fail until it is (apt-get install -y bubblewrap slirp4netns)")
	}
	go func() {
		t := time.NewTicker(sandboxTick)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := rt.SandboxTick(ctx); err != nil {
					log.Error("sandbox lifecycle", "err", err)
				}
			}
		}
	}()
	log.Info("sandboxes ready", "idle_timeout", c.SandboxIdleTimeout, "retire_after", c.SandboxRetireAfter, "max_sandboxes", c.MaxSandboxes, "sandbox_disk", c.SandboxDisk.String())
	return func() {
		// Archiving every running workspace can take a while; a kill after
		// this leaves them to Recover at the next start, nothing lost.
		ctx, cancel := context.WithTimeout(context.Background(), c.Cluster.DrainTimeout)
		defer cancel()
		if err := rt.StopSandboxes(ctx); err != nil {
			log.Error("suspend sandboxes at shutdown", "err", err)
		}
	}
}

// openDataToSandboxes lets the sandbox uid pass through the data folder to
// its machines' folders (bwrap resolves bind sources as that uid), and keeps
// the database files, which then become reachable by name, to the server.
// Only a root server runs sandboxes as another uid; otherwise nothing changes.
func openDataToSandboxes(data string, log *slog.Logger) error {
	if os.Geteuid() != 0 {
		return nil
	}
	fi, err := os.Stat(data)
	if err != nil {
		return fmt.Errorf("data folder: %w", err)
	}
	if err := os.Chmod(data, fi.Mode().Perm()|0o011); err != nil {
		return fmt.Errorf("data folder: %w", err)
	}
	for _, name := range []string{"subako.db", "subako.db-wal", "subako.db-shm", "vault.key"} {
		p := filepath.Join(data, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, 0o600); err != nil {
				return fmt.Errorf("data folder: %w", err)
			}
		}
	}
	for dir := filepath.Dir(data); ; dir = filepath.Dir(dir) {
		if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o001 == 0 {
			log.Warn("sandboxes cannot reach the data folder: a parent folder is closed to other users; chmod o+x it or use --data elsewhere",
				"folder", dir, "mode", fmt.Sprintf("%04o", fi.Mode().Perm()))
		}
		if dir == "/" {
			return nil
		}
	}
}
