package tools

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxURLLength is the longest MCP server URL or function origin, in characters.
const MaxURLLength = 2048

// credentialDetail is what a person reads whenever a config tries to carry a
// secret: where the secret belongs instead.
const credentialDetail = "credentials belong in a vault: a version holds no credential; bind a vault to the session instead"

// credentialFields are field names that, when a config carries them, hold a
// secret; compared case-insensitively.
var credentialFields = []string{
	"headers", "header", "authorization", "auth", "token", "api_key", "apikey",
	"password", "secret", "credentials", "credential", "bearer", "cookie", "cookies",
}

// secretQueryParams are query parameter names that carry a secret in a URL.
var secretQueryParams = []string{
	"token", "access_token", "api_key", "apikey", "key", "secret", "password",
	"sig", "signature", "auth", "code", "client_secret",
}

// secretWords anywhere in a name also mark it ("x-api-key", "refresh_token"):
// a false alarm costs a rename, a miss leaks a secret into every export.
var secretWords = []string{
	"token", "secret", "password", "passwd", "apikey", "api_key", "api-key",
	"signature", "credential", "authorization", "bearer",
}

// looksLikeCredentialField reports whether an unknown field's name suggests a secret.
func looksLikeCredentialField(key string) bool {
	k := strings.ToLower(key)
	return slices.Contains(credentialFields, k) || containsAny(k, secretWords)
}

// looksLikeSecretParam reports whether a URL query parameter's name suggests a secret.
func looksLikeSecretParam(name string) bool {
	n := strings.ToLower(name)
	return slices.Contains(secretQueryParams, n) || containsAny(n, secretWords)
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// urlCredential explains the credential a URL carries, or returns "". It
// names the query parameter but never repeats a value.
func urlCredential(u *url.URL) string {
	if u.User != nil {
		return "the URL carries a user name or password (user:password@host); "
	}
	for name := range u.Query() {
		if looksLikeSecretParam(name) {
			return fmt.Sprintf("the URL carries a secret in its query parameter %s; ", quoteShort(name))
		}
	}
	return ""
}

// maxQuoted keeps a pasted essay from becoming the error message.
const maxQuoted = 40

// quoteShort quotes a value a person typed, cut to maxQuoted characters.
// Never call it on a value that may be a secret.
func quoteShort(s string) string {
	if utf8.RuneCountInString(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	r := []rune(s)
	return strconv.Quote(string(r[:maxQuoted])) + "…"
}
