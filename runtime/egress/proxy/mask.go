package proxy

import (
	"bytes"
	"io"
	"net/http"
	"strings"
)

// maskReader is body with every occurrence of each secret overwritten by as
// many '*': a host that repeats the credential it was sent (an echo of the
// request's headers) does not hand it to the sandbox. Lengths are kept, so
// a Content-Length stays true.
func maskReader(body io.ReadCloser, secrets []string) io.ReadCloser {
	m := &masker{body: body}
	for _, s := range secrets {
		if len(s) >= 4 {
			m.secrets = append(m.secrets, []byte(s))
			m.keep = max(m.keep, len(s)-1)
		}
	}
	return m
}

type masker struct {
	body    io.ReadCloser
	secrets [][]byte
	keep    int    // bytes held back: a secret may continue in the next read
	pending []byte // read, masked as far as known, not yet released
	out     []byte
	eof     bool
	err     error
}

func (m *masker) Read(p []byte) (int, error) {
	for len(m.out) == 0 {
		if m.eof {
			if len(m.pending) == 0 {
				return 0, m.err
			}
			m.out, m.pending = m.pending, nil
			break
		}
		var chunk [32 << 10]byte
		n, err := m.body.Read(chunk[:])
		m.pending = append(m.pending, chunk[:n]...)
		if err != nil {
			m.eof, m.err = true, err
		}
		m.mask()
		if !m.eof && len(m.pending) > m.keep {
			cut := len(m.pending) - m.keep
			m.out = append([]byte(nil), m.pending[:cut]...)
			m.pending = append(m.pending[:0:0], m.pending[cut:]...)
		}
	}
	n := copy(p, m.out)
	m.out = m.out[n:]
	return n, nil
}

func (m *masker) mask() {
	for _, s := range m.secrets {
		for i := 0; ; {
			j := bytes.Index(m.pending[i:], s)
			if j < 0 {
				break
			}
			copy(m.pending[i+j:], bytes.Repeat([]byte{'*'}, len(s)))
			i += j + len(s)
		}
	}
}

func (m *masker) Close() error { return m.body.Close() }

// maskHeader overwrites each secret in an answer's header values, as
// maskReader does in its body.
func maskHeader(h http.Header, secrets []string) {
	for _, vs := range h {
		for i, v := range vs {
			for _, s := range secrets {
				if len(s) >= 4 {
					v = strings.ReplaceAll(v, s, strings.Repeat("*", len(s)))
				}
			}
			vs[i] = v
		}
	}
}

// clip is s cut to n bytes, for an error naming what a host sent.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
