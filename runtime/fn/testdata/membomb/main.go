// Command membomb allocates until something stops it.
package main

import (
	"encoding/json"

	"github.com/subako/subako/runtime/fn/guest"
)

var keep [][]byte

func main() {
	guest.Main(guest.Tools{"grow": func(json.RawMessage) (any, error) {
		for {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1 // touch every page so nothing is lazily skipped
			}
			keep = append(keep, b)
		}
	}})
}
