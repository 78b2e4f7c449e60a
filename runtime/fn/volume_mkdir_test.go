package fn

import (
	"fmt"
	"testing"
)

// A WebAssembly call may make 100 more folders than files (MaxNewFiles): a
// loop of mkdir must not fill the host disk's inodes until the deadline.
func TestVolumeFSBoundsFoldersMade(t *testing.T) {
	v := newVolumeFS(VolumeMount{Dir: t.TempDir(), Write: true, MaxFileBytes: 1 << 20, MaxNewBytes: 1 << 20, MaxNewFiles: 5})
	for i := 0; i < 5+maxVolumeExtraDirs; i++ {
		if errno := v.Mkdir(fmt.Sprintf("d%d", i), 0o755); errno != 0 {
			t.Fatalf("mkdir %d: %v", i, errno)
		}
	}
	if errno := v.Mkdir("one-more", 0o755); errno != errVolumeFull {
		t.Fatalf("the 106th folder with room for 5 files: %v, want %v", errno, errVolumeFull)
	}
}
