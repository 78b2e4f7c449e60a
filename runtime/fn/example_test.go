package fn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/subako/subako/runtime/fn"
	"github.com/subako/subako/runtime/fn/fntest"
)

// Install the shipped jq package and call its query tool.
func Example() {
	mods, err := fntest.BuildAll() // the packages, built for wasip1
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	e, err := fn.New(ctx, fn.Config{DataDir: mods.DataDir})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close(ctx)

	wasm, _ := os.ReadFile(filepath.Join(mods.Dir, "packages", "jq.wasm"))
	raw, _ := os.ReadFile(filepath.Join(mods.Dir, "packages", "jq.manifest.json"))
	m, err := fn.ParseManifest(raw, e.Caps())
	if err != nil {
		log.Fatal(err)
	}
	p, err := e.Install(ctx, wasm, m)
	if err != nil {
		log.Fatal(err)
	}
	res, err := e.Call(ctx, p, fn.CallRequest{
		Tool:  "query",
		Input: json.RawMessage(`{"filter": ".[] | .name", "input": [{"name": "ada"}, {"name": "linus"}]}`),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(res.Output))
	// Output: {"results":["ada","linus"]}
}
