package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Export writes a config as indented JSON in API.md's field order, leaving
// out kinds without grants, empty tool_rules and empty origins, so that
// Parse(Export(c)) gives back c and an imported file exports as it was.
func Export(cfg Config) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	// URLs keep their & and < as typed: the file is read by people and
	// imported again, never embedded in HTML.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(cfg); err != nil {
		return nil, fmt.Errorf("tools: export: %w", err)
	}
	return buf.Bytes(), nil
}
