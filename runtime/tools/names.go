package tools

import (
	"fmt"
	"slices"
	"unicode/utf8"
)

// MaxNameLength is the longest grant name, in characters.
const MaxNameLength = 32

// reservedName is kept free for the runtime's own use in full tool names.
const reservedName = "parent"

// kindNouns name each kind the way a person reads it in a message.
var kindNouns = map[string]string{
	KindMCP:     "MCP server",
	KindSkill:   "skill",
	KindSandbox: "sandbox",
	KindFn:      "function",
	KindBuiltin: "built-in",
	KindClient:  "client",
}

// CheckName checks one grant name as a person types it in the editor: kind is
// one of the Kind constants, others the names of the version's other grants
// of the same kind. Each broken rule is its own FieldError, with Field "name";
// nil means the name is fine.
func CheckName(kind, name string, others []string) []FieldError {
	return checkName("name", kind, name, others)
}

func checkName(field, kind, name string, others []string) []FieldError {
	if kind == KindBuiltin {
		return checkBuiltinName(field, name, others)
	}
	if name == "" {
		return []FieldError{fieldError(field, "name_required", fmt.Sprintf(
			"name is required: 1 to %d lowercase letters a-z, digits 0-9 and -", MaxNameLength))}
	}
	var errs []FieldError
	if n := utf8.RuneCountInString(name); n > MaxNameLength {
		errs = append(errs, fieldError(field, "name_too_long", fmt.Sprintf(
			"name must be at most %d characters; it has %d", MaxNameLength, n)))
	}
	if r, pos, ok := firstBadNameRune(name); ok {
		errs = append(errs, fieldError(field, "name_invalid", fmt.Sprintf(
			"name may contain only lowercase letters a-z, digits 0-9 and -; found %q at position %d", string(r), pos)))
	}
	if name == reservedName {
		errs = append(errs, fieldError(field, "name_reserved",
			reservedName+" is reserved; choose another name"))
	}
	if slices.Contains(others, name) {
		errs = append(errs, duplicateName(field, kind, name))
	}
	return errs
}

// firstBadNameRune finds the first character outside a-z, 0-9 and -, with
// its 1-based position in characters (not bytes), as a person counts.
func firstBadNameRune(name string) (rune, int, bool) {
	pos := 0
	for _, r := range name {
		pos++
		if !isNameRune(r) {
			return r, pos, true
		}
	}
	return 0, 0, false
}

// isNameRune keeps "_" out of grant names: "__" separates the parts of a
// full tool name, so a name without "_" splits one way only.
func isNameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-'
}

// checkBuiltinName allows only the fixed built-in names; their "_" is safe
// because ParseFullName knows them.
func checkBuiltinName(field, name string, others []string) []FieldError {
	switch {
	case name == "":
		return []FieldError{fieldError(field, "name_required", "name is required: ask_user or session")}
	case name != BuiltinAskUser && name != BuiltinSession:
		return []FieldError{fieldError(field, "unknown_builtin", fmt.Sprintf(
			"name must be ask_user or session; found %q", name))}
	case slices.Contains(others, name):
		return []FieldError{duplicateName(field, KindBuiltin, name)}
	}
	return nil
}

func duplicateName(field, kind, name string) FieldError {
	return fieldError(field, "name_duplicate", fmt.Sprintf(
		"name %q is already used by another %s grant in this version", name, kindNouns[kind]))
}
