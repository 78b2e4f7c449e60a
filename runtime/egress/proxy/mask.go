package proxy

import (
	"io"

	"github.com/subako/subako/runtime/vault"
)

// maskReader is body with every occurrence of each secret overwritten by as
// many '*': a host that repeats the credential it was sent (an echo of the
// request's headers) does not hand it to the sandbox. Lengths are kept, so
// a Content-Length stays true.
func maskReader(body io.ReadCloser, secrets []string) io.ReadCloser {
	m := &masker{body: body, secrets: secrets}
	for _, s := range secrets {
		if len(s) >= 4 {
			m.keep = max(m.keep, len(s)-1)
		}
	}
	return m
}

type masker struct {
	body    io.ReadCloser
	secrets []string
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

func (m *masker) mask() { vault.Mask(m.pending, m.secrets) }

func (m *masker) Close() error { return m.body.Close() }

// clip is s cut to n bytes, for an error naming what a host sent.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
