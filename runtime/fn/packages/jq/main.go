// Command jq is the Subako function package "jq": it runs a jq filter over a JSON
// value with github.com/itchyny/gojq. It reads no files and reaches no network.
package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/itchyny/gojq"
	"github.com/subako/subako/runtime/fn/guest"
)

// maxResults bounds what a filter like `range(1e9)` can emit before the output
// cap would fail the whole call anyway.
const maxResults = 10000

type queryInput struct {
	Filter string          `json:"filter"`
	Input  json.RawMessage `json:"input"`
}

func query(in queryInput) (any, error) {
	q, err := gojq.Parse(in.Filter)
	if err != nil {
		return nil, fmt.Errorf("filter: %w", err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, fmt.Errorf("filter: %w", err)
	}
	var v any
	if len(in.Input) > 0 {
		if err := json.Unmarshal(in.Input, &v); err != nil {
			return nil, fmt.Errorf("input: %w", err)
		}
	}
	results := []any{}
	iter := code.Run(v)
	for {
		r, ok := iter.Next()
		if !ok {
			break
		}
		if err, ok := r.(error); ok {
			var halt *gojq.HaltError
			if errors.As(err, &halt) && halt.Value() == nil {
				break // `halt` ends the program without an error
			}
			return nil, fmt.Errorf("jq: %w", err)
		}
		if len(results) == maxResults {
			return nil, fmt.Errorf("results: more than %d values", maxResults)
		}
		results = append(results, r)
	}
	return map[string]any{"results": results}, nil
}

func main() {
	guest.Main(guest.Tools{"query": guest.Typed(query)})
}
