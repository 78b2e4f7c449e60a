package fn

// A tiny WebAssembly encoder, enough to write the malformed packages the
// validation tests need without committing binaries.

type wasmImport struct {
	module, name string
	params       []byte // value types; results are none
	results      []byte
}

type wasmSpec struct {
	imports      []wasmImport
	exportStart  bool
	exportMemory bool
	memoryPages  uint32
	startLoops   bool // the function loops forever and is the start section
}

func uleb(n uint32) []byte {
	var out []byte
	for {
		b := byte(n & 0x7f)
		n >>= 7
		if n != 0 {
			out = append(out, b|0x80)
			continue
		}
		return append(out, b)
	}
}

func wasmName(s string) []byte { return append(uleb(uint32(len(s))), s...) }

func wasmVec(items ...[]byte) []byte {
	out := uleb(uint32(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

func wasmSection(id byte, body []byte) []byte {
	return append(append([]byte{id}, uleb(uint32(len(body)))...), body...)
}

func funcType(params, results []byte) []byte {
	t := append([]byte{0x60}, uleb(uint32(len(params)))...)
	t = append(t, params...)
	t = append(t, uleb(uint32(len(results)))...)
	return append(t, results...)
}

// build encodes a module with one function () -> () that does nothing,
// optionally exported as _start, plus the given imports and a memory.
func (s wasmSpec) build() []byte {
	types := [][]byte{funcType(nil, nil)}
	var imps [][]byte
	for i, im := range s.imports {
		types = append(types, funcType(im.params, im.results))
		imp := append(append(wasmName(im.module), wasmName(im.name)...), 0x00)
		imps = append(imps, append(imp, uleb(uint32(i+1))...))
	}
	out := []byte("\x00asm\x01\x00\x00\x00")
	out = append(out, wasmSection(1, wasmVec(types...))...)
	if len(imps) > 0 {
		out = append(out, wasmSection(2, wasmVec(imps...))...)
	}
	out = append(out, wasmSection(3, wasmVec([]byte{0}))...)
	pages := s.memoryPages
	if pages == 0 {
		pages = 1
	}
	out = append(out, wasmSection(5, wasmVec(append([]byte{0x00}, uleb(pages)...)))...)
	var exps [][]byte
	if s.exportStart {
		exps = append(exps, append(append(wasmName("_start"), 0x00), uleb(uint32(len(s.imports)))...))
	}
	if s.exportMemory {
		exps = append(exps, append(wasmName("memory"), 0x02, 0x00))
	}
	out = append(out, wasmSection(7, wasmVec(exps...))...)
	body := []byte{0x02, 0x00, 0x0b} // size 2: no locals, end
	if s.startLoops {
		out = append(out, wasmSection(8, uleb(uint32(len(s.imports))))...)
		body = []byte{0x07, 0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b} // loop br 0 end end
	}
	return append(out, wasmSection(10, wasmVec(body))...)
}
