package tsgen

import (
	"encoding/json"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Func is one function of `$`: its path (["Session", "end"] is $.Session.end,
// ["sandbox", "workbench", "exec"] is $.sandbox.workbench.exec), a line of
// documentation, and its input and output schemas.
type Func struct {
	Path          []string
	Doc           string
	Input, Output *jsonschema.Schema
	// InputType and OutputType, when set, are TypeScript types used instead of
	// the schemas' (a raw upload's bytes, a download's, `void` for no answer).
	InputType, OutputType string
}

// errorDecl is what every call of `$` throws when Subako refuses it: the
// problem JSON's fields (docs/api.md, "Errors"). An interface, a type only:
// $.js exports its class rather than making a global, and a code-mode
// program's errors are plain Errors with these fields.
const errorDecl = `/** What a call of $ throws when Subako refuses it (an RFC 9457 problem): catch (e) { (e as SubakoError).code } */
interface SubakoError extends Error {
  /** The HTTP status: 401, 403, 404, 409, 422, 429… */
  readonly status: number;
  /** A stable code: "permission_denied", "not_found", "name_invalid"… */
  readonly code: string;
  /** The input field the error is about, when it is about one. */
  readonly field?: string;
  /** The permission that would have allowed the call: "Agent.create". */
  readonly missing_permission?: string;
  /** Every problem found; the first leads. */
  readonly errors?: { field?: string; code: string; detail?: string }[];
}
`

// Client is TypeScript declarations of `$` holding funcs, nested by path,
// each with its documentation as a comment and its types:
//
//	declare const $: {
//	  Session: {
//	    /** End a session. */
//	    end(input: { session: string; }): Promise<{ … }>;
//	  };
//	};
//
// and the SubakoError its calls throw. An input with no required field may be
// left out. Funcs with the same path: the first is kept.
func Client(funcs []Func) string {
	root := &node{}
	for i := range funcs {
		if len(funcs[i].Path) > 0 {
			root.add(funcs[i].Path, &funcs[i])
		}
	}
	var b strings.Builder
	b.WriteString("// Declarations of $, generated from JSON Schemas: each function's input and output.\n")
	b.WriteString(errorDecl)
	b.WriteString("declare const $: ")
	root.write(&b, "")
	b.WriteString(";\n")
	return b.String()
}

type node struct {
	name     string
	fn       *Func
	children []*node
}

func (n *node) add(path []string, f *Func) {
	if len(path) == 0 {
		if n.fn == nil {
			n.fn = f
		}
		return
	}
	for _, c := range n.children {
		if c.name == path[0] {
			c.add(path[1:], f)
			return
		}
	}
	c := &node{name: path[0]}
	n.children = append(n.children, c)
	c.add(path[1:], f)
}

// write writes n's object type: its call signature (when n is also a
// function) and its members.
func (n *node) write(b *strings.Builder, indent string) {
	inner := indent + "  "
	b.WriteString("{\n")
	if n.fn != nil {
		n.fn.signature(b, inner, "")
	}
	for _, c := range n.children {
		if c.fn != nil && len(c.children) == 0 {
			c.fn.signature(b, inner, Key(c.name))
			continue
		}
		b.WriteString(inner + Key(c.name) + ": ")
		c.write(b, inner)
		b.WriteString(";\n")
	}
	b.WriteString(indent + "}")
}

// signature writes `/** doc */ name(input: In): Promise<Out>;` (no name: a
// call signature).
func (f *Func) signature(b *strings.Builder, indent, name string) {
	if f.Doc != "" {
		b.WriteString(indent + Comment(f.Doc, indent) + "\n")
	}
	in, opt := f.InputType, false
	if in == "" {
		g := gen{root: f.Input, budget: MaxNodes, expanding: map[string]bool{}}
		in = g.typ(f.Input, 0, indent)
		opt = f.Input == nil || (f.Input.Ref == "" && len(f.Input.Required) == 0)
	}
	out := f.OutputType
	if out == "" {
		g := gen{root: f.Output, budget: MaxNodes, expanding: map[string]bool{}}
		out = g.typ(f.Output, 0, indent)
	}
	q := ""
	if opt {
		q = "?"
	}
	b.WriteString(indent + name + "(input" + q + ": " + in + "): Promise<" + out + ">;\n")
}

// Key is a property name as TypeScript writes it: bare when it is an
// identifier, quoted otherwise ("my-server", "2fa", "").
func Key(name string) string {
	if isIdent(name) {
		return name
	}
	return Quote(name)
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r == '$' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'):
		case i > 0 && r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}

// Quote is a TypeScript string literal for s.
func Quote(s string) string {
	b, _ := json.Marshal(s) // escapes quotes, controls, U+2028/9; invalid UTF-8 becomes U+FFFD
	return string(b)
}

// Comment is a doc comment holding text: one line as `/** text */`, more as
// a block whose later lines start at indent. A `*/` inside cannot end it.
func Comment(text, indent string) string {
	text = strings.ToValidUTF8(text, "\uFFFD")
	text = strings.ReplaceAll(text, "*/", "*\\/")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	text = strings.TrimSpace(text)
	if !strings.Contains(text, "\n") {
		return "/** " + text + " */"
	}
	var b strings.Builder
	b.WriteString("/**")
	for _, line := range strings.Split(text, "\n") {
		b.WriteString("\n" + indent + " * " + strings.TrimRight(line, " \t"))
	}
	b.WriteString("\n" + indent + " */")
	return b.String()
}
