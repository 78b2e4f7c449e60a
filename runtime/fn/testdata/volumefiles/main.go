// Command volumefiles runs file operations in /volume (or anywhere it is
// told to) and reports each one's outcome: what a grant lets it do.
package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/subako/subako/runtime/fn/guest"
)

type op struct {
	Op   string `json:"op"` // read, write, append, delete, mkdir, symlink, rename, list
	Path string `json:"path"`
	To   string `json:"to"`
	Text string `json:"text"`
	// Bytes writes that many bytes of "x" instead of Text.
	Bytes int `json:"bytes"`
}

type result struct {
	Op    string   `json:"op"`
	Path  string   `json:"path"`
	OK    bool     `json:"ok"`
	Text  string   `json:"text,omitempty"`
	Files []string `json:"files,omitempty"`
	Error string   `json:"error,omitempty"`
}

func run(in struct {
	Ops []op `json:"ops"`
}) (any, error) {
	out := []result{}
	for _, o := range in.Ops {
		r := result{Op: o.Op, Path: o.Path}
		var err error
		data := []byte(o.Text)
		if o.Bytes > 0 {
			data = []byte(strings.Repeat("x", o.Bytes))
		}
		switch o.Op {
		case "read":
			var b []byte
			b, err = os.ReadFile(o.Path)
			r.Text = string(b)
		case "write":
			err = os.WriteFile(o.Path, data, 0o644)
		case "append":
			var f *os.File
			if f, err = os.OpenFile(o.Path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644); err == nil {
				_, err = f.Write(data)
				f.Close()
			}
		case "delete":
			err = os.Remove(o.Path)
		case "mkdir":
			err = os.MkdirAll(o.Path, 0o755)
		case "symlink":
			err = os.Symlink(o.To, o.Path)
		case "rename":
			err = os.Rename(o.Path, o.To)
		case "list":
			r.Files = []string{}
			err = filepath.WalkDir(o.Path, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if !d.IsDir() {
					r.Files = append(r.Files, p)
				}
				return nil
			})
		}
		r.OK = err == nil
		if err != nil {
			r.Error = err.Error()
		}
		out = append(out, r)
	}
	return map[string]any{"results": out}, nil
}

func main() {
	guest.Main(guest.Tools{"files": guest.Typed(run)})
}
