//go:build wasip1

package main

import (
	"errors"
	"unsafe"
)

//go:wasmimport codemode call
func hostCallImport(reqPtr unsafe.Pointer, reqLen uint32, respPtr unsafe.Pointer, respCap uint32) int32

//go:wasmimport codemode log
func hostLogImport(ptr unsafe.Pointer, n uint32)

// firstBuffer fits most answers, so one import call usually suffices.
const firstBuffer = 16 << 10

// hostCall performs one $ call on the host; it blocks while the host works
// (an approval may take minutes).
func hostCall(req []byte) ([]byte, error) {
	buf := make([]byte, firstBuffer)
	n := hostCallImport(unsafe.Pointer(unsafe.SliceData(req)), uint32(len(req)),
		unsafe.Pointer(unsafe.SliceData(buf)), uint32(len(buf)))
	if n >= 0 {
		return buf[:n], nil
	}
	buf = make([]byte, -n)
	n = hostCallImport(nil, 0, unsafe.Pointer(unsafe.SliceData(buf)), uint32(len(buf)))
	if n < 0 {
		return nil, errors.New("codemode.call: the host did not hand over the held answer")
	}
	return buf[:n], nil
}

func hostLog(line string) {
	b := []byte(line)
	hostLogImport(unsafe.Pointer(unsafe.SliceData(b)), uint32(len(b)))
}
