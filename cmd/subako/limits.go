package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/subako/subako/runtime/fn"
	"github.com/subako/subako/runtime/mcpclient"
)

// limitFlags bound what function calls and MCP servers may take from the
// server: instances and memory at once, and the bytes and tools a server
// may send.
type limitFlags struct {
	MaxFunctionInstances int
	FunctionMemory       byteSize
	FunctionQueue        int
	FunctionQueueWait    time.Duration

	MCPMaxResponse    byteSize
	MCPMaxTools       int
	MCPMaxDescription byteSize
	MCPMaxSchema      byteSize
}

func bindLimits(fs *flag.FlagSet, l *limitFlags) {
	d := fn.DefaultCapacity()
	fs.IntVar(&l.MaxFunctionInstances, "max-function-instances", d.MaxInstances,
		"function instances running at once (default twice the processors, at least 8)")
	l.FunctionMemory = byteSize(d.MemoryMB) << 20
	fs.Var(&l.FunctionMemory, "function-memory", "guest memory all running function instances may reserve together (each reserves its limit before it starts)")
	fs.IntVar(&l.FunctionQueue, "function-queue", d.MaxQueued, "function calls that may wait for room; past it a call is refused at once (0: none wait)")
	fs.DurationVar(&l.FunctionQueueWait, "function-queue-wait", d.Wait, "longest a function call waits for room before it is refused (429 capacity)")

	l.MCPMaxResponse = mcpclient.DefaultMaxResponseBytes
	fs.Var(&l.MCPMaxResponse, "mcp-max-response-bytes", "most bytes read from one answer of an MCP server; past it the call fails")
	fs.IntVar(&l.MCPMaxTools, "mcp-max-tools", mcpclient.DefaultMaxTools, "most tools kept from one MCP server's tools/list")
	l.MCPMaxDescription = mcpclient.DefaultMaxDescriptionBytes
	fs.Var(&l.MCPMaxDescription, "mcp-max-description-bytes", "largest tool description kept from an MCP server; a larger one's tool is skipped")
	l.MCPMaxSchema = mcpclient.DefaultMaxSchemaBytes
	fs.Var(&l.MCPMaxSchema, "mcp-max-schema-bytes", "largest tool input schema kept from an MCP server; a larger one's tool is skipped")
}

func (l *limitFlags) validate() error {
	if l.MaxFunctionInstances <= 0 || l.FunctionQueue < 0 || l.FunctionQueueWait <= 0 {
		return fmt.Errorf("--max-function-instances and --function-queue-wait must be positive, --function-queue 0 or more")
	}
	if most := fn.DefaultCaps().MaxMemoryMB; int64(l.FunctionMemory) < int64(most)<<20 {
		return fmt.Errorf("--function-memory %s: must be at least %d MiB, the most one function call may get", l.FunctionMemory.String(), most)
	}
	if l.MCPMaxResponse < 64<<10 || l.MCPMaxTools <= 0 || l.MCPMaxDescription <= 0 || l.MCPMaxSchema <= 0 {
		return fmt.Errorf("--mcp-max-response-bytes must be at least 64KiB; --mcp-max-tools, --mcp-max-description-bytes and --mcp-max-schema-bytes positive")
	}
	return nil
}

func (l *limitFlags) functionCapacity() fn.Capacity {
	queued := l.FunctionQueue
	if queued == 0 {
		queued = -1 // fn reads 0 as its default; the flag's 0 means none wait
	}
	return fn.Capacity{MaxInstances: l.MaxFunctionInstances, MemoryMB: int(l.FunctionMemory >> 20), MaxQueued: queued, Wait: l.FunctionQueueWait}
}

func (l *limitFlags) mcpLimits() mcpclient.Limits {
	return mcpclient.Limits{MaxResponseBytes: int64(l.MCPMaxResponse), MaxTools: l.MCPMaxTools,
		MaxDescriptionBytes: int(l.MCPMaxDescription), MaxSchemaBytes: int(l.MCPMaxSchema)}
}
