package fn

import (
	"golang.org/x/sys/unix"

	"github.com/tetratelabs/wazero/experimental"
)

// wasmPage is the WebAssembly page size.
const wasmPage = 64 << 10

// limitedMemory backs one instance's linear memory and refuses to grow it past
// limit. The runtime's WithMemoryLimitPages is fixed per compiled module, but a
// call's limit depends on its manifest and request, so the limit is applied
// here, per instance, through wazero's allocator hook.
//
// The memory is one mapping of the whole limit, reserved but not committed:
// the kernel gives it pages only as the guest touches them, growing never
// copies (a copy would hold the old and the new array at once, twice what
// the capacity gate reserved), and Free hands the pages back at once rather
// than when Go's collector gets to them. So what the gate reserves is what
// the machine can be asked for.
type limitedMemory struct {
	limit   uint64
	mapping []byte // the whole reservation; buf is its first len(buf) bytes
	buf     []byte
	refused bool // a grow past the limit was refused: the call failed on memory
	// onFree sees the memory as the instance is closed; tests use it to prove a
	// secret never entered guest memory.
	onFree func([]byte)
}

func newLimitedMemory(limitBytes uint64, onFree func([]byte)) *limitedMemory {
	return &limitedMemory{limit: limitBytes, onFree: onFree}
}

// Allocate implements experimental.MemoryAllocator. One limitedMemory serves
// exactly one instance, which has at most one memory.
func (m *limitedMemory) Allocate(_, _ uint64) experimental.LinearMemory {
	if m.limit == 0 {
		return m
	}
	mapping, err := unix.Mmap(-1, 0, int(m.limit), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		// No address space for it: every grow is refused, so the call fails
		// on memory, as it would past its limit.
		m.limit = 0
		return m
	}
	m.mapping, m.buf = mapping, mapping[:0]
	return m
}

// Reallocate implements experimental.LinearMemory: the mapping already spans
// the limit, so growing only lengthens the slice.
func (m *limitedMemory) Reallocate(size uint64) []byte {
	if size > m.limit {
		m.refused = true
		return nil
	}
	m.buf = m.mapping[:size]
	return m.buf
}

// Free implements experimental.LinearMemory. The pages go back to the
// kernel: a later call never sees an earlier call's bytes.
func (m *limitedMemory) Free() {
	if m.onFree != nil {
		m.onFree(m.buf)
	}
	if m.mapping != nil {
		_ = unix.Munmap(m.mapping)
	}
	m.mapping, m.buf = nil, nil
}
