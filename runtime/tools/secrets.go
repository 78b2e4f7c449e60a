package tools

import (
	"fmt"
	"net/url"
	"regexp"
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
// looks at the user info, the query and the fragment (parameter names that
// suggest a secret, and values shaped like a well-known token), and the path
// (token-shaped segments). It names where the secret is, and the parameter
// when its name is safe to show, but never repeats a value.
func urlCredential(u *url.URL) string {
	if u.User != nil {
		return "the URL carries a user name or password (user:password@host); "
	}
	if why := paramsCredential(u.RawQuery, "query", true); why != "" {
		return why
	}
	if why := paramsCredential(u.EscapedFragment(), "fragment", false); why != "" {
		return why
	}
	if kind := tokenKind(u.Fragment); kind != "" {
		return "the URL carries what looks like " + kind + " in its fragment; "
	}
	if kind := tokenKind(u.Opaque + u.Path); kind != "" {
		return "the URL carries what looks like " + kind + " in its path; "
	}
	return ""
}

// paramsCredential explains the credential a query string (or a fragment
// written like one) carries, or returns "". A parameter with a secret's name
// counts even when empty for the query (?token=), but only with a value for
// the fragment, where a bare name is usually an anchor (#token-refresh).
// Pairs are split by hand so a malformed escape cannot hide one.
func paramsCredential(raw, where string, bareNames bool) string {
	for pair := range strings.FieldsFuncSeq(raw, func(r rune) bool { return r == '&' || r == ';' }) {
		rawName, rawValue, _ := strings.Cut(pair, "=")
		name, value := unescapeQuery(rawName), unescapeQuery(rawValue)
		if kind := tokenKind(name); kind != "" {
			return fmt.Sprintf("the URL carries what looks like %s in its %s; ", kind, where)
		}
		if looksLikeSecretParam(name) && (bareNames || value != "") {
			return fmt.Sprintf("the URL carries a secret in its %s parameter %s; ", where, quoteShort(name))
		}
		if kind := tokenKind(value); kind != "" {
			return fmt.Sprintf("the URL carries what looks like %s in its %s parameter %s; ", kind, where, quoteShort(name))
		}
	}
	return ""
}

// unescapeQuery decodes a query name or value, or keeps it as written when
// its escapes are malformed.
func unescapeQuery(s string) string {
	if d, err := url.QueryUnescape(s); err == nil {
		return d
	}
	return s
}

// tokenShapes are well-known credential formats, recognised by their
// prefixes and lengths so ordinary words, ids and UUIDs do not match.
var tokenShapes = []struct {
	kind string
	re   *regexp.Regexp
	// mixed, when set, also asks for a digit, an upper- and a lower-case
	// letter, which a random key has and a slug like sk-learn-... lacks.
	mixed bool
}{
	{"a JWT", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*`), false},
	{"a GitHub token", regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`), false},
	{"an API key", regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{40,}`), true}, // real keys run to 48 and far more
	{"a Slack token", regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}`), false},
	{"an AWS access key ID", regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), false},
	{"a Google API key", regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`), false},
}

// tokenKind names the kind of credential s holds ("a GitHub token"), or
// returns "".
func tokenKind(s string) string {
	if len(s) < 14 {
		return "" // shorter than any shape below
	}
	for _, t := range tokenShapes {
		for _, m := range t.re.FindAllString(s, -1) {
			if !t.mixed || mixedCase(m) {
				return t.kind
			}
		}
	}
	return ""
}

// mixedCase reports whether s has a digit, an upper- and a lower-case letter.
func mixedCase(s string) bool {
	return strings.ContainsAny(s, "0123456789") &&
		strings.ContainsAny(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") &&
		strings.ContainsAny(s, "abcdefghijklmnopqrstuvwxyz")
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
