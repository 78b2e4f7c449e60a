// Command subako is the whole product in one binary: the console and API
// server, migrations, offline bootstrap of people and tokens, and `do`, which
// calls any verb of the API.
package main

import (
	"fmt"
	"os"

	"github.com/subako/subako/runtime/sandbox"
)

const usage = `subako — the control plane for AI agents' tools

Usage:
  subako serve   [--addr 127.0.0.1:8080] [--data ./data] [--database-url URL] [...]
  subako migrate [--data DIR] [--database-url URL]
  subako user add --email E --access owner|admin|member|viewer|none [--password-stdin]
  subako token create --email E [--name N] [--expires 24h]
  subako do Noun.verb [--json '{...}' | JSON on stdin]   (uses SUBAKO_URL and SUBAKO_TOKEN)
  subako release build [--uv PATH] 2026   (builds the sandbox release image; also: release show)

Run "subako COMMAND -h" for a command's flags.
`

func main() {
	sandbox.RunAgentIfRequested()
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	args := os.Args[2:]
	switch os.Args[1] {
	case "serve":
		err = serve(args)
	case "migrate":
		err = migrate(args)
	case "user":
		err = userCmd(args, os.Stdin, os.Stdout)
	case "token":
		err = tokenCmd(args, os.Stdout)
	case "do":
		err = doCmd(args, os.Stdin, os.Stdout)
	case "release":
		err = releaseCmd(args, os.Stdout)
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "subako: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "subako:", err)
		os.Exit(1)
	}
}
