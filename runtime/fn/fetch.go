package fn

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/subako/subako/runtime/vault"
)

// Fetch records one http_fetch a call made, for the call's record. It holds no
// header values, so it cannot carry a credential.
type Fetch struct {
	Method         string
	URL            string
	Status         int // 0 when the fetch was refused or failed
	Error          string
	Duration       time.Duration
	RequestBytes   int      // request body
	ResponseBytes  int      // response body
	DroppedHeaders []string // header names the guest set and the host dropped
}

// fetcher is one call's egress: what it may reach and how it authenticates.
type fetcher struct {
	origins     map[string]bool
	credentials func(*http.Request)
	transport   http.RoundTripper
	caps        Caps
	fetches     []Fetch
	pending     []byte // a response too large for the guest's buffer, held for collection
}

type wireRequest struct {
	Method     string            `json:"method"`
	URL        string            `json:"url"`
	Headers    map[string]string `json:"headers"`
	Body       *string           `json:"body"`
	BodyBase64 *string           `json:"body_base64"`
}

type wireResponse struct {
	Error      string              `json:"error,omitempty"`
	Status     int                 `json:"status,omitempty"`
	Headers    map[string][]string `json:"headers,omitempty"`
	Body       *string             `json:"body,omitempty"`
	BodyBase64 *string             `json:"body_base64,omitempty"`
}

// fetch runs one guest request and returns the JSON answer for the guest:
// either the response or {"error": ...}. It never fails the call itself: the
// guest decides what a refused fetch means for its tool.
func (f *fetcher) fetch(ctx context.Context, raw []byte) []byte {
	start := time.Now()
	rec := Fetch{}
	resp, err := f.do(ctx, raw, &rec)
	rec.Duration = time.Since(start)
	if err != nil {
		rec.Error = err.Error()
		resp = wireResponse{Error: err.Error()}
	}
	f.fetches = append(f.fetches, rec)
	out, err := json.Marshal(resp)
	if err != nil {
		out, _ = json.Marshal(wireResponse{Error: "http_fetch: encode response: " + err.Error()})
	}
	return out
}

func (f *fetcher) do(ctx context.Context, raw []byte, rec *Fetch) (_ wireResponse, err error) {
	var secrets []string // what the vault attached, hop by hop
	defer func() {
		// An error may quote what a server sent (a Location header it
		// could not follow, say), and a server may have put the
		// credential there.
		if err != nil && len(secrets) > 0 {
			err = errors.New(vault.MaskString(err.Error(), secrets))
		}
	}()
	if len(f.fetches) >= f.caps.MaxFetches {
		return wireResponse{}, fmt.Errorf("http_fetch: a call may fetch at most %d times", f.caps.MaxFetches)
	}
	fctx, cancel := context.WithTimeout(ctx, f.caps.FetchTimeout)
	defer cancel()
	req, err := f.newRequest(fctx, raw, rec)
	if err != nil {
		return wireResponse{}, err
	}
	// The guest's request is fully copied out of its memory by now; the
	// credential goes only onto the host-side copy each hop sends, and a
	// refreshable one is refreshed and sent again once after a 401. What
	// was attached is kept, to be masked out of the answer: a server that
	// echoes the request's headers must not hand the credential to the
	// guest. The answer is then read decoded (the transport asks for gzip
	// itself), so an echo cannot hide in a compressed body.
	attach := f.credentials
	if attach != nil {
		attach = vault.Recording(f.credentials, &secrets)
		req.Header.Del("Accept-Encoding")
	}
	guestOnly := req.Header.Clone()
	client := &http.Client{Transport: &attachTransport{base: f.transport, attach: attach}, CheckRedirect: f.checkRedirect(guestOnly)}
	resp, err := client.Do(req)
	if err != nil {
		var refused *redirectError
		if errors.As(err, &refused) {
			return wireResponse{}, refused
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return wireResponse{}, fmt.Errorf("http_fetch: %s %s: no answer within the fetch timeout of %s or the call's deadline",
				req.Method, rec.URL, f.caps.FetchTimeout)
		}
		return wireResponse{}, fmt.Errorf("http_fetch: %s %s: %w", req.Method, rec.URL, unwrapURLError(err))
	}
	defer resp.Body.Close()
	return f.readResponse(resp, rec, secrets)
}

