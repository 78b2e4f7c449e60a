// Package fn runs Subako function packages: WASI preview1 commands plus a
// manifest, compiled once with wazero and instantiated fresh for every call, with
// no file system, no environment, a deadline and a memory limit. The only way out
// is the host import subako.http_fetch, which reaches the call's granted origins,
// checks every redirect hop, drops credentials the guest sets and attaches the
// session's own after the request has left guest memory.
//
// It must never store anything (the caller's store owns installed packages),
// serve HTTP, or let a credential reach a guest's memory, output or stderr.
package fn
