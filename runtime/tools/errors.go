package tools

import (
	"fmt"
	"strings"
)

// FieldError is one problem with one field of a config. Field is the JSON path
// of the offending field ("sandboxes[0].name", "mcp_servers[1].tool_rules.lookup";
// "" for the whole document), Code a stable machine name, Title a short heading
// and Detail the sentence a person reads under the field.
type FieldError struct {
	Field  string `json:"field"`
	Code   string `json:"code"`
	Title  string `json:"title"`
	Detail string `json:"detail"`
}

// Error gives the field and the detail on one line.
func (e FieldError) Error() string {
	if e.Field == "" {
		return e.Detail
	}
	return e.Field + ": " + e.Detail
}

// ValidationError is every problem Parse found, in document order.
type ValidationError struct {
	Errors []FieldError
}

// Error joins the problems on one line; the console shows them one by one instead.
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		parts[i] = fe.Error()
	}
	noun := "problems"
	if len(parts) == 1 {
		noun = "problem"
	}
	return fmt.Sprintf("tools: config has %d %s: %s", len(parts), noun, strings.Join(parts, "; "))
}

// Codes of FieldError, each with the title shown above its detail. A code
// names one broken rule, so a client can act on it without reading the text.
var titles = map[string]string{
	"invalid_json":         "Config is not valid JSON",
	"config_too_large":     "Config is too large",
	"invalid_text":         "Text that cannot be stored",
	"invalid_type":         "Wrong type",
	"unknown_field":        "Unknown field",
	"duplicate_field":      "Field given twice",
	"credential_in_config": "Credential in config",
	"name_required":        "Name is required",
	"name_too_long":        "Name is too long",
	"name_invalid":         "Name has a character that is not allowed",
	"name_reserved":        "Name is reserved",
	"name_duplicate":       "Name is already used",
	"unknown_builtin":      "Unknown built-in",
	"policy_required":      "Default policy is required",
	"invalid_policy":       "Unknown policy",
	"policy_not_allowed":   "No policy here",
	"tool_name_required":   "Tool name is required",
	"tool_name_too_long":   "Tool name is too long",
	"unknown_tool":         "Unknown tool",
	"url_required":         "URL is required",
	"url_too_long":         "URL is too long",
	"invalid_url":          "Invalid URL",
	"invalid_origin":       "Invalid origin",
	"origin_duplicate":     "Origin listed twice",
	"package_required":     "Package is required",
	"version_required":     "Version is required",
	"unknown_function":     "Unknown function package",
	"skill_required":       "Skill is required",
	"unknown_skill":        "Unknown skill",
	"environment_required": "Environment is required",
	"invalid_environment":  "Unknown environment",
	"unknown_release":      "Unknown release",
	"network_required":     "Network is required",
	"invalid_network":      "Unknown network",
	"allow_required":       "Allowlist is required",
	"invalid_allow":        "Invalid allowlist entry",
	"invalid_resource":     "Invalid resource",
	"over_ceiling":         "Over the server's ceiling",
	"invalid_tools_as":     "Unknown tools setting",
}

// fieldError builds a FieldError with the title of its code.
func fieldError(field, code, detail string) FieldError {
	return FieldError{Field: field, Code: code, Title: titles[code], Detail: detail}
}
