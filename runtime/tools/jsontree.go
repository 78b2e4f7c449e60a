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
	fields []member // objects, in document order
	items  []*node  // arrays
}

type member struct {
	key string
	val *node
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
	root, err := readValue(dec)
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

func readValue(dec *json.Decoder) (*node, error) {
	off := dec.InputOffset()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	n := &node{off: off}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			err = readObject(dec, n)
		} else {
			err = readArray(dec, n)
		}
	case string:
		n.kind, n.str = stringNode, t
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

func readObject(dec *json.Decoder, n *node) error {
	n.kind = objectNode
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		val, err := readValue(dec)
		if err != nil {
			return err
		}
		n.fields = append(n.fields, member{key: tok.(string), val: val})
	}
	_, err := dec.Token() // '}'
	return err
}

func readArray(dec *json.Decoder, n *node) error {
	n.kind = arrayNode
	for dec.More() {
		val, err := readValue(dec)
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
	switch {
	case errors.As(err, &se):
		off, why = se.Offset, se.Error()
	case errors.As(err, &td):
		off, why = td.off, td.Error()
	case len(bytes.TrimSpace(data)) == 0:
		return "config is empty; send a JSON object such as {}"
	}
	off = min(max(off, 0), int64(len(data)))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - int64(bytes.LastIndexByte(data[:off], '\n'))
	return fmt.Sprintf("config is not valid JSON at line %d, column %d (byte %d): %s", line, col, off, why)
}
