package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// sedAddr is a line number, $ or a /regexp/.
type sedAddr struct {
	line int
	last bool
	re   *regexp.Regexp
}

type sedCmd struct {
	a1, a2   *sedAddr
	neg      bool
	inRange  bool
	op       byte
	re       *regexp.Regexp
	repl     string
	global   bool
	nth      int
	print    bool
	text     string
	from, to []rune
	block    []*sedCmd // for { … }
}

type sedParser struct {
	s   string
	i   int
	ere bool
}

func (p *sedParser) eof() bool { return p.i >= len(p.s) }
func (p *sedParser) peek() byte {
	if p.eof() {
		return 0
	}
	return p.s[p.i]
}
func (p *sedParser) skipSpace() {
	for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// delimited reads up to the unescaped delimiter d; "\d" becomes d.
func (p *sedParser) delimited(d byte) (string, error) {
	var b strings.Builder
	for !p.eof() {
		ch := p.s[p.i]
		p.i++
		if ch == '\\' && !p.eof() {
			n := p.s[p.i]
			p.i++
			if n == d {
				b.WriteByte(d)
			} else if n == 'n' {
				b.WriteString("\\n")
			} else {
				b.WriteByte('\\')
				b.WriteByte(n)
			}
			continue
		}
		if ch == d {
			return b.String(), nil
		}
		b.WriteByte(ch)
	}
	return "", fmt.Errorf("unterminated `s' command")
}

func (p *sedParser) regexp(src string, flags string) (*regexp.Regexp, error) {
	if !p.ere {
		src = bre(src)
	}
	return regexp.Compile(flags + src)
}

func (p *sedParser) addr() (*sedAddr, error) {
	switch ch := p.peek(); {
	case ch == '$':
		p.i++
		return &sedAddr{last: true}, nil
	case ch >= '0' && ch <= '9':
		j := p.i
		for !p.eof() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		n, _ := strconv.Atoi(p.s[j:p.i])
		return &sedAddr{line: n}, nil
	case ch == '/' || ch == '\\':
		if ch == '\\' {
			p.i++
		}
		d := p.s[p.i]
		p.i++
		src, err := p.delimited(d)
		if err != nil {
			return nil, err
		}
		flags := ""
		if p.peek() == 'I' {
			p.i++
			flags = "(?i)"
		}
		re, err := p.regexp(src, flags)
		if err != nil {
			return nil, err
		}
		return &sedAddr{re: re}, nil
	}
	return nil, nil
}

func (p *sedParser) script() ([]*sedCmd, error) {
	var cmds []*sedCmd
	for {
		for !p.eof() && strings.IndexByte(" \t\n;", p.s[p.i]) >= 0 {
			p.i++
		}
		if p.eof() || p.peek() == '}' {
			return cmds, nil
		}
		cmd := &sedCmd{}
		var err error
		if cmd.a1, err = p.addr(); err != nil {
			return nil, err
		}
		if cmd.a1 != nil && p.peek() == ',' {
			p.i++
			if cmd.a2, err = p.addr(); err != nil || cmd.a2 == nil {
				return nil, fmt.Errorf("unexpected `,'")
			}
		}
		p.skipSpace()
		if p.peek() == '!' {
			cmd.neg = true
			p.i++
			p.skipSpace()
		}
		if p.eof() {
			return nil, fmt.Errorf("missing command")
		}
		cmd.op = p.s[p.i]
		p.i++
		switch cmd.op {
		case '{':
			if cmd.block, err = p.script(); err != nil {
				return nil, err
			}
			if p.peek() != '}' {
				return nil, fmt.Errorf("unmatched `{'")
			}
			p.i++
		case 's':
			if p.eof() {
				return nil, fmt.Errorf("unterminated `s' command")
			}
			d := p.s[p.i]
			p.i++
			src, err := p.delimited(d)
			if err != nil {
				return nil, err
			}
			if cmd.repl, err = p.delimited(d); err != nil {
				return nil, err
			}
			flags := ""
			for !p.eof() && strings.IndexByte("gpiI0123456789", p.s[p.i]) >= 0 {
				switch ch := p.s[p.i]; {
				case ch == 'g':
					cmd.global = true
				case ch == 'p':
					cmd.print = true
				case ch == 'i' || ch == 'I':
					flags = "(?i)"
				default:
					cmd.nth = cmd.nth*10 + int(ch-'0')
				}
				p.i++
			}
			if cmd.re, err = p.regexp(src, flags); err != nil {
				return nil, err
			}
		case 'y':
			d := p.s[p.i]
			p.i++
			a, err := p.delimited(d)
			if err != nil {
				return nil, err
			}
			b, err := p.delimited(d)
			if err != nil {
				return nil, err
			}
			cmd.from, cmd.to = []rune(strings.ReplaceAll(a, `\n`, "\n")), []rune(strings.ReplaceAll(b, `\n`, "\n"))
			if len(cmd.from) != len(cmd.to) {
				return nil, fmt.Errorf("strings for `y' command are different lengths")
			}
		case 'a', 'i', 'c':
			if p.peek() == '\\' {
				p.i++
				if p.peek() == '\n' {
					p.i++
				}
			}
			p.skipSpace()
			j := p.i
			for !p.eof() && p.s[p.i] != '\n' {
				p.i++
			}
			cmd.text = p.s[j:p.i]
		case 'd', 'p', 'q', 'Q', '=', 'n', 'N', 'D', 'P', 'h', 'H', 'g', 'G', 'x':
		default:
			return nil, fmt.Errorf("unknown command: `%c'", cmd.op)
		}
		cmds = append(cmds, cmd)
	}
}

// sedState is one run over the input.
type sedState struct {
	c       *cmdCtx
	quiet   bool
	lines   []string
	n       int // index of the next line to read
	line    int // current line number
	hold    string
	out     *bufio.Writer
	appends []string
	quit    bool
}

func (s *sedState) matches(a *sedAddr, pat string) bool {
	switch {
	case a.last:
		return s.n >= len(s.lines)
	case a.re != nil:
		return a.re.MatchString(pat)
	}
	return a.line == s.line
}

func (s *sedState) selected(cmd *sedCmd, pat string) bool {
	ok := true
	switch {
	case cmd.a1 == nil:
	case cmd.a2 == nil:
		ok = s.matches(cmd.a1, pat)
	case cmd.inRange:
		if cmd.a2.re == nil && !cmd.a2.last && s.line >= cmd.a2.line || s.matches(cmd.a2, pat) {
			cmd.inRange = false
		}
		if cmd.a2.re == nil && !cmd.a2.last && s.line > cmd.a2.line {
			ok = false
		}
	default:
		ok = s.matches(cmd.a1, pat)
		if ok {
			cmd.inRange = !(cmd.a2.re == nil && !cmd.a2.last && cmd.a2.line <= s.line)
		}
	}
	return ok != cmd.neg
}

// expand writes sed's replacement: & the match, \1-\9 groups, \n newline.
func expandRepl(repl, src string, m []int) string {
	var b strings.Builder
	for i := 0; i < len(repl); i++ {
		ch := repl[i]
		switch {
		case ch == '&':
			b.WriteString(src[m[0]:m[1]])
		case ch == '\\' && i+1 < len(repl):
			i++
			n := repl[i]
			switch {
			case n >= '0' && n <= '9':
				g := int(n - '0')
				if 2*g+1 < len(m) && m[2*g] >= 0 {
					b.WriteString(src[m[2*g]:m[2*g+1]])
				}
			case n == 'n':
				b.WriteByte('\n')
			case n == 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(n)
			}
		default:
			b.WriteByte(ch)
		}
	}
	return b.String()
}

// exec runs cmds on the pattern space; it reports whether to end the cycle.
func (s *sedState) exec(cmds []*sedCmd, pat *string) (endCycle, deleted bool) {
	for _, cmd := range cmds {
		if !s.selected(cmd, *pat) {
			continue
		}
		switch cmd.op {
		case '{':
			if end, del := s.exec(cmd.block, pat); end {
				return end, del
			}
		case 's':
			count := 0
			done := false
			var b strings.Builder
			last := 0
			for _, m := range cmd.re.FindAllStringSubmatchIndex(*pat, -1) {
				count++
				if done || cmd.nth > 0 && count < cmd.nth || !cmd.global && cmd.nth == 0 && count > 1 || cmd.nth > 0 && !cmd.global && count > cmd.nth {
					continue
				}
				b.WriteString((*pat)[last:m[0]])
				b.WriteString(expandRepl(cmd.repl, *pat, m))
				last = m[1]
				if !cmd.global {
					done = true
				}
			}
			if count > 0 && (cmd.nth == 0 || count >= cmd.nth) {
				b.WriteString((*pat)[last:])
				*pat = b.String()
				if cmd.print {
					fmt.Fprintln(s.out, *pat)
				}
			}
		case 'y':
			*pat = strings.Map(func(r rune) rune {
				for i, f := range cmd.from {
					if f == r {
						return cmd.to[i]
					}
				}
				return r
			}, *pat)
		case 'd':
			return true, true
		case 'D':
			if i := strings.IndexByte(*pat, '\n'); i >= 0 {
				*pat = (*pat)[i+1:]
				return true, false
			}
			return true, true
		case 'p':
			fmt.Fprintln(s.out, *pat)
		case 'P':
			first, _, _ := strings.Cut(*pat, "\n")
			fmt.Fprintln(s.out, first)
		case '=':
			fmt.Fprintln(s.out, s.line)
		case 'a':
			s.appends = append(s.appends, cmd.text)
		case 'i':
			fmt.Fprintln(s.out, cmd.text)
		case 'c':
			if cmd.a2 == nil || !cmd.inRange {
				fmt.Fprintln(s.out, cmd.text)
			}
			return true, true
		case 'q':
			s.quit = true
			return true, false
		case 'Q':
			s.quit = true
			return true, true
		case 'n':
			if s.n >= len(s.lines) {
				s.quit = true
				return true, false
			}
			if !s.quiet {
				fmt.Fprintln(s.out, *pat)
			}
			s.flushAppends()
			*pat = s.lines[s.n]
			s.n++
			s.line++
		case 'N':
			if s.n >= len(s.lines) {
				s.quit = true
				return true, false
			}
			*pat += "\n" + s.lines[s.n]
			s.n++
			s.line++
		case 'h':
			s.hold = *pat
		case 'H':
			s.hold += "\n" + *pat
		case 'g':
			*pat = s.hold
		case 'G':
			*pat += "\n" + s.hold
		case 'x':
			*pat, s.hold = s.hold, *pat
		}
	}
	return false, false
}

func (s *sedState) flushAppends() {
	for _, a := range s.appends {
		fmt.Fprintln(s.out, a)
	}
	s.appends = s.appends[:0]
}

func cmdSed(c *cmdCtx) int {
	f, ok := c.parse("ne:f:Eris", map[string]string{"quiet": "n", "silent": "n", "expression=": "e", "file=": "f",
		"regexp-extended": "E", "in-place": "i", "separate": "s"})
	if !ok {
		return 1
	}
	scripts := f.all("e")
	for _, sf := range f.all("f") {
		b, st := c.readAll([]string{sf})
		if st != 0 {
			return st
		}
		scripts = append(scripts, string(b))
	}
	files := f.rest
	if len(scripts) == 0 {
		if len(files) == 0 {
			return c.fail("no script given")
		}
		scripts, files = files[:1], files[1:]
	}
	p := &sedParser{s: strings.Join(scripts, "\n"), ere: f.has("E") || f.has("r")}
	cmds, err := p.script()
	if err == nil && !p.eof() {
		err = fmt.Errorf("unexpected `}'")
	}
	if err != nil {
		return c.fail("-e expression #1, char %d: %v", p.i, err)
	}
	run := func(lines []string, w io.Writer) {
		s := &sedState{c: c, quiet: f.has("n"), lines: lines, out: bufio.NewWriter(w)}
		for s.n < len(s.lines) && !s.quit && !c.stopped() {
			pat := s.lines[s.n]
			s.n++
			s.line++
			_, deleted := s.exec(cmds, &pat)
			if !deleted && !s.quiet {
				fmt.Fprintln(s.out, pat)
			}
			s.flushAppends()
		}
		s.out.Flush()
	}
	if f.has("i") {
		if len(files) == 0 {
			return c.fail("no input files")
		}
		status := 0
		for _, name := range files {
			lines, st := c.lines([]string{name})
			if st != 0 {
				status = st
				continue
			}
			var b strings.Builder
			run(lines, &b)
			fh, err := c.create(name, false)
			if err != nil {
				status = c.fail("couldn't edit %v", err)
				continue
			}
			_, err = io.WriteString(fh, b.String())
			fh.Close()
			if err != nil {
				status = c.fail("%v", fileError(name, err))
			}
		}
		return status
	}
	lines, st := c.lines(files)
	run(lines, c.out)
	return st
}
