package web_test

import "github.com/subako/subako/runtime/codemode/codemodetest"

// Code mode's programs run in its WebAssembly guest, built on demand for
// these tests (the binary embeds the one `make packages` builds).
func init() { codemodetest.Install() }
