package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/subako/subako/runtime/sandbox/release"
)

// releaseFlags say where release images are cached and how much a machine
// on one may write outside /workspace.
type releaseFlags struct {
	// Cache is the images' folder ("": DATA/releases).
	Cache string
	// RootSize bounds the writable layer of a machine's root (tmpfs).
	RootSize byteSize
}

func bindReleases(fs *flag.FlagSet, r *releaseFlags) {
	fs.StringVar(&r.Cache, "release-cache", "", "folder of the release images built from Debian packages (default DATA/releases; tests and CI share one machine-wide, e.g. /var/tmp/subako-releases)")
	r.RootSize = 2 << 30
	fs.Var(&r.RootSize, "sandbox-root", "what a sandbox on a release image may write outside /workspace (apt, npm -g, pip installs; a tmpfs in memory, gone at suspension), e.g. 2GiB")
}

func (r releaseFlags) validate() error {
	if r.RootSize < 64<<20 {
		return fmt.Errorf("--sandbox-root must be at least 64MiB, not %s", r.RootSize.String())
	}
	return nil
}

// cache is the release cache of a server whose data folder is data. Images'
// files belong to the sandbox uid (65534 for a root server).
func (r releaseFlags) cache(data string) (*release.Cache, error) {
	dir := r.Cache
	if dir == "" {
		dir = filepath.Join(data, "releases")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("--release-cache: %w", err)
	}
	uid, gid := 65534, 65534
	if os.Geteuid() != 0 {
		uid, gid = os.Getuid(), os.Getgid()
	}
	return &release.Cache{Dir: dir, UID: uid, GID: gid}, nil
}

const releaseUsage = `Usage:
  subako release build [--data DIR] [--release-cache DIR] [--uv PATH] [--force] RELEASE
  subako release show  [--data DIR] [--release-cache DIR] RELEASE

build makes RELEASE (2026) from Debian packages with mmdebstrap (as root),
printing its progress, and caches it; a server also builds it on first use.
--uv copies a uv executable into the image (no registry this server reaches
has it); the manifest says whether uv is there. show prints the manifest.
`

// releaseCmd is `subako release build|show`.
func releaseCmd(args []string, stdout io.Writer) error {
	if len(args) == 0 || (args[0] != "build" && args[0] != "show") {
		return fmt.Errorf("release: want build or show\n%s", releaseUsage)
	}
	verb := args[0]
	var c Config
	var uv string
	var force bool
	fs := flag.NewFlagSet("release "+verb, flag.ContinueOnError)
	fs.StringVar(&c.Data, "data", "./data", "the server's data folder (the cache is DATA/releases unless --release-cache)")
	bindReleases(fs, &c.Releases)
	if verb == "build" {
		fs.StringVar(&uv, "uv", "", "a uv executable to copy into the image as /usr/local/bin/uv")
		fs.BoolVar(&force, "force", false, "build again even if the image is built")
	}
	fs.Usage = func() { fmt.Fprint(fs.Output(), releaseUsage); fs.PrintDefaults() }
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 1 && strings.HasPrefix(fs.Arg(1), "-") {
		// Go's flags stop at the first argument that is not one.
		return fmt.Errorf("release %s: flags go before the release (subako release %s [flags] %s): %q came after it", verb, verb, fs.Arg(0), fs.Arg(1))
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("release %s: name one release (known: 2026), not %d", verb, fs.NArg())
	}
	name := fs.Arg(0)
	if !release.Known(name) {
		return fmt.Errorf("release %s: unknown release %q (known: 2026)", verb, name)
	}
	cache, err := c.Releases.cache(c.Data)
	if err != nil {
		return err
	}
	var m *release.Manifest
	if verb == "show" {
		if m, err = cache.Manifest(name); err != nil {
			return err
		}
		if m == nil {
			return fmt.Errorf("release %s is not built in %s: run `subako release build %s`", name, cache.Dir, name)
		}
	} else {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if m, err = cache.Build(ctx, name, release.BuildOptions{UV: uv, Force: force, Progress: stdout}); err != nil {
			return err
		}
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}

// sandboxImages is the release cache sandboxes boot from: release 2026 is
// an image built from Debian packages on first use (or by `subako release
// build`). A server that is not root cannot mount a machine's overlay, so
// its 2026 stays the host's own root, read-only, as it logs.
func sandboxImages(c *Config, data string, err error, log interface{ Warn(string, ...any) }) (*release.Cache, error) {
	if err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		log.Warn("sandbox: the server is not root, so release 2026 is the host's own root (read-only, no installs) instead of the pinned image")
		return nil, nil
	}
	return c.Releases.cache(data)
}

// releaseInfo is what the console shows of a release (the grant form's
// release picker, the Sandboxes tab): its manifest's summary.
func releaseInfo(c *Config) func(string) string {
	if os.Geteuid() != 0 {
		return func(string) string {
			return "the host's own root, read-only (the server is not root: no image)"
		}
	}
	data, err := filepath.Abs(c.Data)
	if err != nil {
		return nil
	}
	cache, err := c.Releases.cache(data)
	if err != nil {
		return nil
	}
	return cache.Info
}
