// Package mcpclient is how Subako talks to the MCP servers a version grants:
// it lists a server's tools and calls them over Streamable HTTP, with the
// session's vault credential attached to every request by a function the
// runtime hands in.
//
// A Pool keeps initialized sessions per (server URL, session key), so
// repeated calls skip the MCP handshake; the caller's key decides who shares
// an upstream session. Errors name the server and say what went wrong in
// words a user can act on (refused credential, no answer in time, nothing
// listening, an address the server may not reach).
//
// Connections go only to public addresses unless the pool is told to allow
// private ones (see package egress).
//
// This package must never see or keep a secret itself (it only calls the
// attach function on a request bound for the server's own origin), never
// follow a redirect to another origin, and never put a response body of a
// refused request into an error: a server may echo the credential there.
package mcpclient
