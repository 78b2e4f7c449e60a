// Package vault keeps credential secrets encrypted at rest and decides which
// credential an outgoing request gets.
//
// A secret is sealed with AES-256-GCM under the keyring's current key, with the
// credential's id as additional data, so a ciphertext copied onto another row
// does not open. Match picks the credential whose URL prefix is the most
// specific one covering a URL, and Apply puts it on the request.
//
// This package must never log or format a secret (errors name ids and fields,
// never values), and never attach a credential to a URL its prefix does not
// cover: an opened secret is meant for Apply, on the request the runtime is
// about to send, and nothing else.
package vault
