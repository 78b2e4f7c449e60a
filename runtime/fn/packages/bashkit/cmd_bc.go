package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// bcVal is a bc number: its value and how many decimals bc would keep.
type bcVal struct {
	v     float64
	scale int
}

type bcParser struct {
	toks  []string
	i     int
	vars  map[string]bcVal
	scale int
}

func bcTokens(s string) ([]string, error) {
	var toks []string
	for i := 0; i < len(s); {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\r':
			i++
		case ch >= '0' && ch <= '9' || ch == '.':
			j := i
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
				j++
			}
			toks, i = append(toks, s[i:j]), j
		case ch >= 'a' && ch <= 'z' || ch == '_':
			j := i
			for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9' || s[j] == '_') {
				j++
			}
			toks, i = append(toks, s[i:j]), j
		case strings.IndexByte("+-*/%^()=;\n", ch) >= 0:
			toks, i = append(toks, string(ch)), i+1
		default:
			return nil, fmt.Errorf("illegal character: %c", ch)
		}
	}
	return toks, nil
}

func (p *bcParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *bcParser) expr() (bcVal, error) {
	a, err := p.term()
	for err == nil && (p.peek() == "+" || p.peek() == "-") {
		op := p.toks[p.i]
		p.i++
		var b bcVal
		if b, err = p.term(); err != nil {
			break
		}
		if op == "+" {
			a = bcVal{a.v + b.v, max(a.scale, b.scale)}
		} else {
			a = bcVal{a.v - b.v, max(a.scale, b.scale)}
		}
	}
	return a, err
}

func (p *bcParser) term() (bcVal, error) {
	a, err := p.power()
	for err == nil && (p.peek() == "*" || p.peek() == "/" || p.peek() == "%") {
		op := p.toks[p.i]
		p.i++
		var b bcVal
		if b, err = p.power(); err != nil {
			break
		}
		switch op {
		case "*":
			a = bcVal{a.v * b.v, min(a.scale+b.scale, max(p.scale, a.scale, b.scale))}
		case "/":
			if b.v == 0 {
				return a, fmt.Errorf("divide by zero")
			}
			a = bcVal{trunc(a.v/b.v, p.scale), p.scale}
		case "%":
			if b.v == 0 {
				return a, fmt.Errorf("divide by zero")
			}
			q := trunc(a.v/b.v, p.scale)
			a = bcVal{a.v - q*b.v, max(p.scale+b.scale, a.scale)}
		}
	}
	return a, err
}

func (p *bcParser) power() (bcVal, error) {
	a, err := p.unary()
	if err == nil && p.peek() == "^" {
		p.i++
		var b bcVal
		if b, err = p.power(); err == nil {
			a = bcVal{math.Pow(a.v, math.Trunc(b.v)), min(a.scale*int(math.Abs(b.v)), max(p.scale, a.scale))}
		}
	}
	return a, err
}

func (p *bcParser) unary() (bcVal, error) {
	if p.peek() == "-" {
		p.i++
		v, err := p.unary()
		v.v = -v.v
		return v, err
	}
	t := p.peek()
	p.i++
	switch {
	case t == "(":
		v, err := p.expr()
		if err == nil && p.peek() != ")" {
			err = fmt.Errorf("syntax error: missing )")
		}
		p.i++
		return v, err
	case t == "":
		return bcVal{}, fmt.Errorf("syntax error: unexpected end of input")
	case t[0] >= '0' && t[0] <= '9' || t[0] == '.':
		v, err := strconv.ParseFloat(t, 64)
		sc := 0
		if d := strings.IndexByte(t, '.'); d >= 0 {
			sc = len(t) - d - 1
		}
		return bcVal{v, sc}, err
	case t == "scale":
		return bcVal{float64(p.scale), 0}, nil
	case t[0] >= 'a' && t[0] <= 'z':
		return p.vars[t], nil
	}
	return bcVal{}, fmt.Errorf("syntax error near '%s'", t)
}

func trunc(v float64, scale int) float64 {
	m := math.Pow(10, float64(scale))
	return math.Trunc(v*m+math.Copysign(1e-9, v)) / m
}

func bcFormat(v bcVal) string {
	s := strconv.FormatFloat(trunc(v.v, v.scale), 'f', v.scale, 64)
	if strings.HasPrefix(s, "0.") {
		s = s[1:]
	} else if strings.HasPrefix(s, "-0.") {
		s = "-" + s[2:]
	}
	return s
}

func cmdBc(c *cmdCtx) int {
	f, ok := c.parse("lq", map[string]string{"mathlib": "l", "quiet": "q"})
	if !ok {
		return 1
	}
	var src string
	if len(f.rest) > 0 {
		b, st := c.readAll(f.rest)
		if st != 0 {
			return st
		}
		src = string(b)
	} else {
		b, _ := io.ReadAll(c.in)
		src = string(b)
	}
	toks, err := bcTokens(src)
	if err != nil {
		return c.fail("%v", err)
	}
	p := &bcParser{toks: toks, vars: map[string]bcVal{}}
	if f.has("l") {
		p.scale = 20
	}
	for p.i < len(p.toks) {
		if t := p.peek(); t == ";" || t == "\n" {
			p.i++
			continue
		}
		if p.i+1 < len(p.toks) && p.toks[p.i+1] == "=" {
			name := p.toks[p.i]
			p.i += 2
			v, err := p.expr()
			if err != nil {
				return c.fail("%v", err)
			}
			if name == "scale" {
				p.scale = int(v.v)
			} else {
				p.vars[name] = v
			}
			continue
		}
		if p.peek() == "quit" {
			break
		}
		v, err := p.expr()
		if err != nil {
			return c.fail("%v", err)
		}
		fmt.Fprintln(c.out, bcFormat(v))
	}
	return 0
}
