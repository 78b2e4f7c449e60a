package local

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/subako/subako/runtime/sandbox"
)

// Inside the sandbox everyone sees the same user, whatever host uid runs it.
const (
	insideUID = "1000"
	insideGID = "1000"
	agentPath = "/.subako/agent"
	hostname  = "sandbox"
)

// releaseTop are the root entries a release provides besides usr.
var releaseTop = []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"}

// releaseEtc are public, secret-free files of the release's own etc that
// programs expect: CA certificates, the dynamic linker's cache, port and
// protocol names, MIME types.
var releaseEtc = []string{"ssl/certs", "ld.so.cache", "services", "protocols", "mime.types"}

// fdTable hands files to bwrap. Sources are opened by the server, so bwrap
// (running as the sandbox uid) never needs to reach them by path: the data
// folder may sit under a directory only root can enter.
type fdTable struct{ files []*os.File }

func (t *fdTable) add(f *os.File) string {
	t.files = append(t.files, f)
	return strconv.Itoa(2 + len(t.files))
}

func (t *fdTable) open(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	return t.add(f), nil
}

// blob returns an fd that reads content from its start, of any size (a
// pipe would block past its buffer), for --args.
func (t *fdTable) blob(name, content string) (string, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return "", fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return "", err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return "", err
	}
	return t.add(f), nil
}

func (t *fdTable) close() {
	for _, f := range t.files {
		f.Close()
	}
}

// bwrapArgs builds the command line for one machine; the caller adds
// --info-fd, --block-fd and the command. The root is the skeleton, bound
// read-only; agentMounts go on its mount points under /.subako.
func bwrapArgs(fds *fdTable, skel *skeleton, releaseRoot string, spec sandbox.Spec, tmpBytes int64, agentMounts ...string) ([]string, error) {
	args := []string{
		"--unshare-all", "--unshare-user", "--disable-userns",
		"--die-with-parent", "--new-session",
		// Capabilities inside the sandbox's own user namespace only: the
		// agent makes a pid namespace per exec (so an exec's processes end
		// with it) and drops every capability for what it starts.
		"--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP",
		"--uid", insideUID, "--gid", insideGID, "--hostname", hostname,
		"--clearenv",
		"--setenv", "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"--setenv", "HOME", "/workspace", "--setenv", "USER", "sandbox", "--setenv", "LOGNAME", "sandbox",
		"--setenv", "SHELL", "/bin/sh", "--setenv", "LANG", "C.UTF-8", "--setenv", "TERM", "dumb",
		"--setenv", sandbox.AgentEnv, "1",
	}
	rootFD, err := fds.open(skel.dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox root: %w", err)
	}
	usr, err := fds.open(filepath.Join(releaseRoot, "usr"))
	if err != nil {
		return nil, fmt.Errorf("release root %s: %w", releaseRoot, err)
	}
	args = append(args, "--ro-bind-fd", rootFD, "/", "--ro-bind-fd", usr, "/usr")
	for _, name := range skel.dirs {
		fd, err := fds.open(filepath.Join(releaseRoot, name))
		if err != nil {
			return nil, err
		}
		args = append(args, "--ro-bind-fd", fd, "/"+name)
	}
	// Sized tmpfs: what a sandbox writes there is memory, bounded twice
	// (this size, and the machine's memory limit it is charged to).
	size := strconv.FormatInt(tmpBytes, 10)
	args = append(args, "--proc", "/proc", "--dev", "/dev", "--size", size, "--tmpfs", "/dev/shm", "--size", size, "--tmpfs", "/tmp")
	mounts, err := mountArgs(fds, spec)
	if err != nil {
		return nil, err
	}
	args = append(args, mounts...)
	args = append(args, agentMounts...)
	egress, err := egressArgs(fds, spec)
	if err != nil {
		return nil, err
	}
	args = append(args, egress...)
	// Everything but /workspace, /tmp and /dev/shm is read-only: the root
	// and the release are bound so, /dev is remounted.
	return append(args, "--remount-ro", "/dev", "--chdir", "/workspace"), nil
}

func mountArgs(fds *fdTable, spec sandbox.Spec) ([]string, error) {
	ws, err := fds.open(spec.WorkspaceDir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	args := []string{"--bind-fd", ws, "/workspace"}
	if spec.VolumeDir != "" {
		vol, err := volumeBind(fds, spec)
		if err != nil {
			return nil, err
		}
		args = append(args, vol...)
	}
	if len(spec.Skills) == 0 {
		return args, nil
	}
	// The skills' mount points are made in a small tmpfs over the
	// skeleton's empty /skills, read-only once they are bound.
	names := make([]string, 0, len(spec.Skills))
	for name := range spec.Skills {
		names = append(names, name)
	}
	slices.Sort(names)
	args = append(args, "--size", "65536", "--tmpfs", "/skills")
	for _, name := range names {
		fd, err := fds.open(spec.Skills[name])
		if err != nil {
			return nil, fmt.Errorf("skill %s: %w", name, err)
		}
		args = append(args, "--ro-bind-fd", fd, "/skills/"+name)
	}
	return append(args, "--remount-ro", "/skills"), nil
}

// etcFiles is the generated /etc: one user, no secrets.
func etcFiles(network string) map[string]string {
	resolv := "# No internet: this sandbox has no network but its own loopback.\n"
	if network == sandbox.NetworkUnrestricted {
		resolv = "nameserver 10.0.2.3\n" // slirp4netns's built-in DNS forwarder
	}
	if network == sandbox.NetworkAllowlist {
		resolv = "nameserver 127.0.0.1\n" // the agent, answering only allowed names (agent_egress.go)
	}
	return map[string]string{
		"passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\n" +
			"sandbox:x:" + insideUID + ":" + insideGID + ":sandbox:/workspace:/bin/sh\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"group":         "root:x:0:\nsandbox:x:" + insideGID + ":\nnogroup:x:65534:\n",
		"hosts":         "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t" + hostname + "\n",
		"hostname":      hostname + "\n",
		"resolv.conf":   resolv,
		"nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n",
	}
}

func inRelease(p string) bool {
	for _, top := range append([]string{"usr"}, releaseTop...) {
		if strings.HasPrefix(p, "/"+top+"/") {
			return true
		}
	}
	return false
}
