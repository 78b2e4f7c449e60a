// Package release builds and caches the platform's release images: root
// file systems made from pinned Debian packages with mmdebstrap, one folder
// per release in a cache folder, each described by a manifest (the package
// versions, a digest of the package set, whether uv is present).
//
// A sandbox never writes an image: the local driver mounts it as the lowest
// layer of an overlay whose upper layer is a sized tmpfs of the machine's
// own, so what a sandbox installs is gone when the machine stops.
package release

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Definition is what a release is built from.
type Definition struct {
	Name string
	// Suite is the Debian release the packages come from.
	Suite string
	// Packages are installed on top of Debian's required set, with what
	// they depend on.
	Packages []string
	// Mirror is the Debian mirror ("" for mmdebstrap's default, which
	// follows the host's apt sources).
	Mirror string
}

// Definitions are the releases this build of subako knows how to make.
var Definitions = map[string]Definition{
	"2026": {Name: "2026", Suite: "bookworm", Packages: []string{
		"python3", "python3-venv", "python3-pip", "nodejs", "npm", "git", "curl", "jq",
		"build-essential", "ca-certificates",
	}},
}

// Tools are the programs the manifest shows first (name → package).
var Tools = [][2]string{{"python3", "python3"}, {"node", "nodejs"}, {"npm", "npm"}, {"git", "git"}, {"curl", "curl"}, {"jq", "jq"}, {"gcc", "gcc"}}

// Manifest describes one built image. It is written next to the image's
// root as manifest.json.
type Manifest struct {
	// Format is the image layout's version (imageFormat when built by
	// this subako); an image of another is built again on first use.
	Format  int    `json:"format"`
	Release string `json:"release"`
	Suite   string `json:"suite"`
	// Packages maps every installed Debian package to its version.
	Packages map[string]string `json:"packages"`
	// Digest is the SHA-256 of the sorted "name=version" lines and of the
	// uv binary, if any: two images with the same digest hold the same
	// software.
	Digest string `json:"digest"`
	// UV says whether /usr/local/bin/uv is in the image (it is only when
	// the build was given one: no registry this server reaches has it).
	UV        bool      `json:"uv"`
	UVVersion string    `json:"uv_version,omitempty"`
	Bytes     int64     `json:"bytes"`
	BuiltAt   time.Time `json:"built_at"`
}

// imageFormat changes when configure or the layout does.
const imageFormat = 1

// Version returns the installed version of a package, or "".
func (m *Manifest) Version(pkg string) string {
	if m == nil {
		return ""
	}
	return m.Packages[pkg]
}

// Summary is one line for a page: the tools' versions, uv, the digest.
func (m *Manifest) Summary() string {
	if m == nil {
		return "not built yet: built on first use, or by `subako release build`"
	}
	var parts []string
	for _, t := range Tools {
		if v := m.Packages[t[1]]; v != "" {
			parts = append(parts, t[0]+" "+v)
		}
	}
	uv := "no uv"
	if m.UV {
		uv = "uv " + m.UVVersion
	}
	parts = append(parts, uv, fmt.Sprintf("%d packages", len(m.Packages)), "digest "+ShortDigest(m.Digest))
	return strings.Join(parts, ", ")
}

