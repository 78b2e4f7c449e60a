package guest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Request is an HTTP request the host makes for the guest. Headers that carry
// credentials (Authorization, Cookie, X-Api-Key and the like) are dropped by the
// host; the credential for the origin is attached there instead.
type Request struct {
	Method  string            // GET when empty
	URL     string            // absolute; its origin must be granted to the call
	Headers map[string]string // one value per header
	Body    []byte
}

// Response is the host's answer. Redirects have already been followed.
type Response struct {
	Status  int
	Headers map[string][]string
	Body    []byte
}

// Header returns the first value of the named header, matched case-insensitively.
func (r Response) Header(name string) string {
	for k, v := range r.Headers {
		if len(v) > 0 && equalFold(k, name) {
			return v[0]
		}
	}
	return ""
}

// wireRequest is the JSON the guest hands to http_fetch.
type wireRequest struct {
	Method     string            `json:"method,omitempty"`
	URL        string            `json:"url"`
	Headers    map[string]string `json:"headers,omitempty"`
	Body       *string           `json:"body,omitempty"`
	BodyBase64 *string           `json:"body_base64,omitempty"`
}

// wireResponse is the JSON http_fetch hands back: either an error or a response.
type wireResponse struct {
	Error      string              `json:"error,omitempty"`
	Status     int                 `json:"status"`
	Headers    map[string][]string `json:"headers"`
	Body       *string             `json:"body,omitempty"`
	BodyBase64 *string             `json:"body_base64,omitempty"`
}

// Fetch sends req through the host. A refused origin, a redirect to an origin not
// granted, or a body over the host's limits comes back as an error.
func Fetch(req Request) (Response, error) {
	wire := wireRequest{Method: req.Method, URL: req.URL, Headers: req.Headers}
	if len(req.Body) > 0 {
		if utf8.Valid(req.Body) {
			s := string(req.Body)
			wire.Body = &s
		} else {
			s := base64.StdEncoding.EncodeToString(req.Body)
			wire.BodyBase64 = &s
		}
	}
	in, err := json.Marshal(wire)
	if err != nil {
		return Response{}, fmt.Errorf("http_fetch: encode request: %w", err)
	}
	out, err := hostFetch(in)
	if err != nil {
		return Response{}, err
	}
	return decodeResponse(out)
}

func decodeResponse(out []byte) (Response, error) {
	var w wireResponse
	if err := json.Unmarshal(out, &w); err != nil {
		return Response{}, fmt.Errorf("http_fetch: decode response: %w", err)
	}
	if w.Error != "" {
		return Response{}, errors.New(w.Error)
	}
	resp := Response{Status: w.Status, Headers: w.Headers}
	switch {
	case w.Body != nil:
		resp.Body = []byte(*w.Body)
	case w.BodyBase64 != nil:
		b, err := base64.StdEncoding.DecodeString(*w.BodyBase64)
		if err != nil {
			return Response{}, fmt.Errorf("http_fetch: decode body_base64: %w", err)
		}
		resp.Body = b
	}
	return resp, nil
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
