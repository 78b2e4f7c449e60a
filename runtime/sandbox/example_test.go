package sandbox_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/archive"
	"github.com/subako/subako/runtime/sandbox/local"
)

// How the server wires sandboxes: main calls sandbox.RunAgentIfRequested()
// first thing, then builds a Manager, recovers, and ticks.
func Example() {
	driver, err := local.New(local.Config{}) // release "2026" = the host's /usr
	if err != nil {
		log.Fatal(err)
	}
	archives, err := archive.NewLocal("/var/lib/subako/archives")
	if err != nil {
		log.Fatal(err)
	}
	mgr, err := sandbox.NewManager(sandbox.Config{
		Driver: driver, Archives: archives, Store: sandbox.NewMemStore(), // the lead's gorm Store
		Dir:     "/var/lib/subako/sandboxes",
		Limits:  sandbox.Limits{MemoryBytes: 2 << 30, Pids: 1024, CPUPercent: 100},
		OnUsage: func(u sandbox.UsageEvent) { fmt.Println(u.Kind, u.Quantity) },
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := mgr.Recover(ctx); err != nil {
		log.Print(err)
	}
	go func() {
		for range time.Tick(5 * time.Second) {
			if err := mgr.Tick(ctx); err != nil {
				log.Print(err)
			}
		}
	}()
	key := sandbox.Key{SessionID: "ses_1", Grant: "workbench", Release: "2026", Network: sandbox.NetworkNone}
	res, err := mgr.Exec(ctx, key, sandbox.ExecRequest{Command: "git --version"})
	fmt.Println(res.ExitCode, err)
}
