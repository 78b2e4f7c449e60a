package web

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/labstack/echo/v4"
)

// compressMinBytes is the size under which a body goes out as it is: a
// body that fits in one packet on a 1,500-byte link arrives no sooner
// compressed, and compressing it costs both ends more than sending it. A
// tool call's answer (about 700 bytes) is under it.
const compressMinBytes = 1400

// clientLeftKey marks, in the echo context, an answer broken off because
// its client left (compressWriter.clientLeft), for the request counter.
const clientLeftKey = "subako.client_left"

// compress answers in brotli or gzip when the client accepts it. What is
// decided when the handler writes its header, from the Content-Type it set:
// an event stream is never compressed (a compressor holds bytes back, and
// each event must reach the browser when it is written), nor a body that is
// compressed already (an archive's .tar.gz), a partial answer, or a short
// one. A body of unknown length (a JSON answer, a page) is held back until
// it reaches compressMinBytes, whatever the client accepts; one that ends
// sooner goes out as it is, with its Content-Length.
//
// It also sees that an answer whose handler fails (returns an error or
// panics) is never taken for a whole one. While it is held back, it is
// dropped, with the headers the handler set for it, and the error page
// goes out in its place. Once part of it has left, the connection is cut
// (http.ErrAbortHandler, after the error is logged), so the client sees
// the answer broken off and not a short one. If the client is what failed
// (it left), that is not logged, and it is counted as 499.
func compress(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		res := c.Response()
		res.Header().Add(echo.HeaderVary, echo.HeaderAcceptEncoding)
		if c.Request().Method == http.MethodHead {
			return next(c)
		}
		cw := &compressWriter{ResponseWriter: res.Writer, enc: acceptedEncoding(c.Request().Header.Get(echo.HeaderAcceptEncoding))}
		res.Writer = cw
		before := res.Header().Clone()
		// Deferred, so a panic that Recover turns into an error page finds
		// the plain writer again.
		defer func() {
			p := recover()
			if p == nil {
				cw.close()
				res.Writer = cw.ResponseWriter
				return
			}
			broken := p != http.ErrAbortHandler && !cw.takeBack(res, before)
			res.Writer = cw.ResponseWriter
			if broken {
				res.Committed = true // the error handler logs, and writes nothing
				c.Error(fmt.Errorf("panic after the answer began: %v\n%s", p, debug.Stack()))
				p = http.ErrAbortHandler
			}
			panic(p) // Recover answers it, or net/http cuts the connection
		}()
		if err := next(c); err != nil {
			if !cw.takeBack(res, before) {
				if cw.clientLeft(c) {
					// The handler's error is likely the client's leaving:
					// nothing failed here, and nothing is logged.
					c.Set(clientLeftKey, true)
				} else {
					res.Committed = true
					c.Error(err)
				}
				// Cut even so: a client that only stopped sending may
				// still be reading, and must not take the part for the
				// whole.
				panic(http.ErrAbortHandler)
			}
			// The error page is written here, through the compressor,
			// before it is closed; the middleware outside sees the error
			// as handled.
			c.Error(err)
		}
		return nil
	}
}

// acceptedEncoding picks brotli over gzip, honouring q=0 refusals.
func acceptedEncoding(header string) string {
	var br, gz bool
	for part := range strings.SplitSeq(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if q, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if v, err := strconv.ParseFloat(q, 64); err == nil && v == 0 {
				continue
			}
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "br":
			br = true
		case "gzip":
			gz = true
		}
	}
	switch {
	case br:
		return "br"
	case gz:
		return "gzip"
	}
	return ""
}

// encoder is what brotli's and gzip's writers have in common.
type encoder interface {
	io.WriteCloser
	Flush() error
	Reset(io.Writer)
}

var (
	gzipPool   = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(io.Discard, gzip.DefaultCompression); return w }}
	brotliPool = sync.Pool{New: func() any { return brotli.NewWriterLevel(io.Discard, 5) }}
)

type compressWriter struct {
	http.ResponseWriter
	enc         string  // "br", "gzip", or "" when the client accepts neither
	w           encoder // nil while undecided, and when the body goes out as it is
	wroteHeader bool
	// While the body's size is unknown the status waits in code (not yet
	// sent) and the body's first bytes in held, until they reach
	// compressMinBytes, the handler flushes, or it ends. (A header the
	// handler sets meanwhile is sent too, where net/http would drop it.)
	holding bool
	code    int
	held    []byte
	// writeErr is the first write to the client that failed: it has gone.
	writeErr error
}

func (cw *compressWriter) WriteHeader(code int) {
	if cw.wroteHeader {
		return
	}
	cw.wroteHeader = true
	if cw.worthCompressing(code) {
		if n, err := strconv.Atoi(cw.Header().Get(echo.HeaderContentLength)); err != nil {
			cw.holding, cw.code = true, code
			return
		} else if n >= compressMinBytes && cw.enc != "" {
			cw.startCompressing()
		}
	}
	cw.ResponseWriter.WriteHeader(code)
}

func (cw *compressWriter) Write(b []byte) (int, error) {
	if !cw.wroteHeader {
		hd := cw.Header()
		if hd.Get(echo.HeaderContentType) == "" {
			hd.Set(echo.HeaderContentType, http.DetectContentType(b))
		}
		cw.WriteHeader(http.StatusOK)
	}
	if cw.holding {
		if len(cw.held)+len(b) < compressMinBytes {
			cw.held = append(cw.held, b...)
			return len(b), nil
		}
		if err := cw.release(false); err != nil {
			return 0, err
		}
	}
	return cw.send(b)
}

