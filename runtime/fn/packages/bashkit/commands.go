package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
)

// command runs one built-in command and returns its exit status.
type command func(c *cmdCtx) int

// commands are bashkit's own commands; the interpreter's builtins (echo,
// printf, cd, test, read, …) come first in the shell, and echo and printf here
// serve xargs, env and find -exec, which run commands from this table.
var commands map[string]command

func init() {
	commands = map[string]command{
		// files
		"cat": cmdCat, "ls": cmdLs, "mkdir": cmdMkdir, "rmdir": cmdRmdir, "cp": cmdCp, "mv": cmdMv,
		"rm": cmdRm, "touch": cmdTouch, "ln": cmdLn, "stat": cmdStat, "du": cmdDu, "find": cmdFind,
		"realpath": cmdRealpath, "readlink": cmdRealpath, "basename": cmdBasename, "dirname": cmdDirname,
		"tree": cmdTree, "truncate": cmdTruncate, "mktemp": cmdMktemp, "chmod": cmdChmod, "file": cmdFile,
		"df": cmdDf,
		// text
		"grep": cmdGrep, "egrep": cmdGrep, "fgrep": cmdGrep, "sed": cmdSed, "sort": cmdSort, "uniq": cmdUniq,
		"wc": cmdWc, "head": cmdHead, "tail": cmdTail, "cut": cmdCut, "tr": cmdTr, "tee": cmdTee,
		"paste": cmdPaste, "rev": cmdRev, "nl": cmdNl, "fold": cmdFold, "expand": cmdExpand,
		"unexpand": cmdUnexpand, "tac": cmdTac, "comm": cmdComm, "join": cmdJoin, "split": cmdSplit,
		"diff": cmdDiff, "cmp": cmdCmp, "column": cmdColumn, "strings": cmdStrings, "shuf": cmdShuf,
		"od": cmdOd, "xxd": cmdXxd, "fmt": cmdFmt,
		// encodings, hashes, data
		"base64": cmdBase64, "base32": cmdBase32, "md5sum": hashCmd("md5"), "sha1sum": hashCmd("sha1"),
		"sha224sum": hashCmd("sha224"), "sha256sum": hashCmd("sha256"), "sha384sum": hashCmd("sha384"),
		"sha512sum": hashCmd("sha512"), "cksum": cmdCksum, "jq": cmdJq,
		// archives
		"gzip": cmdGzip, "gunzip": cmdGzip, "zcat": cmdGzip, "tar": cmdTar, "zip": cmdZip, "unzip": cmdUnzip,
		// shell helpers and the system
		"echo": cmdEcho, "printf": cmdPrintf, "seq": cmdSeq, "yes": cmdYes, "date": cmdDate, "sleep": cmdSleep,
		"env": cmdEnv, "printenv": cmdPrintenv, "expr": cmdExpr, "xargs": cmdXargs, "which": cmdWhich,
		"whoami": cmdWhoami, "hostname": cmdHostname, "uname": cmdUname, "nproc": cmdNproc, "id": cmdID,
		"factor": cmdFactor, "uuidgen": cmdUUID, "numfmt": cmdNumfmt, "bc": cmdBc, "sum": cmdSum,
	}
}

// cmdCtx is one command's run: its arguments, folder and streams.
type cmdCtx struct {
	ctx  context.Context
	name string
	args []string
	dir  string
	env  expand.Environ
	in   io.Reader
	out  io.Writer
	errw io.Writer
}

func (c *cmdCtx) fail(format string, args ...any) int {
	fmt.Fprintf(c.errw, c.name+": "+format+"\n", args...)
	return 1
}

func (c *cmdCtx) ferr(path string, err error) int {
	fmt.Fprintf(c.errw, "%s: %v\n", c.name, fileError(path, err))
	return 1
}

func (c *cmdCtx) abs(p string) string { return absPath(c.dir, p) }

// stopped says the script is over (time, output or a limit).
func (c *cmdCtx) stopped() bool { return sc != nil && sc.Err() != nil }

// open opens a file to read; "-" is standard input.
func (c *cmdCtx) open(p string) (io.ReadCloser, error) {
	if p == "-" {
		return io.NopCloser(c.in), nil
	}
	f, err := os.Open(c.abs(p))
	if err != nil {
		return nil, fileError(p, err)
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s: Is a directory", p)
	}
	return f, nil
}

