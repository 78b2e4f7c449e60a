package handlers

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/tools"
)

// callResult passes an MCP server's recorded answer on whole, a tool's own
// failure too, and says so when the record was cut rather than pass on
// the cut text as the result.
func TestCallResultPassesTheServersAnswerOnWhole(t *testing.T) {
	rec := `{"content":[{"type":"text","text":"hi","annotations":{"priority":1}},{"type":"image","data":"AAAA","mimeType":"image/png"},` +
		`{"type":"resource_link","uri":"demo://r/1","name":"r1"}],"text":"hi","structured":{"n":1},"is_error":false,"meta":{"k":"v"}}`
	call := runtime.ToolCallView{ID: "call_1", Kind: tools.KindMCP, Status: runtime.CallSucceeded, Output: json.RawMessage(rec)}
	res := callResult(call)
	got, _ := json.Marshal(res)
	want := `{"_meta":{"k":"v"},"content":[{"type":"text","text":"hi","annotations":{"priority":1}},{"type":"image","mimeType":"image/png","data":"AAAA"},` +
		`{"type":"resource_link","uri":"demo://r/1","name":"r1"}],"structuredContent":{"n":1}}`
	if string(got) != want {
		t.Fatalf("result\n %s\nwant\n %s", got, want)
	}

	failed := call
	failed.Status, failed.Error = runtime.CallFailed, "the tool answered with an error: boom"
	failed.Output = json.RawMessage(`{"content":[{"type":"text","text":"boom"}],"text":"boom","structured":null,"is_error":true}`)
	if res := callResult(failed); !res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "boom" {
		t.Fatalf("a tool's own failure: %+v", res)
	}

	cut := call
	cut.OutputTruncated, cut.Output = true, json.RawMessage(`"{\"content\":[{\"type\":\"text\",\"text\":\"aaaa`)
	if res := callResult(cut); !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "cut to the 1 MiB") {
		t.Fatalf("a cut record: %+v", res)
	}
}
