package runtime

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/subako/subako/runtime/mcpclient"
)

// mcpOutput is how an MCP server's answer is recorded, and so what
// ToolCall.get and the session's MCP endpoint pass on: the server's content
// list whole (text, image, audio, resource_link, embedded resources, each
// with its annotations and _meta), its structuredContent, isError and
// _meta, plus the text blocks joined for readers that want only text.
//
// The record keeps at most maxOutputBytes. An answer over it (the server's
// own is bounded by --mcp-max-response-bytes, and base64 images count
// against both) has its largest blocks left out, biggest first, each
// replaced by a text block saying what was there, until it fits; left_out
// counts them. The rest stays whole and valid, which clipping the JSON
// would not leave.
func mcpOutput(res mcpclient.Result) json.RawMessage {
	rec := mcpRecord{Content: res.Content, Text: res.Text, Structured: res.Structured, IsError: res.IsError, Meta: res.Meta}
	out, _ := json.Marshal(rec)
	if len(out) <= maxOutputBytes {
		return out
	}
	var blocks []map[string]json.RawMessage
	if json.Unmarshal(res.Content, &blocks) != nil {
		return out
	}
	left := map[int]bool{}
	for len(out) > maxOutputBytes {
		i, n := largestBlock(blocks, left)
		if i < 0 || n < minLeftOut {
			break
		}
		blocks[i], left[i] = leftOutBlock(blocks[i], n), true
		rec.LeftOut++
		rec.Content, _ = json.Marshal(blocks)
		rec.Text = blockTexts(blocks)
		out, _ = json.Marshal(rec)
	}
	return out
}

// mcpRecord is the recorded output of an MCP server's tool (docs/api.md).
type mcpRecord struct {
	Content    json.RawMessage `json:"content"`
	Text       string          `json:"text"`
	Structured json.RawMessage `json:"structured"`
	IsError    bool            `json:"is_error"`
	Meta       json.RawMessage `json:"meta,omitempty"`
	LeftOut    int             `json:"left_out,omitempty"`
}

// minLeftOut: blocks smaller than this are never left out; an answer made
// of many small blocks is clipped as any other output.
const minLeftOut = 1 << 10

func largestBlock(blocks []map[string]json.RawMessage, left map[int]bool) (int, int) {
	at, max := -1, 0
	for i, b := range blocks {
		if left[i] {
			continue
		}
		n := 0
		for _, v := range b {
			n += len(v)
		}
		if n > max {
			at, max = i, n
		}
	}
	return at, max
}

// leftOutBlock is the text block standing for a block too large to keep.
func leftOutBlock(b map[string]json.RawMessage, size int) map[string]json.RawMessage {
	var typ, mime, uri string
	_ = json.Unmarshal(b["type"], &typ)
	_ = json.Unmarshal(b["mimeType"], &mime)
	if r, ok := b["resource"]; ok {
		var rc struct {
			URI      string `json:"uri"`
			MIMEType string `json:"mimeType"`
		}
		_ = json.Unmarshal(r, &rc)
		uri, mime = rc.URI, rc.MIMEType
	}
	what := typ
	if mime != "" {
		what += " " + mime
	}
	if uri != "" {
		what += " " + uri
	}
	text := fmt.Sprintf("[%s of %d bytes left out: a call's recorded output keeps at most %d bytes]", what, size, maxOutputBytes)
	t, _ := json.Marshal(text)
	return map[string]json.RawMessage{"type": json.RawMessage(`"text"`), "text": t}
}

func blockTexts(blocks []map[string]json.RawMessage) string {
	var texts []string
	for _, b := range blocks {
		if string(b["type"]) != `"text"` {
			continue
		}
		var t string
		if json.Unmarshal(b["text"], &t) == nil {
			texts = append(texts, t)
		}
	}
	return strings.Join(texts, "\n")
}
