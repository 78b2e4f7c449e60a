package codemode

import (
	"golang.org/x/sys/unix"

	"github.com/tetratelabs/wazero/experimental"
)

// limitedMemory backs one instance's linear memory and refuses to grow it
// past limit: the program's bound (its MemoryBytes plus the guest's base).
// The runtime's WithMemoryLimitPages is one ceiling for every instance; the
// program's own limit is applied here through wazero's allocator hook.
//
// The memory is one mapping of the whole limit, reserved but not committed:
// the kernel gives it pages only as the guest touches them, growing never
// copies, and Free hands the pages back at once rather than when Go's
// collector gets to them.
type limitedMemory struct {
	limit   uint64
	mapping []byte
	buf     []byte
	refused bool   // a grow past the limit was refused
	peak    uint64 // the largest size the instance grew to
}

// Allocate implements experimental.MemoryAllocator (one instance, one memory).
func (m *limitedMemory) Allocate(_, _ uint64) experimental.LinearMemory {
	mapping, err := unix.Mmap(-1, 0, int(m.limit), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		// No address space for it: every grow is refused, so the program
		// fails on memory.
		m.limit = 0
		return m
	}
	m.mapping, m.buf = mapping, mapping[:0]
	return m
}

// Reallocate implements experimental.LinearMemory.
func (m *limitedMemory) Reallocate(size uint64) []byte {
	if size > m.limit {
		m.refused = true
		return nil
	}
	m.buf = m.mapping[:size]
	m.peak = max(m.peak, size)
	return m.buf
}

// Free implements experimental.LinearMemory: the pages go back to the kernel.
func (m *limitedMemory) Free() {
	if m.mapping != nil {
		_ = unix.Munmap(m.mapping)
	}
	m.mapping, m.buf = nil, nil
}
