package handlers

import (
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

// exitLines are a sandbox's network exit events as its row shows them.
func exitLines(events []runtime.ExitEventView) []pages.SandboxExitLine {
	out := make([]pages.SandboxExitLine, 0, len(events))
	for _, e := range events {
		out = append(out, pages.SandboxExitLine{Kind: e.Kind, Host: e.Host, Detail: e.Detail, Count: e.Count, Last: isoTime(e.Last)})
	}
	return out
}
