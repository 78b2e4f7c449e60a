package main

import (
	"io"
	"strings"
	"testing"
)

// `subako release show 2026 --release-cache DIR` (a flag after the release)
// said "name one release", though one was named; it now says flags go first.
func TestReleaseCommandSaysFlagsGoBeforeTheRelease(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"show", "2026", "--release-cache", "/x"}, `flags go before the release (subako release show [flags] 2026): "--release-cache" came after it`},
		{[]string{"build", "2026", "--force"}, `"--force" came after it`},
		{[]string{"show"}, "name one release (known: 2026), not 0"},
		{[]string{"show", "2026", "2027"}, "name one release (known: 2026), not 2"},
	} {
		if err := releaseCmd(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("release %v: %v, want %s", tc.args, err, tc.want)
		}
	}
}
