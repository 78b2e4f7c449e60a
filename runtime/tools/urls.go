package tools

import (
	"fmt"
	"net/url"
	"strconv"
	"unicode/utf8"
)

const urlRequired = "url is required: the MCP server's http or https address, such as https://mcp.example.com/orders"

// checkMCPURL checks an MCP server's url: required, absolute http or https,
// and free of credentials. Messages never repeat the URL: it may hold one.
func checkMCPURL(field, s string) []FieldError {
	if s == "" {
		return []FieldError{fieldError(field, "url_required", urlRequired)}
	}
	if utf8.RuneCountInString(s) > MaxURLLength {
		return []FieldError{urlTooLong(field, "url", s)}
	}
	u, err := url.Parse(s)
	if err != nil {
		return []FieldError{fieldError(field, "invalid_url",
			"url is not a valid URL; give an absolute http or https URL, such as https://mcp.example.com/orders")}
	}
	if why := urlCredential(u); why != "" {
		return []FieldError{fieldError(field, "credential_in_config", why+credentialDetail)}
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return []FieldError{fieldError(field, "invalid_url",
			"url must be an absolute http or https URL, such as https://mcp.example.com/orders")}
	}
	if msg := badPort(u); msg != "" {
		return []FieldError{fieldError(field, "invalid_url", "url "+msg)}
	}
	return nil
}

// originExample ends every origin message, so a person sees the expected shape.
const originExample = "; give scheme://host[:port], such as https://api.github.com"

// checkOrigin checks one entry of a function's origins: scheme://host[:port]
// with http or https, nothing after the host, and no credentials.
func checkOrigin(field, s string) []FieldError {
	if s == "" {
		return []FieldError{fieldError(field, "invalid_origin", "origin is empty"+originExample)}
	}
	if utf8.RuneCountInString(s) > MaxURLLength {
		return []FieldError{urlTooLong(field, "origin", s)}
	}
	u, err := url.Parse(s)
	if err != nil {
		return []FieldError{fieldError(field, "invalid_origin", "origin is not a valid URL"+originExample)}
	}
	if why := urlCredential(u); why != "" {
		return []FieldError{fieldError(field, "credential_in_config", why+credentialDetail)}
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return []FieldError{fieldError(field, "invalid_origin", "origin must start with http:// or https:// and name a host"+originExample)}
	}
	if msg := badPort(u); msg != "" {
		return []FieldError{fieldError(field, "invalid_origin", "origin "+msg)}
	}
	if s != u.Scheme+"://"+u.Host {
		return []FieldError{fieldError(field, "invalid_origin",
			"origin must have no path, query or fragment, not even a trailing /"+originExample)}
	}
	return nil
}

// badPort explains a port outside 1-65535, which url.Parse lets through.
func badPort(u *url.URL) string {
	p := u.Port()
	if p == "" {
		return ""
	}
	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
		return "port must be between 1 and 65535"
	}
	return ""
}

func urlTooLong(field, what, s string) FieldError {
	return fieldError(field, "url_too_long", fmt.Sprintf(
		"%s must be at most %d characters; it has %d", what, MaxURLLength, utf8.RuneCountInString(s)))
}