// ShortDigest is the first 12 hex digits of a digest.
func ShortDigest(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// Cache holds built images under Dir: Dir/<release>/root and
// Dir/<release>/manifest.json, swapped in whole when a build finishes.
type Cache struct {
	Dir string
	// UID and GID own the image's files: the host ids sandboxes run as,
	// which are root inside their user namespace, so root inside owns
	// the image's files as root owns a Debian system's.
	UID, GID int
	// Timeout bounds one build (default 20 minutes).
	Timeout time.Duration

	mu       sync.Mutex
	building map[string]*sync.Mutex
	flights  map[string]*flight // first-use builds running (buildOnce)
}

// ErrUnknown is returned for a release no Definition names.
var ErrUnknown = errors.New("release: unknown release")

// Known reports whether name is a release this cache can build.
func Known(name string) bool { _, ok := Definitions[name]; return ok }

func (c *Cache) dir(name string) string { return filepath.Join(c.Dir, name) }

// Manifest returns the manifest of a built image, or nil if it is not
// built.
func (c *Cache) Manifest(name string) (*Manifest, error) {
	if !Known(name) {
		return nil, fmt.Errorf("%w %q", ErrUnknown, name)
	}
	b, err := os.ReadFile(filepath.Join(c.dir(name), "manifest.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("release %s: manifest: %w", name, err)
	}
	return &m, nil
}

// Root returns the image's root folder, building it first if it is not
// built (progress lines go to progress, which may be nil).
func (c *Cache) Root(ctx context.Context, name string, progress io.Writer) (string, error) {
	m, err := c.Manifest(name)
	if err != nil {
		return "", err
	}
	if m != nil && m.Format == imageFormat {
		return filepath.Join(c.dir(name), "root"), c.checkOwner(name)
	}
	if err := c.buildOnce(ctx, name, progress); err != nil {
		return "", err
	}
	return filepath.Join(c.dir(name), "root"), nil
}

// checkOwner makes sure the image belongs to the sandbox ids (a cache
// shared by servers that run sandboxes as other ids is re-owned once).
func (c *Cache) checkOwner(name string) error {
	root := filepath.Join(c.dir(name), "root")
	var st unix.Stat_t
	if err := unix.Lstat(root, &st); err != nil {
		return fmt.Errorf("release %s: %w", name, err)
	}
	if int(st.Uid) == c.UID && int(st.Gid) == c.GID {
		return nil
	}
	unlock, err := c.lock(name)
	if err != nil {
		return err
	}
	defer unlock()
	return chownTree(root, c.UID, c.GID)
}

// BuildOptions are the options of one build.
type BuildOptions struct {
	// UV is a uv executable copied to /usr/local/bin/uv ("": none).
	UV string
	// Force rebuilds an image that is already built.
	Force    bool
	Progress io.Writer
}

// lock serializes builds of one release in this process and, through a
// lock file, across processes (a test suite's packages share one cache).
func (c *Cache) lock(name string) (func(), error) {
	c.mu.Lock()
	if c.building == nil {
		c.building = map[string]*sync.Mutex{}
	}
	mu := c.building[name]
	if mu == nil {
		mu = &sync.Mutex{}
		c.building[name] = mu
	}
	c.mu.Unlock()
	mu.Lock()
	if err := os.MkdirAll(c.Dir, 0o711); err != nil {
		mu.Unlock()
		return nil, fmt.Errorf("release cache %s: %w", c.Dir, err)
	}
	f, err := os.OpenFile(filepath.Join(c.Dir, "."+name+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		mu.Unlock()
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		mu.Unlock()
		return nil, err
	}
	return func() { f.Close(); mu.Unlock() }, nil
}

var uvVersion = regexp.MustCompile(`^uv [0-9][0-9A-Za-z.+-]*`)

// Build makes the image of a release with mmdebstrap and swaps it into the
// cache. It needs root (mmdebstrap's root mode; the files are then given
// to the sandbox ids). A build already done by another process while this
// one waited for the lock is kept, unless Force.
func (c *Cache) Build(ctx context.Context, name string, o BuildOptions) (*Manifest, error) {
	def, ok := Definitions[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknown, name, strings.Join(slices.Sorted(maps.Keys(Definitions)), ", "))
	}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	if o.UV != "" {
		if err := checkUV(o.UV); err != nil {
			return nil, err
		}
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("release %s: building an image needs root (mmdebstrap installs packages as root); run `subako release build %s` as root once", name, name)
	}
	mmdebstrap, err := exec.LookPath("mmdebstrap")
	if err != nil {
		return nil, fmt.Errorf("release %s: mmdebstrap is not installed (apt-get install -y mmdebstrap): %w", name, err)
	}
	unlock, err := c.lock(name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c.removeUnfinished(name, progress)
	if m, err := c.Manifest(name); err == nil && m != nil && m.Format == imageFormat && !o.Force {
		if o.UV != "" {
			return c.addUV(name, m, o.UV, progress)
		}
		fmt.Fprintf(progress, "release %s: already built (digest %s)\n", name, ShortDigest(m.Digest))
		return m, nil
	}
	timeout := c.Timeout
	if timeout == 0 {
		timeout = 20 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	tmp, err := os.MkdirTemp(c.Dir, "."+name+"-build-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if tmp != "" {
			if err := removeBuild(tmp); err != nil {
				fmt.Fprintf(progress, "release %s: %v\n", name, err)
			}
		}
	}()
	root := filepath.Join(tmp, "root")
	fmt.Fprintf(progress, "release %s: installing %d packages from Debian %s with mmdebstrap\n", name, len(def.Packages), def.Suite)
	args := []string{"--variant=apt", "--mode=root", "--include=" + strings.Join(def.Packages, ","), def.Suite, root}
	if def.Mirror != "" {
		args = append(args, def.Mirror)
	}
	cmd := exec.CommandContext(ctx, mmdebstrap, args...)
	pw := &lineWriter{w: progress, prefix: "release " + name + ": "}
	cmd.Stdout, cmd.Stderr = pw, pw
	// Stopped, mmdebstrap gets SIGTERM, on which it unmounts what it
	// mounted in the root; SIGKILL only if it has not ended 10 s later.
	cmd.Cancel = func() error { return cmd.Process.Signal(unix.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("release %s: mmdebstrap: %w (%s)", name, err, pw.last())
	}
	fmt.Fprintf(progress, "release %s: configuring for sandboxes\n", name)
	if err := configure(root); err != nil {
		return nil, fmt.Errorf("release %s: %w", name, err)
	}
	m := &Manifest{Format: imageFormat, Release: name, Suite: def.Suite, BuiltAt: time.Now().UTC()}
	if o.UV != "" {
		if err := copyFile(o.UV, filepath.Join(root, "usr/local/bin/uv"), 0o755); err != nil {
			return nil, fmt.Errorf("release %s: copy uv: %w", name, err)
		}
		m.UV = true
		m.UVVersion = uvVersionOf(o.UV)
	}
	if m.Packages, err = packages(root); err != nil {
		return nil, fmt.Errorf("release %s: %w", name, err)
	}
	for _, p := range def.Packages {
		if m.Packages[p] == "" {
			return nil, fmt.Errorf("release %s: package %s is not installed in the image", name, p)
		}
	}
	if m.Digest, err = digest(m.Packages, filepath.Join(root, "usr/local/bin/uv")); err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "release %s: giving the files to uid %d, gid %d (root inside a sandbox)\n", name, c.UID, c.GID)
	if m.Bytes, err = chownTreeSize(root, c.UID, c.GID); err != nil {
		return nil, fmt.Errorf("release %s: %w", name, err)
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(tmp, "manifest.json"), append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	if err := c.swap(name, tmp); err != nil {
		return nil, err
	}
	tmp = ""
	fmt.Fprintf(progress, "release %s: built in %s: %s\n", name, time.Since(start).Round(time.Second), m.Summary())
	return m, nil
}

// swap puts a finished build (a folder with root and manifest.json) in
// place. The image it replaces moves aside, not away: machines running on
// it keep it as their overlay's lower layer, so it is removed only by a
// later build, once a day old.
func (c *Cache) swap(name, built string) error {
	dst := c.dir(name)
	olds, _ := filepath.Glob(dst + ".old-*")
	for _, old := range olds {
		if fi, err := os.Stat(old); err == nil && time.Since(fi.ModTime()) > 24*time.Hour {
			os.RemoveAll(old)
		}
	}
	if _, err := os.Lstat(dst); err == nil {
		old := dst + ".old-" + time.Now().UTC().Format("20060102T150405.000000000")
		if err := os.Rename(dst, old); err != nil {
			return err
		}
		now := time.Now()
		os.Chtimes(old, now, now)
	}
	return os.Rename(built, dst)
}

// addUV makes a new image from the built one with a uv executable in it,
// without building again: the files are hard links to the built image's
// (an image is never written; a sandbox writes its own overlay), uv is a
// file of its own, the manifest says uv is there and has a new digest.
func (c *Cache) addUV(name string, m *Manifest, uv string, progress io.Writer) (*Manifest, error) {
	tmp, err := os.MkdirTemp(c.Dir, "."+name+"-uv-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
	}()
	fmt.Fprintf(progress, "release %s: adding uv to the built image (digest %s)\n", name, ShortDigest(m.Digest))
	root := filepath.Join(tmp, "root")
	if out, err := exec.Command("cp", "-al", filepath.Join(c.dir(name), "root"), root).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("release %s: link the image: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	dst := filepath.Join(root, "usr/local/bin/uv")
	os.Remove(dst) // a link to the old image's uv: never written through
	if err := copyFile(uv, dst, 0o755); err != nil {
		return nil, fmt.Errorf("release %s: copy uv: %w", name, err)
	}
	if err := os.Lchown(dst, c.UID, c.GID); err != nil {
		return nil, err
	}
	n := *m
	n.UV, n.UVVersion, n.BuiltAt = true, uvVersionOf(uv), time.Now().UTC()
	if n.Digest, err = digest(n.Packages, dst); err != nil {
		return nil, err
	}
	b, _ := json.MarshalIndent(&n, "", "  ")
	if err := os.WriteFile(filepath.Join(tmp, "manifest.json"), append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	if err := c.swap(name, tmp); err != nil {
		return nil, err
	}
	tmp = ""
	fmt.Fprintf(progress, "release %s: %s\n", name, n.Summary())
	return &n, nil
}

// configure makes the image work as root inside a user namespace that
// maps no other user: apt downloads as root (not _apt), pip may install
// into the image (it is a throwaway layer: PEP 668's guard is for hosts).
func configure(root string) error {
	files := map[string]string{
		"etc/apt/apt.conf.d/90subako-sandbox": "// Sandboxes map one user, root: apt cannot switch to _apt.\nAPT::Sandbox::User \"root\";\n",
		"etc/pip.conf":                        "[global]\n# What a sandbox installs outside /workspace is gone after a suspension.\nbreak-system-packages = true\nroot-user-action = ignore\n",
	}
	for p, content := range files {
		if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// packages lists the image's installed packages from dpkg's status file.
func packages(root string) (map[string]string, error) {
	f, err := os.Open(filepath.Join(root, "var/lib/dpkg/status"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	var pkg, ver, status string
	flush := func() {
		if pkg != "" && strings.HasSuffix(status, " installed") {
			out[pkg] = ver
		}
		pkg, ver, status = "", "", ""
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			flush()
		case strings.HasPrefix(line, "Package: "):
			pkg = strings.TrimPrefix(line, "Package: ")
		case strings.HasPrefix(line, "Version: "):
			ver = strings.TrimPrefix(line, "Version: ")
		case strings.HasPrefix(line, "Status: "):
			status = strings.TrimPrefix(line, "Status: ")
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no packages in var/lib/dpkg/status")
	}
	return out, nil
}

func digest(pkgs map[string]string, uv string) (string, error) {
	h := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(pkgs)) {
		fmt.Fprintf(h, "%s=%s\n", name, pkgs[name])
	}
	if f, err := os.Open(uv); err == nil {
		defer f.Close()
		io.WriteString(h, "uv\n")
		if _, err := io.Copy(h, f); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func checkUV(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("--uv: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("--uv %s: must be an executable file", p)
	}
	if fi.Size() > 256<<20 {
		return fmt.Errorf("--uv %s: is %d bytes, the limit is 256 MiB", p, fi.Size())
	}
	return nil
}

// uvVersionOf asks the binary for its version ("" if it does not say).
func uvVersionOf(p string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, p, "--version").Output()
	if err != nil {
		return ""
	}
	if v := uvVersion.FindString(strings.TrimSpace(string(out))); v != "" {
		return strings.TrimPrefix(v, "uv ")
	}
	return ""
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func chownTree(root string, uid, gid int) error {
	_, err := chownTreeSize(root, uid, gid)
	return err
}

// chownTreeSize gives every file of the tree to uid and gid (links
// themselves, not what they point to) and returns the bytes of its files.
// Set-id bits are dropped: nothing in a sandbox gains privileges.
func chownTreeSize(root string, uid, gid int) (int64, error) {
	var total int64
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, uid, gid); err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			total += fi.Size()
			if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
				return os.Chmod(p, fi.Mode().Perm())
			}
		}
		return nil
	})
	return total, err
}

// lineWriter passes mmdebstrap's lines on with a prefix and keeps the last
// one for an error message.
type lineWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
	tail   string
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := strings.IndexByte(string(l.buf), '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSpace(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
		if line != "" {
			l.tail = line
			fmt.Fprintf(l.w, "%s%s\n", l.prefix, line)
		}
	}
	if len(l.buf) > 64<<10 {
		l.buf = l.buf[:0]
	}
	return len(p), nil
}

func (l *lineWriter) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tail == "" {
		return "no output"
	}
	return l.tail
}

// SharedCacheEnv names a cache folder shared by everything on the machine
// that builds images: tests and CI set it (or use the default) so a suite
// builds each release at most once per machine, not once per test.
const SharedCacheEnv = "SUBAKO_RELEASE_CACHE"

// SharedCacheDir is $SUBAKO_RELEASE_CACHE, or /var/tmp/subako-releases.
func SharedCacheDir() string {
	if d := os.Getenv(SharedCacheEnv); d != "" {
		return d
	}
	return "/var/tmp/subako-releases"
}

// Info is what the console shows of a release: its manifest's summary,
// that it is not built yet, or "" for a release this cache does not make.
func (c *Cache) Info(name string) string {
	if !Known(name) {
		return ""
	}
	m, err := c.Manifest(name)
	if err != nil {
		return "image manifest unreadable"
	}
	return m.Summary()
}
