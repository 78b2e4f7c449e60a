package tsgen

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// parseType checks that src is one TypeScript type in the grammar tsgen
// writes (keywords, literals, object types with doc comments, optional and
// quoted keys, index and call signatures, methods, arrays, tuples with a rest,
// unions, intersections, parentheses). It is the fuzz target's oracle, cheap
// enough to run on every input; TestTypesCompileWithTsc checks it agrees with
// tsc on the table.
func parseType(src string) error {
	p := &parser{s: src}
	if err := p.union(0); err != nil {
		return err
	}
	p.space()
	if p.i != len(p.s) {
		return p.errf("trailing text")
	}
	return nil
}

// parseClient checks Client's output: comments, the SubakoError interface, then
// `declare const $: TYPE;`.
func parseClient(src string) error {
	i := strings.Index(src, "declare const $: ")
	if i < 0 {
		return fmt.Errorf("no declare const $")
	}
	p := &parser{s: src[:i]}
	p.space() // the header's comments and the class are fixed text
	body := strings.TrimSuffix(src[i+len("declare const $: "):], ";\n")
	return parseType(body)
}

type parser struct {
	s string
	i int
}

func (p *parser) errf(f string, a ...any) error {
	end := min(p.i+20, len(p.s))
	return fmt.Errorf("at %d (%q): %s", p.i, p.s[p.i:end], fmt.Sprintf(f, a...))
}

// space skips white space and comments; a block comment must end.
func (p *parser) space() error {
	for p.i < len(p.s) {
		switch {
		case strings.HasPrefix(p.s[p.i:], "/*"):
			end := strings.Index(p.s[p.i+2:], "*/")
			if end < 0 {
				return p.errf("comment never ends")
			}
			p.i += 2 + end + 2
		case strings.HasPrefix(p.s[p.i:], "//"):
			for p.i < len(p.s) && p.s[p.i] != '\n' {
				p.i++
			}
		case p.s[p.i] == ' ' || p.s[p.i] == '\n' || p.s[p.i] == '\t':
			p.i++
		default:
			return nil
		}
	}
	return nil
}

func (p *parser) eat(tok string) bool {
	p.space()
	if strings.HasPrefix(p.s[p.i:], tok) {
		p.i += len(tok)
		return true
	}
	return false
}

func (p *parser) union(d int) error {
	if d > 200 {
		return p.errf("too deep")
	}
	for {
		if err := p.postfix(d); err != nil {
			return err
		}
		if !p.eat("|") && !p.eat("&") {
			return nil
		}
	}
}

func (p *parser) postfix(d int) error {
	if err := p.primary(d); err != nil {
		return err
	}
	for p.eat("[]") {
	}
	return nil
}

func (p *parser) primary(d int) error {
	if err := p.space(); err != nil {
		return err
	}
	switch {
	case p.eat("("):
		if err := p.union(d + 1); err != nil {
			return err
		}
		if !p.eat(")") {
			return p.errf("want )")
		}
		return nil
	case p.eat("{"):
		return p.members(d)
	case p.eat("["):
		return p.tuple(d)
	case p.peek() == '"':
		return p.str()
	case p.peek() == '-' || (p.peek() >= '0' && p.peek() <= '9'):
		return p.number()
	}
	for _, kw := range []string{"string", "number", "boolean", "null", "unknown", "never", "void", "true", "false", "Uint8Array", "Blob", "ArrayBuffer"} {
		if strings.HasPrefix(p.s[p.i:], kw) && !isIdentByte(p.at(p.i+len(kw))) {
			p.i += len(kw)
			return nil
		}
	}
	return p.errf("want a type")
}

func (p *parser) peek() byte { return p.at(p.i) }
func (p *parser) at(i int) byte {
	if i < len(p.s) {
		return p.s[i]
	}
	return 0
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func (p *parser) tuple(d int) error {
	if p.eat("]") {
		return nil
	}
	for {
		p.eat("...")
		if err := p.union(d + 1); err != nil {
			return err
		}
		if p.eat("]") {
			return nil
		}
		if !p.eat(",") {
			return p.errf("want , or ]")
		}
	}
}

// members parses an object type's body after its {.
func (p *parser) members(d int) error {
	for {
		if p.eat("}") {
			return nil
		}
		if err := p.space(); err != nil {
			return err
		}
		switch {
		case p.eat("[key: string]:"):
			if err := p.union(d + 1); err != nil {
				return err
			}
		case p.peek() == '(':
			if err := p.call(d); err != nil {
				return err
			}
		default:
			if err := p.key(); err != nil {
				return err
			}
			p.eat("?")
			if p.eat(":") {
				if err := p.union(d + 1); err != nil {
					return err
				}
			} else if err := p.call(d); err != nil {
				return err
			}
		}
		if !p.eat(";") && !p.eat(",") {
			if p.space(); p.peek() != '}' {
				return p.errf("want ;")
			}
		}
	}
}

// call parses `(input?: T): Promise<T>`.
func (p *parser) call(d int) error {
	if !p.eat("(input") {
		return p.errf("want (input")
	}
	p.eat("?")
	if !p.eat(":") {
		return p.errf("want :")
	}
	if err := p.union(d + 1); err != nil {
		return err
	}
	if !p.eat("): Promise<") {
		return p.errf("want ): Promise<")
	}
	if err := p.union(d + 1); err != nil {
		return err
	}
	if !p.eat(">") {
		return p.errf("want >")
	}
	return nil
}

func (p *parser) key() error {
	if p.peek() == '"' {
		return p.str()
	}
	start := p.i
	for p.i < len(p.s) && isIdentByte(p.s[p.i]) {
		p.i++
	}
	if p.i == start || (p.s[start] >= '0' && p.s[start] <= '9') {
		return p.errf("want a key")
	}
	return nil
}

// str parses a double-quoted string literal as JSON writes it.
func (p *parser) str() error {
	p.i++
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return nil
		case c == '\\':
			p.i += 2
		case c < 0x20:
			return p.errf("control character in a string")
		default:
			r, n := utf8.DecodeRuneInString(p.s[p.i:])
			if r == utf8.RuneError && n == 1 {
				return p.errf("invalid UTF-8 in a string")
			}
			p.i += n
		}
	}
	return p.errf("string never ends")
}

func (p *parser) number() error {
	start := p.i
	if p.peek() == '-' {
		p.i++
	}
	digits := 0
	for p.i < len(p.s) && strings.IndexByte("0123456789.eE+-", p.s[p.i]) >= 0 {
		if p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			digits++
		}
		p.i++
	}
	if digits == 0 {
		p.i = start
		return p.errf("want a number")
	}
	return nil
}
