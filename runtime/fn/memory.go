package fn

import (
	"github.com/tetratelabs/wazero/experimental"
)

// wasmPage is the WebAssembly page size.
const wasmPage = 64 << 10

// limitedMemory backs one instance's linear memory and refuses to grow it past
// limit. The runtime's WithMemoryLimitPages is fixed per compiled module, but a
// call's limit depends on its manifest and request, so the limit is applied
// here, per instance, through wazero's allocator hook.
type limitedMemory struct {
	limit   uint64
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
func (m *limitedMemory) Allocate(capacity, _ uint64) experimental.LinearMemory {
	m.buf = make([]byte, 0, min(capacity, m.limit))
	return m
}

// Reallocate implements experimental.LinearMemory. Growth doubles the backing
// array, like append, so a Go guest growing its heap in steps copies rarely.
func (m *limitedMemory) Reallocate(size uint64) []byte {
	if size > m.limit {
		m.refused = true
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	next := make([]byte, size, min(max(size, 2*uint64(cap(m.buf))), m.limit))
	copy(next, m.buf)
	m.buf = next
	return m.buf
}

// Free implements experimental.LinearMemory. The buffer is not reused: a
// later call must never see an earlier call's bytes.
func (m *limitedMemory) Free() {
	if m.onFree != nil {
		m.onFree(m.buf)
	}
	m.buf = nil
}