// clientLeft says whether the client went away before its answer ended: the
// request's context is done (net/http ends it when the connection breaks),
// or a write to it failed for a reason other than net/http's own refusals.
func (cw *compressWriter) clientLeft(c echo.Context) bool {
	if c.Request().Context().Err() != nil {
		return true
	}
	return cw.writeErr != nil && !errors.Is(cw.writeErr, http.ErrContentLength) &&
		!errors.Is(cw.writeErr, http.ErrBodyNotAllowed) && !errors.Is(cw.writeErr, http.ErrHijacked)
}

// send writes b on, through the compressor if there is one. A write that
// fails says the client is gone, and is remembered.
func (cw *compressWriter) send(b []byte) (int, error) {
	var n int
	var err error
	if cw.w != nil {
		n, err = cw.w.Write(b)
	} else {
		n, err = cw.ResponseWriter.Write(b)
	}
	if err != nil && cw.writeErr == nil {
		cw.writeErr = err
	}
	return n, err
}

// worthCompressing says whether a body with this status and these headers
// is compressed once it is long enough.
func (cw *compressWriter) worthCompressing(code int) bool {
	hd := cw.Header()
	return code >= 200 && code != http.StatusNoContent && code != http.StatusNotModified && code != http.StatusPartialContent &&
		hd.Get(echo.HeaderContentEncoding) == "" && hd.Get("Content-Range") == "" && compressible(hd.Get(echo.HeaderContentType))
}

func (cw *compressWriter) startCompressing() {
	hd := cw.Header()
	hd.Del(echo.HeaderContentLength)
	hd.Set(echo.HeaderContentEncoding, cw.enc)
	if cw.enc == "br" {
		cw.w = brotliPool.Get().(*brotli.Writer)
	} else {
		cw.w = gzipPool.Get().(*gzip.Writer)
	}
	cw.w.Reset(cw.ResponseWriter)
}

// release ends the holding: it sends the status held back, then the bytes
// held. When they are the whole body (the handler ended) they go as they
// are, with their length; when more follows, compressed if the client
// accepts it.
func (cw *compressWriter) release(whole bool) error {
	cw.holding = false
	if whole {
		cw.Header().Set(echo.HeaderContentLength, strconv.Itoa(len(cw.held)))
	} else if cw.enc != "" {
		cw.startCompressing()
	}
	cw.ResponseWriter.WriteHeader(cw.code)
	held := cw.held
	cw.held = nil
	if len(held) == 0 {
		return nil
	}
	_, err := cw.send(held)
	return err
}

// compressible is text of any kind, JSON, JavaScript and SVG; not event
// streams, and not what is compressed already (archives, images, fonts).
func compressible(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	switch {
	case mt == "text/event-stream":
		return false
	case strings.HasPrefix(mt, "text/"), mt == "image/svg+xml", mt == "application/javascript",
		mt == "application/json", mt == "application/problem+json", mt == "application/xml", mt == "application/wasm",
		strings.HasSuffix(mt, "+json"):
		return true
	}
	return false
}

// Flush sends what the compressor holds, so a streamed page arrives as it
// is written. A body still held back is compressed from here on: a handler
// that flushes streams, and what it streams is seldom short.
func (cw *compressWriter) Flush() {
	if !cw.wroteHeader {
		// The header goes now, and with it the decision: a body written
		// after it must be in the encoding that header names.
		cw.WriteHeader(http.StatusOK)
	}
	if cw.holding {
		_ = cw.release(false)
	}
	var err error
	if cw.w != nil {
		err = cw.w.Flush()
	}
	if err == nil {
		err = http.NewResponseController(cw.ResponseWriter).Flush()
	}
	if err != nil && cw.writeErr == nil {
		cw.writeErr = err
	}
}

// Hijack is for WebSocket-style upgrades, which bypass compression.
func (cw *compressWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(cw.ResponseWriter).Hijack()
}

// Unwrap lets http.ResponseController reach the connection's deadlines.
func (cw *compressWriter) Unwrap() http.ResponseWriter { return cw.ResponseWriter }

// takeBack ends an answer its handler did not finish. What it held back is
// dropped (a compressed body under way is dropped from the compressor, so
// nothing more of it is sent), and it says whether none of the answer has
// left: then the echo response is as it was before the handler wrote, with
// the headers it had then, and the next answer is decided afresh. A handler
// that failed before it wrote keeps the headers it set (a 401's
// WWW-Authenticate goes with its error).
func (cw *compressWriter) takeBack(res *echo.Response, before http.Header) bool {
	unsent := !cw.wroteHeader || cw.holding
	if cw.wroteHeader && unsent {
		res.Committed, res.Status, res.Size = false, http.StatusOK, 0
		clear(res.Header())
		maps.Copy(res.Header(), before)
	}
	cw.holding, cw.held = false, nil
	if cw.w != nil {
		cw.w.Reset(io.Discard)
		cw.putEncoder()
	}
	if unsent {
		cw.wroteHeader = false
	}
	return unsent
}

func (cw *compressWriter) close() {
	if cw.holding {
		_ = cw.release(true) // the handler ended under compressMinBytes
	}
	if cw.w == nil {
		return
	}
	_ = cw.w.Close()
	cw.w.Reset(io.Discard)
	cw.putEncoder()
}

func (cw *compressWriter) putEncoder() {
	if cw.enc == "br" {
		brotliPool.Put(cw.w)
	} else {
		gzipPool.Put(cw.w)
	}
	cw.w = nil
}
