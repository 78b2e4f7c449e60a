// Package docs embeds Subako's documentation so the running server can
// search it (people's /mcp search and fetch, docs/code-mode.md).
package docs

import "embed"

// FS holds docs/*.md.
//
//go:embed *.md
var FS embed.FS
