package fn

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// HostModule and FetchImport name the one import a package may use beyond WASI.
const (
	HostModule  = "subako"
	FetchImport = "http_fetch"
)

// fetcherKey carries a call's fetcher in the context wazero hands the import.
type fetcherKey struct{}

var i32 = api.ValueTypeI32

// instantiateHost registers subako.http_fetch in the runtime. It is shared by
// every instance; each call's rules travel in the call's context.
func instantiateHost(ctx context.Context, r wazero.Runtime) error {
	_, err := r.NewHostModuleBuilder(HostModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(httpFetch), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		WithParameterNames("req_ptr", "req_len", "resp_ptr", "resp_cap").
		WithResultNames("written_or_minus_needed").
		Export(FetchImport).
		Instantiate(ctx)
	if err != nil {
		return fmt.Errorf("fn: instantiate host module: %w", err)
	}
	return nil
}

// httpFetch implements http_fetch(req_ptr, req_len, resp_ptr, resp_cap) -> i32.
//
// req_len > 0: read the request JSON, fetch, then write the response JSON at
// resp_ptr and return its length. If it is longer than resp_cap, nothing is
// written: the host keeps the response and returns minus its length; the guest
// calls again with req_len = 0 and a buffer that large to collect it, so a
// request is never sent twice.
func httpFetch(ctx context.Context, mod api.Module, stack []uint64) {
	reqPtr, reqLen := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	respPtr, respCap := api.DecodeU32(stack[2]), api.DecodeU32(stack[3])
	f, _ := ctx.Value(fetcherKey{}).(*fetcher)
	var out []byte
	switch {
	case f == nil:
		out = errorJSON("http_fetch: not available outside a call")
	case reqLen == 0:
		out, f.pending = f.pending, nil
		if out == nil {
			out = errorJSON("http_fetch: no response is waiting to be collected")
		}
	case int(reqLen) > 2*f.caps.MaxFetchRequestBytes+(64<<10):
		out = errorJSON(fmt.Sprintf("http_fetch: request is %d bytes of JSON; the limit is %d",
			reqLen, 2*f.caps.MaxFetchRequestBytes+(64<<10)))
	default:
		raw, ok := mod.Memory().Read(reqPtr, reqLen)
		if !ok {
			panic(fmt.Errorf("http_fetch: request at %d+%d is outside guest memory", reqPtr, reqLen))
		}
		// Clone: the view aliases guest memory, which the guest owns again once
		// this import returns.
		out = f.fetch(ctx, bytes.Clone(raw))
	}
	if uint64(len(out)) > uint64(respCap) {
		if f != nil {
			f.pending = out
		}
		stack[0] = api.EncodeI32(-int32(len(out)))
		return
	}
	if !mod.Memory().Write(respPtr, out) {
		panic(fmt.Errorf("http_fetch: response buffer at %d+%d is outside guest memory", respPtr, respCap))
	}
	stack[0] = api.EncodeI32(int32(len(out)))
}

func errorJSON(msg string) []byte {
	b, _ := json.Marshal(wireResponse{Error: msg})
	return b
}
