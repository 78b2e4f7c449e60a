// Package tools reads, checks, lists and compares an agent version's tools: the
// agent config of API.md (MCP servers, skills, sandboxes, functions, built-ins),
// its grant names, its policies, the full tool names the model sees
// (<kind>__<grant>__<tool>) and the input schemas of the fixed tools.
//
// It is pure: no database, no network, no HTTP. Whatever it needs to know about
// the installation (skills, releases, function manifests) it asks a Catalog the
// caller supplies, so the console's live field checks, the API and the CLI all
// get the same answers.
//
// It must never let a credential into a version: an Authorization header, a
// token in a URL or a secret-looking field is refused, and no error message it
// writes repeats the value of a field that might hold a secret.
package tools
