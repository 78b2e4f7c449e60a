// Command counter returns how many times it has been called in this instance.
package main

import (
	"encoding/json"

	"github.com/subako/subako/runtime/fn/guest"
)

var calls int

func main() {
	guest.Main(guest.Tools{"count": func(json.RawMessage) (any, error) {
		calls++
		return map[string]int{"count": calls}, nil
	}})
}
