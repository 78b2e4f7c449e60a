//go:build !wasip1

package main

import "errors"

// The guest runs only as GOOS=wasip1 under runtime/codemode; these stubs let
// the package build (and vet) for the host.

func hostCall([]byte) ([]byte, error) {
	return nil, errors.New("codemode guest: runs only under wasip1")
}

func hostLog(string) {}
