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

// Canonical parses a config and returns it as Export writes it, which is the
// form a version stores. The size limit applies to that stored form too:
// publishing parses what was stored, so a config that grows past the limit
// when indented must be refused when saved, not when published.
func Canonical(data []byte, cat Catalog) ([]byte, error) {
	cfg, err := Parse(data, cat)
	if err != nil {
		return nil, err
	}
	out, err := Export(cfg)
	if err != nil {
		return nil, err
	}
	if len(out) > MaxConfigBytes {
		return nil, &ValidationError{Errors: []FieldError{fieldError("", "config_too_large", fmt.Sprintf(
			"config must be at most %d bytes (1 MiB) as stored, indented as Export writes it; stored, this one has %d",
			MaxConfigBytes, len(out)))}}
	}
	return out, nil
}
