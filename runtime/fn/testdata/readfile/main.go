// Command readfile tries to read host files and reports every attempt.
package main

import (
	"os"

	"github.com/subako/subako/runtime/fn/guest"
)

type input struct {
	Paths []string `json:"paths"`
}

type attempt struct {
	Path  string `json:"path"`
	Read  bool   `json:"read"`
	Bytes int    `json:"bytes"`
	Error string `json:"error,omitempty"`
}

func read(in input) (any, error) {
	paths := append([]string{"/etc/passwd"}, in.Paths...)
	out := []attempt{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		a := attempt{Path: p, Read: err == nil, Bytes: len(b)}
		if err != nil {
			a.Error = err.Error()
		}
		out = append(out, a)
	}
	entries, err := os.ReadDir("/")
	return map[string]any{"attempts": out, "root_entries": len(entries), "root_error": errString(err),
		"env": os.Environ(), "args": os.Args}, nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func main() {
	guest.Main(guest.Tools{"read": guest.Typed(read)})
}