func (f *fetcher) newRequest(ctx context.Context, raw []byte, rec *Fetch) (*http.Request, error) {
	var w wireRequest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("http_fetch: request is not valid JSON: %w", err)
	}
	rec.Method, rec.URL = strings.ToUpper(w.Method), w.URL
	if rec.Method == "" {
		rec.Method = http.MethodGet
	}
	u, err := url.Parse(w.URL)
	if err != nil || !u.IsAbs() {
		return nil, fmt.Errorf("http_fetch: url %q must be an absolute http(s) URL", w.URL)
	}
	if err := f.allowed(u); err != nil {
		return nil, err
	}
	body, err := requestBody(w, f.caps.MaxFetchRequestBytes)
	if err != nil {
		return nil, err
	}
	rec.RequestBytes = len(body)
	req, err := http.NewRequestWithContext(ctx, rec.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("http_fetch: %w", err)
	}
	req.Header, rec.DroppedHeaders = guestHeaders(w.Headers)
	return req, nil
}

func requestBody(w wireRequest, limit int) ([]byte, error) {
	var body []byte
	switch {
	case w.Body != nil && w.BodyBase64 != nil:
		return nil, errors.New("http_fetch: give body or body_base64, not both")
	case w.Body != nil:
		body = []byte(*w.Body)
	case w.BodyBase64 != nil:
		b, err := base64.StdEncoding.DecodeString(*w.BodyBase64)
		if err != nil {
			return nil, fmt.Errorf("http_fetch: body_base64: %w", err)
		}
		body = b
	}
	if len(body) > limit {
		return nil, fmt.Errorf("http_fetch: request body is %d bytes; the limit is %d", len(body), limit)
	}
	return body, nil
}

// allowed refuses a URL whose origin the call was not granted.
func (f *fetcher) allowed(u *url.URL) error {
	origin, err := originOf(u)
	if err != nil {
		return fmt.Errorf("http_fetch: %w", err)
	}
	if !f.origins[origin] {
		return fmt.Errorf("http_fetch: origin %s is not granted to this function (granted: %s)", origin, f.grantedList())
	}
	return nil
}

// readResponse is the answer for the guest, each of secrets (the
// credentials attached on the way) overwritten in its body and headers.
func (f *fetcher) readResponse(resp *http.Response, rec *Fetch, secrets []string) (wireResponse, error) {
	limit := f.caps.MaxFetchResponseBytes
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return wireResponse{}, fmt.Errorf("http_fetch: %s %s: read body: %w", rec.Method, rec.URL, err)
	}
	if len(body) > limit {
		return wireResponse{}, fmt.Errorf("http_fetch: %s %s: response body exceeds the limit of %d bytes", rec.Method, rec.URL, limit)
	}
	// An answer encoded other than the gzip the transport asked for and
	// undid (deflate, br, zstd, or gzip after a guest's Range, which stops
	// the transport asking) would carry the credential past the mask.
	if ce := vault.Encoded(resp.Header); ce != "" && len(secrets) > 0 && len(body) > 0 {
		return wireResponse{}, fmt.Errorf("http_fetch: %s %s: answered encoded as %.40q without being asked: an answer to a request "+
			"with a credential attached must be plain or gzip, so the credential can be kept out of it", rec.Method, rec.URL, ce)
	}
	rec.Status, rec.ResponseBytes = resp.StatusCode, len(body)
	vault.Mask(body, secrets)
	out := wireResponse{Status: resp.StatusCode, Headers: responseHeaders(resp.Header)}
	vault.MaskHeader(out.Headers, secrets)
	if utf8.Valid(body) {
		s := string(body)
		out.Body = &s
	} else {
		s := base64.StdEncoding.EncodeToString(body)
		out.BodyBase64 = &s
	}
	return out, nil
}

func (f *fetcher) grantedList() string {
	if len(f.origins) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(f.origins)), ", ")
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
