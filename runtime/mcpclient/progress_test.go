package mcpclient

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's progress message is cut before it is passed on: a server may
// send a report as large as an answer, and a waiting client's sink holds
// dozens of them.
func TestProgressMessageIsBounded(t *testing.T) {
	var got []Progress
	ctx := WithProgress(context.Background(), func(p Progress) { got = append(got, p) })
	params := &mcp.CallToolParams{Name: "slow"}
	done := withProgressToken(ctx, params)
	defer done()
	token := params.GetProgressToken()
	for _, msg := range []string{"step 1 of 3", strings.Repeat("é", 3<<20)} {
		relayProgress(ctx, &mcp.ProgressNotificationClientRequest{Params: &mcp.ProgressNotificationParams{ProgressToken: token, Progress: 1, Message: msg}})
	}
	if len(got) != 2 || got[0].Message != "step 1 of 3" {
		t.Fatalf("reports: %d, first %q", len(got), got[0].Message)
	}
	if m := got[1].Message; len(m) > MaxProgressMessage+len("…") || !utf8.ValidString(m) || !strings.HasSuffix(m, "…") {
		t.Fatalf("a 6 MiB progress message passed on as %d bytes (valid UTF-8 %v)", len(m), utf8.ValidString(m))
	}
}
