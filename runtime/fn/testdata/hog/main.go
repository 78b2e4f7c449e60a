// Command hog takes memory and holds it while it waits on a URL: a
// memory-hungry call that lasts for as long as the test's server wants.
package main

import (
	"github.com/subako/subako/runtime/fn/guest"
)

type input struct {
	URL string `json:"url"`
	MiB int    `json:"mib"`
}

var keep [][]byte

func hog(in input) (any, error) {
	for range in.MiB {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1 // touch every page so nothing is lazily skipped
		}
		keep = append(keep, b)
	}
	resp, err := guest.Fetch(guest.Request{URL: in.URL})
	if err != nil {
		return nil, err
	}
	return map[string]any{"held_mib": len(keep), "status": resp.Status}, nil
}

func main() {
	guest.Main(guest.Tools{"hog": guest.Typed(hog)})
}
