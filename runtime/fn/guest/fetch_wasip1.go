//go:build wasip1

package guest

import (
	"errors"
	"unsafe"
)

// httpFetch is the host import. ABI (see docs/functions.md):
//
//	http_fetch(req_ptr, req_len, resp_ptr, resp_cap u32) -> i32
//
// With req_len > 0 the host reads the request JSON, performs the fetch and writes
// the response JSON at resp_ptr. The result is the number of bytes written, or,
// when resp_cap is too small, minus the size needed: the host then keeps the
// response, and a second call with req_len = 0 collects it without fetching again.
//
//go:wasmimport subako http_fetch
func httpFetch(reqPtr unsafe.Pointer, reqLen uint32, respPtr unsafe.Pointer, respCap uint32) int32

// firstBuffer fits most API answers, so one call usually suffices.
const firstBuffer = 64 << 10

func hostFetch(req []byte) ([]byte, error) {
	buf := make([]byte, firstBuffer)
	n := httpFetch(unsafe.Pointer(unsafe.SliceData(req)), uint32(len(req)),
		unsafe.Pointer(unsafe.SliceData(buf)), uint32(len(buf)))
	if n >= 0 {
		return buf[:n], nil
	}
	buf = make([]byte, -n)
	n = httpFetch(nil, 0, unsafe.Pointer(unsafe.SliceData(buf)), uint32(len(buf)))
	if n < 0 {
		return nil, errors.New("http_fetch: host did not hand over the held response")
	}
	return buf[:n], nil
}
