package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/sandbox/release"
)

// TestReleaseCommand: `subako release build 2026` reports its progress and
// prints the manifest (the machine-wide cache: built at most once per
// machine), `release show` prints the same manifest, and bad input is
// refused naming the flag or the release.
func TestReleaseCommand(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("building a release image needs root")
	}
	cache := release.SharedCacheDir()
	var out bytes.Buffer
	if err := releaseCmd([]string{"build", "--release-cache", cache, "2026"}, &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if !strings.HasPrefix(text, "release 2026: ") {
		t.Errorf("no progress line: %.300q", text)
	}
	var built release.Manifest
	if err := json.Unmarshal([]byte(text[strings.Index(text, "{"):]), &built); err != nil || built.Packages["python3"] == "" || len(built.Digest) != 64 {
		t.Fatalf("build printed no manifest with python3 and a digest: %v %.300q", err, text)
	}
	out.Reset()
	if err := releaseCmd([]string{"show", "--release-cache", cache, "2026"}, &out); err != nil {
		t.Fatal(err)
	}
	var shown release.Manifest
	if err := json.Unmarshal(out.Bytes(), &shown); err != nil || shown.Digest != built.Digest || shown.UV != built.UV {
		t.Errorf("show: %v %+v, want the built manifest", err, shown)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"build", "--release-cache", cache, "2027"}, `unknown release "2027"`},
		{[]string{"build", "--release-cache", cache, "--uv", "/nonexistent/uv", "2026"}, "--uv"},
		{[]string{"show", "--release-cache", t.TempDir(), "2026"}, "subako release build 2026"},
		{[]string{"remove", "2026"}, "want build or show"},
	} {
		if err := releaseCmd(tc.args, &out); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("release %v: %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
	if err := (releaseFlags{RootSize: 1 << 20}).validate(); err == nil || !strings.Contains(err.Error(), "--sandbox-root") {
		t.Errorf("--sandbox-root 1MiB: %v", err)
	}
}
