package codemode_test

import "github.com/subako/subako/runtime/codemode/codemodetest"

// Programs run in the WebAssembly guest, built on demand for these tests.
func init() { codemodetest.Install() }
