package archive

import "fmt"

// UnavailableError is a Store that could not be reached or refused to
// answer (a remote object store down, its credentials refused). Nothing was
// changed: the archive that was there still is, and a Put's temporary file
// is the caller's to keep or remove. Store names the store for people
// (s3://bucket/prefix at an endpoint), never its credentials.
type UnavailableError struct {
	Store string
	Op    string // what was tried: "put 0a1b…", "open 0a1b…", "ping"
	Err   error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("the archive store %s is unavailable (%s): %v", e.Store, e.Op, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }
