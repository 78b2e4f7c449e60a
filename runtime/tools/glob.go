package tools

import "strings"

// Glob reports whether s matches pattern, where * matches any run of
// characters (none included, / and spaces too) and every other character
// matches itself, case and all. There are no ? classes or escapes: the one
// wildcard keeps matching linear. The pattern's literal pieces between stars
// are found left to right, each at its first place after the previous one,
// which is exactly right for * alone and never backtracks: strings.Index per
// piece, so the time is bounded by len(s) × the number of pieces, whatever
// the input (a 1 MiB "aaaa…" against *a*a*a*a*a*a*b takes microseconds).
func Glob(pattern, s string) bool {
	star := strings.IndexByte(pattern, '*')
	if star < 0 {
		return pattern == s
	}
	if !strings.HasPrefix(s, pattern[:star]) {
		return false
	}
	s = s[star:]
	rest := pattern[star+1:]
	for {
		next := strings.IndexByte(rest, '*')
		if next < 0 {
			// The last piece must end the string, after what the others took.
			return len(s) >= len(rest) && strings.HasSuffix(s, rest)
		}
		piece := rest[:next]
		rest = rest[next+1:]
		i := strings.Index(s, piece)
		if i < 0 {
			return false
		}
		s = s[i+len(piece):]
	}
}

// shellControl are the characters through which one sh -c string can run
// more than the command it names: ; & | and newlines chain commands, < and >
// redirect (and can overwrite files), ( ) $ and ` start subshells and
// substitutions. They count wherever they are, quoted or not: a command
// pattern does not parse shell quoting, so it cannot be fooled by it.
const shellControl = ";&|<>()$`\n\r"

// HasShellControl reports whether a command holds any shell control character.
func HasShellControl(cmd string) bool { return strings.ContainsAny(cmd, shellControl) }

// normalizeCommand trims spaces and tabs around a command and turns each run
// of them inside into one space, so "git  status" reads as "git status".
func normalizeCommand(cmd string) string {
	return strings.Join(strings.FieldsFunc(cmd, func(r rune) bool { return r == ' ' || r == '\t' }), " ")
}

// CommandMatches reports whether a sandbox command matches a command pattern
// (a Glob, matched against the whole normalized command; a pattern ending in
// " *" also matches the bare command, so "git *" matches "git").
//
// The semantics differ by what the rule would do, so that no trick turns an
// ask into an allow:
//
//   - A rule that lets a call through (restrictive false: allow) matches only
//     a simple command: none of ; & | < > ( ) $ ` or a newline anywhere (even
//     quoted), and no environment variables set by the call (PATH,
//     LD_PRELOAD or GIT_SSH_COMMAND change what runs). "git status; rm -rf /"
//     does not match "git *". operators true lifts both: the pattern is then
//     matched against the whole command text as it is.
//   - A rule that holds a call back (restrictive true: ask or deny) matches
//     the whole command or any piece of it between control characters, so
//     "rm *" catches "git status; rm -rf /" and "echo $(rm -rf /)".
func CommandMatches(pattern string, operators bool, cmd string, env, restrictive bool) bool {
	norm := normalizeCommand(cmd)
	whole := commandGlob(pattern, norm)
	if !restrictive {
		if operators {
			return whole
		}
		return whole && !env && !HasShellControl(cmd)
	}
	if whole {
		return true
	}
	for _, piece := range strings.FieldsFunc(cmd, func(r rune) bool { return strings.ContainsRune(shellControl, r) }) {
		if p := normalizeCommand(piece); p != "" && commandGlob(pattern, p) {
			return true
		}
	}
	return false
}

func commandGlob(pattern, cmd string) bool {
	if Glob(pattern, cmd) {
		return true
	}
	bare, ok := strings.CutSuffix(pattern, " *")
	return ok && Glob(bare, cmd)
}
