// Package mcpclient is how Subako talks to the MCP servers a version grants:
// it lists a server's tools and calls them over Streamable HTTP, with the
// session's vault credential attached to every request by a function the
// runtime hands in.
//
// A Pool keeps initialized sessions per (server URL, credential id), so
// repeated calls skip the MCP handshake. Errors name the server and say what
// went wrong in words a user can act on (refused credential, no answer in
// time, nothing listening).
//
// This package must never see or keep a secret itself (it only calls the
// attach function on a request bound for the server's own origin), never
// follow a redirect to another origin, and never put a response body of a
// refused request into an error: a server may echo the credential there.
package mcpclient
