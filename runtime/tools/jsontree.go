package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// A node is one JSON value with its place in the document. encoding/json's
// Unmarshal forgets key order, duplicate keys and offsets; Parse needs all
// three to report every problem in document order with its path.
type node struct {
	kind   nodeKind
	off    int64 // byte offset where the value starts: the sort key of its errors
	end    int64 // byte offset just past the value
	str    string
	bad    string   // why a string is not storable text (BadJSONText), or ""
	fields []member // objects, in document order
	items  []*node  // arrays
}

type member struct {
	key    string
	badKey string // why the key is not storable text, or ""
	val    *node
}

type nodeKind int

const (
	nullNode nodeKind = iota
	boolNode
	numberNode
	stringNode
	objectNode
	arrayNode
)

// typeName is how a person would name the JSON type in a message.
func (k nodeKind) typeName() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an object", "an array"}[k]
}

// parseTree reads exactly one JSON value; trailing data is an error.
func parseTree(data []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	root, err := readValue(dec, data, 0)
	if err != nil {
		return nil, err
	}
	off := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		rest := data[off:]
		off += int64(len(rest) - len(bytes.TrimLeft(rest, " \t\r\n")))
		return nil, trailingData{off: off}
	}
	return root, nil
}

// MaxDepth bounds how deep a config nests. A real one is five levels deep;
// a megabyte of "[" would otherwise recurse a million frames deep.
const MaxDepth = 32

// tooDeep is a config nested past MaxDepth.
type tooDeep struct{ off int64 }

func (e tooDeep) Error() string { return fmt.Sprintf("it nests deeper than %d levels", MaxDepth) }

// readValue reads the next value at depth; data is the whole document, so a
// string can be checked against the bytes it was read from.
func readValue(dec *json.Decoder, data []byte, depth int) (*node, error) {
	off := dec.InputOffset()
	if depth > MaxDepth {
		return nil, tooDeep{off: off}
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	n := &node{off: off}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			err = readObject(dec, n, data, depth)
		} else {
			err = readArray(dec, n, data, depth)
		}
	case string:
		n.kind, n.str = stringNode, t
		n.bad = BadJSONText(data[off:dec.InputOffset()], t)
	case json.Number:
		n.kind, n.str = numberNode, t.String()
	case bool:
		n.kind, n.str = boolNode, fmt.Sprint(t)
	case nil:
		n.kind = nullNode
	}
	n.end = dec.InputOffset()
	return n, err
}

func readObject(dec *json.Decoder, n *node, data []byte, depth int) error {
	n.kind = objectNode
	for dec.More() {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key := tok.(string)
		bad := BadJSONText(data[off:dec.InputOffset()], key)
		val, err := readValue(dec, data, depth+1)
		if err != nil {
			return err
		}
		n.fields = append(n.fields, member{key: key, badKey: bad, val: val})
	}
	_, err := dec.Token() // '}'
	return err
}

func readArray(dec *json.Decoder, n *node, data []byte, depth int) error {
	n.kind = arrayNode
	for dec.More() {
		val, err := readValue(dec, data, depth+1)
		if err != nil {
			return err
		}
		n.items = append(n.items, val)
	}
	_, err := dec.Token() // ']'
	return err
}

// trailingData is a second value after the config: often two configs pasted
// one after the other.
type trailingData struct{ off int64 }

func (e trailingData) Error() string { return "more data after the end of the config" }

// syntaxDetail says where the JSON broke, by line and column, for a person
// looking at the text in an editor.
func syntaxDetail(data []byte, err error) string {
	off, why := int64(len(data)), "it ends early"
	var se *json.SyntaxError
	var td trailingData
	var deep tooDeep
	switch {
	case errors.As(err, &se):
		off, why = se.Offset, se.Error()
	case errors.As(err, &td):
		off, why = td.off, td.Error()
	case errors.As(err, &deep):
		off, why = deep.off, deep.Error()
	case len(bytes.TrimSpace(data)) == 0:
		return "config is empty; send a JSON object such as {}"
	}
	off = min(max(off, 0), int64(len(data)))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - int64(bytes.LastIndexByte(data[:off], '\n'))
	return fmt.Sprintf("config is not valid JSON at line %d, column %d (byte %d): %s", line, col, off, why)
}

// text reports every string, key or value, that cannot be stored as text,
// with its path: such a config is refused, not silently mended.
func (v *validator) text(path string, n *node) {
	switch n.kind {
	case stringNode:
		if n.bad != "" {
			v.add(n.off, fieldError(path, "invalid_text", lastSegment(path)+" "+n.bad))
		}
	case objectNode:
		for _, m := range n.fields {
			field := joinPath(path, m.key)
			if m.badKey != "" {
				v.add(m.val.off, fieldError(field, "invalid_text", "the key "+quoteShort(m.key)+" "+m.badKey))
			}
			v.text(field, m.val)
		}
	case arrayNode:
		for i, item := range n.items {
			v.text(indexPath(path, i), item)
		}
	}
}