// create opens a file to write, truncating it or appending.
func (c *cmdCtx) create(p string, appendTo bool) (*os.File, error) {
	flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if appendTo {
		flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	abs := c.abs(p)
	f, err := os.OpenFile(abs, flag, 0o644)
	if err != nil {
		return nil, fileError(p, err)
	}
	noteWrite(abs)
	return f, nil
}

// each runs f over every input (stdin when files is empty) and reports
// the files it cannot open; the status is 1 if any failed.
func (c *cmdCtx) each(files []string, f func(name string, r io.Reader) error) int {
	if len(files) == 0 {
		files = []string{"-"}
	}
	status := 0
	for _, name := range files {
		if c.stopped() {
			return 1
		}
		r, err := c.open(name)
		if err != nil {
			fmt.Fprintf(c.errw, "%s: %v\n", c.name, err)
			status = 1
			continue
		}
		err = f(name, r)
		r.Close()
		if err != nil {
			if err != errOutputLimit {
				fmt.Fprintf(c.errw, "%s: %v\n", c.name, err)
			}
			status = 1
		}
	}
	return status
}

// readAll reads every input whole.
func (c *cmdCtx) readAll(files []string) ([]byte, int) {
	var all []byte
	st := c.each(files, func(_ string, r io.Reader) error {
		b, err := io.ReadAll(r)
		all = append(all, b...)
		return err
	})
	return all, st
}

// lines reads every input's lines, without their newlines.
func (c *cmdCtx) lines(files []string) ([]string, int) {
	var out []string
	st := c.each(files, func(_ string, r io.Reader) error {
		return scanLines(r, func(l string) error { out = append(out, l); return nil })
	})
	return out, st
}

// scanLines calls f per line (no newline), lines up to 16 MiB.
func scanLines(r io.Reader, f func(string) error) error {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 16<<20)
	for s.Scan() {
		if sc != nil && sc.Err() != nil {
			return errOutputLimit
		}
		if err := f(s.Text()); err != nil {
			return err
		}
	}
	return s.Err()
}

// writeLines writes lines each ended by a newline.
func writeLines(w io.Writer, lines []string) error {
	bw := bufio.NewWriter(w)
	for _, l := range lines {
		bw.WriteString(l)
		if err := bw.WriteByte('\n'); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// flags is a parsed command line: options by their short name (the last
// value, or all of them) and the operands.
type flags struct {
	vals map[string][]string
	rest []string
}

func (f flags) has(k string) bool     { return len(f.vals[k]) > 0 }
func (f flags) all(k string) []string { return f.vals[k] }
func (f flags) get(k, def string) string {
	if v := f.vals[k]; len(v) > 0 {
		return v[len(v)-1]
	}
	return def
}
func (f flags) num(c *cmdCtx, k string, def int) (int, bool) {
	v := f.get(k, "")
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		c.fail("invalid number for -%s: %q", k, v)
		return 0, false
	}
	return n, true
}

// parse reads options from args: spec lists short options, a letter followed
// by ':' taking a value; long maps --names to a short letter (a trailing '='
// on the name means it takes a value). Options stop at "--" or the first
// operand, except where anywhere is set (GNU style).
func (c *cmdCtx) parse(spec string, long map[string]string) (flags, bool) {
	f := flags{vals: map[string][]string{}}
	args := c.args
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			f.rest = append(f.rest, args[i+1:]...)
			return f, true
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			key, ok := long[name]
			takes := false
			if !ok {
				key, ok = long[name+"="]
				takes = ok
			}
			if !ok {
				c.fail("unrecognized option '%s'", a)
				return f, false
			}
			if takes && !hasVal {
				if i+1 >= len(args) {
					c.fail("option '%s' requires an argument", a)
					return f, false
				}
				i++
				val = args[i]
			} else if !takes {
				val = "1"
			}
			f.vals[key] = append(f.vals[key], val)
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				k := string(a[j])
				at := strings.Index(spec, k)
				if at < 0 || k == ":" {
					c.fail("invalid option -- '%s'", k)
					return f, false
				}
				if at+1 < len(spec) && spec[at+1] == ':' {
					val := a[j+1:]
					if val == "" {
						if i+1 >= len(args) {
							c.fail("option requires an argument -- '%s'", k)
							return f, false
						}
						i++
						val = args[i]
					}
					f.vals[k] = append(f.vals[k], val)
					break
				}
				f.vals[k] = append(f.vals[k], "1")
			}
		default:
			f.rest = append(f.rest, a)
		}
	}
	return f, true
}

// runCommand runs argv from this table, for xargs, env, find -exec and timeout.
func (c *cmdCtx) runCommand(argv []string, in io.Reader) int {
	cmd, ok := commands[argv[0]]
	if !ok {
		if argv[0] == "true" {
			return 0
		}
		if argv[0] == "false" {
			return 1
		}
		fmt.Fprintf(c.errw, notFoundMessage+"\n", argv[0])
		return 127
	}
	sub := *c
	sub.name, sub.args, sub.in = argv[0], argv[1:], in
	return cmd(&sub)
}

// commandNames lists the table, sorted (for `which` and the docs test).
func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func joinPath(dir, name string) string {
	if dir == "." {
		return name
	}
	return filepath.Join(dir, name)
}
