package local

import (
	"debug/buildinfo"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
)

// AgentName is the small agent binary the driver looks for next to the
// server's executable (cmd/subako-agent, built by `make build`).
const AgentName = "subako-agent"

// defaultAgent is the agent a driver uses when Config.AgentPath is empty:
// subako-agent next to the running executable when it comes from the same
// build, else the running executable itself (its agent mode starts slower:
// its packages' init runs at every cold start).
func defaultAgent() (path, why string) {
	exe, err := os.Executable()
	if err != nil {
		return "/proc/self/exe", ""
	}
	candidate := filepath.Join(filepath.Dir(exe), AgentName)
	fi, err := os.Stat(candidate)
	if err != nil {
		return "/proc/self/exe", ""
	}
	// Built after the server (make build builds it second): a server
	// rebuilt on its own does not use an agent left from before.
	if own, err := os.Stat(exe); err != nil || fi.ModTime().Before(own.ModTime()) {
		return "/proc/self/exe", candidate + " is older than " + exe + ": rebuild both with make build"
	}
	if err := sameBuild(candidate); err != nil {
		return "/proc/self/exe", err.Error()
	}
	return candidate, ""
}

// sameBuild reports whether the binary at p was built from the same source
// as the running one (module version, VCS revision and state, Go version):
// host and agent must speak the same protocol.
func sameBuild(p string) error {
	own, ok := debug.ReadBuildInfo()
	if !ok {
		return fmt.Errorf("%s: the server has no build information to compare", p)
	}
	other, err := buildinfo.ReadFile(p)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	key := func(bi *debug.BuildInfo) string {
		k := bi.GoVersion + " " + bi.Main.Path + " " + bi.Main.Version + " " + bi.Main.Sum
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision", "vcs.time", "vcs.modified":
				k += " " + s.Key + "=" + s.Value
			}
		}
		return k
	}
	if a, b := key(own), key(other); a != b {
		return fmt.Errorf("%s is from another build (%s; the server is %s): rebuild both with make build", p, b, a)
	}
	return nil
}
