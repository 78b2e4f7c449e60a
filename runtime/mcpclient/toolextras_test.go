package mcpclient_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/mcpclient"
	"github.com/subako/subako/runtime/mcpclient/mcptest"
)

// Discovery keeps a tool's title, annotations, output schema and _meta as
// listed, and skips a tool whose extras pass the description and schema
// limits, naming which and the flag.
func TestDiscoveryKeepsToolExtrasWithinLimits(t *testing.T) {
	big := strings.Repeat("x", 70_000)
	url := mcptest.StartRaw(t, func(string) string {
		return `"result":{"tools":[` +
			`{"name":"whole","title":"Whole Tool","description":"d","inputSchema":{"type":"object"},` +
			`"annotations":{"readOnlyHint":true,"title":"ann"},"outputSchema":{"type":"object","properties":{"n":{"type":"number"}}},` +
			`"_meta":{"vendor/x":1}},` +
			`{"name":"plain","description":"d","inputSchema":{"type":"object"}},` +
			`{"name":"fatmeta","description":"d","inputSchema":{"type":"object"},"_meta":{"k":"` + big + `"}},` +
			`{"name":"longtitle","title":"` + strings.Repeat("t", 9000) + `","description":"d","inputSchema":{"type":"object"}}]}`
	})
	p := newPool(t, mcpclient.Options{})
	d, err := p.Discover(context.Background(), url, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Tools) != 2 || d.Tools[0].Name != "whole" || d.Tools[1].Name != "plain" {
		t.Fatalf("kept %+v; want whole and plain", d.Tools)
	}
	w := d.Tools[0]
	var ann map[string]any
	_ = json.Unmarshal(w.Annotations, &ann)
	if w.Title != "Whole Tool" || ann["readOnlyHint"] != true || ann["title"] != "ann" ||
		!strings.Contains(string(w.OutputSchema), `"n"`) || string(w.Meta) != `{"vendor/x":1}` {
		t.Fatalf("whole kept as %+v (annotations %s, output schema %s, meta %s)", w, w.Annotations, w.OutputSchema, w.Meta)
	}
	if pl := d.Tools[1]; pl.Title != "" || pl.Annotations != nil || pl.OutputSchema != nil || pl.Meta != nil {
		t.Fatalf("a tool that listed no extras got some: %+v", pl)
	}
	want := map[string]string{"fatmeta": "its _meta is 70008 bytes; the limit is 64 KiB (--mcp-max-schema-bytes)",
		"longtitle": "its title is 9000 bytes; the limit is 8 KiB (--mcp-max-description-bytes)"}
	if len(d.Skipped) != 2 {
		t.Fatalf("skipped %+v", d.Skipped)
	}
	for _, s := range d.Skipped {
		if want[s.Name] == "" || !strings.Contains(s.Reason, want[s.Name]) {
			t.Errorf("skipped %s because %q; want %q", s.Name, s.Reason, want[s.Name])
		}
	}
}
