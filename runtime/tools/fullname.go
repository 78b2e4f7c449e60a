package tools

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// nameSep separates the kind, the grant and the tool in a full tool name.
const nameSep = "__"

// kinds lists every kind of tool source.
var kinds = []string{KindMCP, KindSkill, KindSandbox, KindFn, KindBuiltin, KindClient}

// ErrToolName marks a string that is not a full tool name; a model that calls
// one gets a refusal, not a server error.
var ErrToolName = errors.New("not a tool name")

// FullName is the name a model calls a tool by: <kind>__<grant>__<tool>.
func FullName(kind, grant, tool string) string {
	return kind + nameSep + grant + nameSep + tool
}

// ParseFullName splits a full tool name into its kind, grant and tool. The
// tool is everything after the second "__", so it may itself hold "__"; the
// grant must be a well-formed grant name (or a built-in's name). Errors wrap
// ErrToolName.
func ParseFullName(s string) (kind, grant, tool string, err error) {
	kind, rest, ok := strings.Cut(s, nameSep)
	if !ok {
		return "", "", "", toolNameError(s, "it has no "+nameSep+"; a tool name is <kind>__<grant>__<tool>")
	}
	if !slices.Contains(kinds, kind) {
		return "", "", "", toolNameError(s, fmt.Sprintf("unknown kind %s; kinds are %s",
			quoteShort(kind), listWords(kinds, "and")))
	}
	grant, tool, ok = strings.Cut(rest, nameSep)
	if !ok {
		return "", "", "", toolNameError(s, "it has no tool part; a tool name is <kind>__<grant>__<tool>")
	}
	if why := grantNameProblem(kind, grant); why != "" {
		return "", "", "", toolNameError(s, why)
	}
	if tool == "" {
		return "", "", "", toolNameError(s, "its tool part is empty")
	}
	return kind, grant, tool, nil
}

// grantNameProblem checks the form of a grant name only: a full name may
// come from a model, and whether the grant exists is the caller's question.
func grantNameProblem(kind, grant string) string {
	if kind == KindBuiltin {
		if grant != BuiltinAskUser && grant != BuiltinSession {
			return fmt.Sprintf("unknown built-in %s; built-ins are ask_user and session", quoteShort(grant))
		}
		return ""
	}
	if grant == "" || utf8.RuneCountInString(grant) > MaxNameLength {
		return fmt.Sprintf("its grant name must be 1 to %d characters", MaxNameLength)
	}
	if r, pos, bad := firstBadNameRune(grant); bad {
		return fmt.Sprintf("its grant name may contain only a-z, 0-9 and -; found %q at position %d", string(r), pos)
	}
	return ""
}

func toolNameError(s, why string) error {
	return fmt.Errorf("tools: %s is %w: %s", quoteShort(s), ErrToolName, why)
}
