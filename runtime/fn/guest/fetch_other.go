//go:build !wasip1

package guest

// hostFetch outside wasip1 has no host to ask; the stub lets packages build and
// be vetted natively.
func hostFetch([]byte) ([]byte, error) { return nil, ErrNoHost }
