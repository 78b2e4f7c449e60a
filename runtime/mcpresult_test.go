package runtime

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/mcpclient"
)

// An answer past what a call's record keeps loses its largest blocks, each
// replaced by a note, and stays valid JSON with everything else whole.
func TestMCPOutputLeavesOutLargestBlocks(t *testing.T) {
	big := base64.StdEncoding.EncodeToString(make([]byte, 900<<10)) // 1.2 MB of base64
	content, _ := json.Marshal([]map[string]any{
		{"type": "text", "text": "here it is", "annotations": map[string]any{"priority": 1}},
		{"type": "image", "data": big, "mimeType": "image/png"},
		{"type": "resource_link", "uri": "demo://r/1", "name": "r1"},
	})
	out := mcpOutput(mcpclient.Result{Content: content, Text: "here it is", Meta: json.RawMessage(`{"k":"v"}`)})
	if len(out) > maxOutputBytes || !json.Valid(out) {
		t.Fatalf("record is %d bytes (limit %d), valid %v", len(out), maxOutputBytes, json.Valid(out))
	}
	var rec struct {
		Content []map[string]any `json:"content"`
		Meta    map[string]any   `json:"meta"`
		LeftOut int              `json:"left_out"`
	}
	if err := json.Unmarshal(out, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.LeftOut != 1 || len(rec.Content) != 3 || rec.Meta["k"] != "v" {
		t.Fatalf("record: %+v", rec)
	}
	note, _ := rec.Content[1]["text"].(string)
	if rec.Content[1]["type"] != "text" || !strings.Contains(note, "image image/png of") || !strings.Contains(note, "left out") {
		t.Errorf("the image's place says %q", note)
	}
	if rec.Content[0]["annotations"] == nil || rec.Content[2]["uri"] != "demo://r/1" {
		t.Errorf("the other blocks changed: %+v", rec.Content)
	}

	small := mcpOutput(mcpclient.Result{Content: json.RawMessage(`[{"type":"image","data":"AAAA","mimeType":"image/png"}]`)})
	if strings.Contains(string(small), "left_out") || !strings.Contains(string(small), `"data":"AAAA"`) {
		t.Errorf("a small answer changed: %s", small)
	}
}
