package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// inspectorCLI is the pinned MCP Inspector's launcher (make deps installs it).
const inspectorCLI = "testdata/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"

// The MCP Inspector CLI in strict mode (--strict: every tool-schema
// portability problem reported on stderr, exit 6 on an error) finds nothing
// to say about a session's tools/list: MCP tools passed on whole with their
// annotations and output schemas, built-ins and a denied grant's absence.
func TestMCPInspectorStrictToolsList(t *testing.T) {
	if _, err := os.Stat(inspectorCLI); err != nil {
		t.Fatalf("the MCP Inspector is not installed (make deps, or npm ci --prefix web/testdata/inspector): %v", err)
	}
	w := newWorld(t, wholeConfig)
	s := w.session(w.vault)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", inspectorCLI, "--cli",
		"--transport", "http", "--header", "Authorization: Bearer "+s.Token,
		"--method", "tools/list", "--strict", w.srv.URL+"/mcp/sessions/"+s.ID)
	// Its catalog and settings go to a HOME of the test's own.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "MCP_CATALOG_PATH="+filepath.Join(home, "mcp.json"), "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("inspector --cli --strict tools/list: %v\nstderr: %s\nstdout: %.2000s", err, stderr.String(), stdout.String())
	}
	if e := strings.ToLower(stderr.String()); strings.Contains(e, "error") || strings.Contains(e, "warn") {
		t.Fatalf("the Inspector reports problems:\n%s", stderr.String())
	}
	var list struct {
		Tools []struct {
			Name         string          `json:"name"`
			Annotations  json.RawMessage `json:"annotations"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &list); err != nil {
		t.Fatalf("the Inspector's answer is not the tools/list JSON: %v\n%.2000s", err, stdout.String())
	}
	names := map[string]bool{}
	for _, tl := range list.Tools {
		names[tl.Name] = true
		if tl.Name == "mcp__everything__get-structured-content" && (len(tl.OutputSchema) == 0 || len(tl.Annotations) == 0) {
			t.Errorf("get-structured-content lacks its output schema or annotations: %+v", tl)
		}
	}
	if !names["mcp__everything__echo"] || !names["mcp__everything__get-structured-content"] || names["mcp__closed__echo"] {
		t.Fatalf("the Inspector saw the wrong tools: %v", names)
	}
	t.Logf("the Inspector (strict) listed %d tools; stderr: %q", len(list.Tools), stderr.String())
}
