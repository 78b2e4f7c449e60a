// Command subako-agent is the process a sandbox runs as its PID 1's child:
// the agent that runs each exec. It is the same code as `subako`'s own agent
// mode, in a binary small enough to start in about a millisecond (the
// subako binary spends about 12 ms in its packages' init before main, on
// every cold start). `make build` puts it next to bin/subako, where the local
// driver looks for it; without it, the subako binary itself is the agent.
package main

import (
	"fmt"
	"os"

	"github.com/subako/subako/runtime/sandbox"
)

func main() {
	sandbox.RunAgentIfRequested()
	fmt.Fprintln(os.Stderr, "subako-agent runs inside a sandbox, started by `subako serve`; it is not run by hand")
	os.Exit(2)
}
