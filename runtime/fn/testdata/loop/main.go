// Command loop never returns: the engine must stop it at the deadline.
package main

import (
	"encoding/json"

	"github.com/subako/subako/runtime/fn/guest"
)

var sink int

func main() {
	guest.Main(guest.Tools{"spin": func(json.RawMessage) (any, error) {
		for i := 0; ; i++ {
			sink += i // no calls, no allocation: only the engine can stop this
		}
	}})
}
