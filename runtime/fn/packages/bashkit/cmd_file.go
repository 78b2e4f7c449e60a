package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

func cmdCat(c *cmdCtx) int {
	f, ok := c.parse("nbsAEvT", map[string]string{"number": "n", "number-nonblank": "b", "squeeze-blank": "s"})
	if !ok {
		return 1
	}
	if !f.has("n") && !f.has("b") && !f.has("s") {
		return c.each(f.rest, func(_ string, r io.Reader) error { _, err := io.Copy(c.out, r); return err })
	}
	n, blank := 0, false
	return c.each(f.rest, func(_ string, r io.Reader) error {
		return scanLines(r, func(l string) error {
			if f.has("s") && l == "" && blank {
				return nil
			}
			blank = l == ""
			if f.has("b") && l != "" || f.has("n") && !f.has("b") {
				n++
				_, err := fmt.Fprintf(c.out, "%6d\t%s\n", n, l)
				return err
			}
			_, err := fmt.Fprintln(c.out, l)
			return err
		})
	})
}

func cmdLs(c *cmdCtx) int {
	f, ok := c.parse("laA1RhrtSd", map[string]string{"all": "a", "almost-all": "A", "human-readable": "h", "recursive": "R", "reverse": "r", "directory": "d"})
	if !ok {
		return 1
	}
	ops := f.rest
	if len(ops) == 0 {
		ops = []string{"."}
	}
	status := 0
	var files []string
	var dirs []string
	for _, o := range ops {
		st, err := os.Stat(c.abs(o))
		if err != nil {
			fmt.Fprintf(c.errw, "ls: cannot access '%s': No such file or directory\n", o)
			status = 2
			continue
		}
		if st.IsDir() && !f.has("d") {
			dirs = append(dirs, o)
		} else {
			files = append(files, o)
		}
	}
	list := func(dir string, names []string) {
		infos := make([]fs.FileInfo, 0, len(names))
		for _, n := range names {
			if st, err := os.Stat(c.abs(joinPath(dir, n))); err == nil {
				infos = append(infos, st)
			}
		}
		sortInfos(infos, names, f)
		for i, st := range infos {
			name := names[i]
			if f.has("l") {
				size := fmt.Sprint(st.Size())
				if f.has("h") {
					size = humanSize(st.Size())
				}
				mode := st.Mode().String()
				fmt.Fprintf(c.out, "%s 1 bashkit bashkit %5s %s %s\n", mode, size, st.ModTime().UTC().Format("Jan _2 15:04"), name)
			} else {
				fmt.Fprintln(c.out, name)
			}
		}
	}
	list(".", files)
	var walk func(d string, header bool)
	walk = func(d string, header bool) {
		entries, err := os.ReadDir(c.abs(d))
		if err != nil {
			c.ferr(d, err)
			status = 2
			return
		}
		if header {
			fmt.Fprintf(c.out, "%s:\n", d)
		}
		var names []string
		if f.has("a") {
			names = append(names, ".", "..")
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") && !f.has("a") && !f.has("A") {
				continue
			}
			names = append(names, e.Name())
		}
		list(d, names)
		if f.has("R") {
			for _, e := range entries {
				if e.IsDir() && (!strings.HasPrefix(e.Name(), ".") || f.has("a") || f.has("A")) {
					fmt.Fprintln(c.out)
					walk(joinPath(d, e.Name()), true)
				}
			}
		}
	}
	for i, d := range dirs {
		if i > 0 || len(files) > 0 {
			fmt.Fprintln(c.out)
		}
		walk(d, len(ops) > 1 || f.has("R"))
	}
	return status
}

// sortInfos orders ls's entries: by name, or -t time, -S size; -r reverses.
func sortInfos(infos []fs.FileInfo, names []string, f flags) {
	idx := make([]int, len(infos))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		x, y := infos[idx[a]], infos[idx[b]]
		switch {
		case f.has("t") && !x.ModTime().Equal(y.ModTime()):
			return x.ModTime().After(y.ModTime())
		case f.has("S") && x.Size() != y.Size():
			return x.Size() > y.Size()
		}
		return names[idx[a]] < names[idx[b]]
	})
	if f.has("r") {
		for i, j := 0, len(idx)-1; i < j; i, j = i+1, j-1 {
			idx[i], idx[j] = idx[j], idx[i]
		}
	}
	ni, nn := make([]fs.FileInfo, len(idx)), make([]string, len(idx))
	for i, k := range idx {
		ni[i], nn[i] = infos[k], names[k]
	}
	copy(infos, ni)
	copy(names, nn)
}

func humanSize(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprint(n)
	}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if v < 10 {
		return fmt.Sprintf("%.1f%c", ceil1(v), units[i])
	}
	return fmt.Sprintf("%.0f%c", v+0.5, units[i])
}

func ceil1(v float64) float64 { return float64(int(v*10+0.9999)) / 10 }

func cmdMkdir(c *cmdCtx) int {
	f, ok := c.parse("pvm:", map[string]string{"parents": "p", "verbose": "v"})
	if !ok {
		return 1
	}
	status := 0
	for _, d := range f.rest {
		var err error
		if f.has("p") {
			err = os.MkdirAll(c.abs(d), 0o755)
		} else {
			err = os.Mkdir(c.abs(d), 0o755)
		}
		if err != nil {
			if os.IsExist(err) {
				fmt.Fprintf(c.errw, "mkdir: cannot create directory '%s': File exists\n", d)
			} else {
				c.ferr(d, err)
			}
			status = 1
		} else if f.has("v") {
			fmt.Fprintf(c.out, "mkdir: created directory '%s'\n", d)
		}
	}
	return status
}

func cmdRmdir(c *cmdCtx) int {
	f, ok := c.parse("p", nil)
	if !ok {
		return 1
	}
	status := 0
	for _, d := range f.rest {
		if err := os.Remove(c.abs(d)); err != nil {
			status = c.ferr(d, err)
		}
	}
	return status
}

func cmdCp(c *cmdCtx) int {
	f, ok := c.parse("rRfvnap", map[string]string{"recursive": "r", "force": "f", "verbose": "v", "no-clobber": "n"})
	if !ok {
		return 1
	}
	return c.copyOrMove(f, false)
}

func cmdMv(c *cmdCtx) int {
	f, ok := c.parse("fvn", map[string]string{"force": "f", "verbose": "v", "no-clobber": "n"})
	if !ok {
		return 1
	}
	return c.copyOrMove(f, true)
}

func (c *cmdCtx) copyOrMove(f flags, move bool) int {
	if len(f.rest) < 2 {
		return c.fail("missing destination file operand")
	}
	srcs, dst := f.rest[:len(f.rest)-1], f.rest[len(f.rest)-1]
	dstInfo, err := os.Stat(c.abs(dst))
	intoDir := err == nil && dstInfo.IsDir()
	if len(srcs) > 1 && !intoDir {
		return c.fail("target '%s' is not a directory", dst)
	}
	status := 0
	for _, s := range srcs {
		target := dst
		if intoDir {
			target = joinPath(dst, path.Base(strings.TrimSuffix(s, "/")))
		}
		if f.has("n") {
			if _, err := os.Stat(c.abs(target)); err == nil {
				continue
			}
		}
		st, err := os.Stat(c.abs(s))
		if err != nil {
			status = c.ferr(s, err)
			continue
		}
		if move {
			if err := os.Rename(c.abs(s), c.abs(target)); err != nil {
				status = c.ferr(target, err)
				continue
			}
			c.noteTree(c.abs(target))
		} else if st.IsDir() {
			if !f.has("r") && !f.has("R") && !f.has("a") {
				fmt.Fprintf(c.errw, "cp: -r not specified; omitting directory '%s'\n", s)
				status = 1
				continue
			}
			if err := c.copyTree(c.abs(s), c.abs(target)); err != nil {
				status = c.fail("%v", err)
				continue
			}
		} else if err := c.copyFile(c.abs(s), c.abs(target)); err != nil {
			status = c.fail("%v", err)
			continue
		}
		if f.has("v") {
			fmt.Fprintf(c.out, "'%s' -> '%s'\n", s, target)
		}
	}
	return status
}

func (c *cmdCtx) noteTree(root string) {
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			noteWrite(p)
		}
		return nil
	})
}

func (c *cmdCtx) copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fileError(src, err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fileError(rel(dst), err)
	}
	noteWrite(dst)
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fileError(rel(dst), err)
	}
	return out.Close()
}

func (c *cmdCtx) copyTree(src, dst string) error {
	if strings.HasPrefix(dst+"/", src+"/") {
		return fmt.Errorf("cannot copy a directory, '%s', into itself", rel(src))
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(src, p)
		t := filepath.Join(dst, r)
		if d.IsDir() {
			if err := os.MkdirAll(t, 0o755); err != nil {
				return fileError(rel(t), err)
			}
			return nil
		}
		return c.copyFile(p, t)
	})
}

// rel shows an absolute path relative to the volume, as the script sees it.
func rel(p string) string {
	if r, err := filepath.Rel(volumeDir, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

func cmdRm(c *cmdCtx) int {
	f, ok := c.parse("rRfvid", map[string]string{"recursive": "r", "force": "f", "verbose": "v", "dir": "d"})
	if !ok {
		return 1
	}
	if len(f.rest) == 0 && !f.has("f") {
		return c.fail("missing operand")
	}
	status := 0
	for _, p := range f.rest {
		abs := c.abs(p)
		if abs == volumeDir || abs == "/" {
			status = c.fail("refusing to remove '%s'", p)
			continue
		}
		st, err := os.Lstat(abs)
		if err != nil {
			if !f.has("f") {
				fmt.Fprintf(c.errw, "rm: cannot remove '%s': No such file or directory\n", p)
				status = 1
			}
			continue
		}
		if st.IsDir() && !f.has("r") && !f.has("R") && !f.has("d") {
			fmt.Fprintf(c.errw, "rm: cannot remove '%s': Is a directory\n", p)
			status = 1
			continue
		}
		if st.IsDir() && (f.has("r") || f.has("R")) {
			err = os.RemoveAll(abs)
		} else {
			err = os.Remove(abs)
		}
		if err != nil {
			status = c.ferr(p, err)
		} else if f.has("v") {
			fmt.Fprintf(c.out, "removed '%s'\n", p)
		}
	}
	return status
}

func cmdTouch(c *cmdCtx) int {
	f, ok := c.parse("camd:t:", map[string]string{"no-create": "c", "date=": "d"})
	if !ok {
		return 1
	}
	now := time.Now()
	if d := f.get("d", ""); d != "" {
		t, err := parseDate(d)
		if err != nil {
			return c.fail("invalid date format '%s'", d)
		}
		now = t
	}
	status := 0
	for _, p := range f.rest {
		abs := c.abs(p)
		if _, err := os.Stat(abs); os.IsNotExist(err) {
			if f.has("c") {
				continue
			}
			fh, err := c.create(p, true)
			if err != nil {
				status = c.fail("cannot touch %v", err)
				continue
			}
			fh.Close()
		}
		if err := os.Chtimes(abs, now, now); err != nil {
			status = c.fail("cannot touch %v", fileError(p, err))
		}
	}
	return status
}

func cmdLn(c *cmdCtx) int {
	return c.fail("links are not allowed in the session volume")
}

func cmdStat(c *cmdCtx) int {
	f, ok := c.parse("c:L", map[string]string{"format=": "c"})
	if !ok {
		return 1
	}
	status := 0
	for _, p := range f.rest {
		st, err := os.Stat(c.abs(p))
		if err != nil {
			fmt.Fprintf(c.errw, "stat: cannot statx '%s': No such file or directory\n", p)
			status = 1
			continue
		}
		kind := "regular file"
		if st.IsDir() {
			kind = "directory"
		} else if st.Size() == 0 {
			kind = "regular empty file"
		}
		if format := f.get("c", ""); format != "" {
			r := strings.NewReplacer("%n", p, "%s", fmt.Sprint(st.Size()), "%F", kind, "%a", fmt.Sprintf("%o", st.Mode().Perm()),
				"%A", st.Mode().String(), "%Y", fmt.Sprint(st.ModTime().Unix()), "%y", st.ModTime().UTC().Format("2006-01-02 15:04:05.000000000 -0700"), "%%", "%")
			fmt.Fprintln(c.out, r.Replace(format))
			continue
		}
		fmt.Fprintf(c.out, "  File: %s\n  Size: %d\t%s\nAccess: (%04o/%s)\nModify: %s\n", p, st.Size(), kind, st.Mode().Perm(), st.Mode(),
			st.ModTime().UTC().Format("2006-01-02 15:04:05.000000000 -0700"))
	}
	return status
}

func cmdDu(c *cmdCtx) int {
	f, ok := c.parse("shacbd:", map[string]string{"summarize": "s", "human-readable": "h", "all": "a", "total": "c", "bytes": "b", "max-depth=": "d"})
	if !ok {
		return 1
	}
	ops := f.rest
	if len(ops) == 0 {
		ops = []string{"."}
	}
	show := func(n int64, p string) {
		switch {
		case f.has("h"):
			fmt.Fprintf(c.out, "%s\t%s\n", humanSize(n), p)
		case f.has("b"):
			fmt.Fprintf(c.out, "%d\t%s\n", n, p)
		default:
			fmt.Fprintf(c.out, "%d\t%s\n", (n+1023)/1024, p)
		}
	}
	maxDepth, ok := f.num(c, "d", -1)
	if !ok {
		return 1
	}
	var total int64
	status := 0
	for _, o := range ops {
		var walk func(p string, depth int) int64
		walk = func(p string, depth int) int64 {
			st, err := os.Stat(c.abs(p))
			if err != nil {
				status = c.ferr(p, err)
				return 0
			}
			if !st.IsDir() {
				if f.has("a") && !f.has("s") || depth == 0 {
					show(st.Size(), p)
				}
				return st.Size()
			}
			var sum int64
			entries, _ := os.ReadDir(c.abs(p))
			for _, e := range entries {
				sum += walk(joinPath(p, e.Name()), depth+1)
			}
			if depth == 0 || !f.has("s") && (maxDepth < 0 || depth <= maxDepth) {
				show(sum, p)
			}
			return sum
		}
		total += walk(o, 0)
	}
	if f.has("c") {
		show(total, "total")
	}
	return status
}

func cmdFind(c *cmdCtx) int {
	var roots []string
	args := c.args
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") && args[0] != "(" && args[0] != "!" {
		roots = append(roots, args[0])
		args = args[1:]
	}
	if len(roots) == 0 {
		roots = []string{"."}
	}
	p := &findParser{c: c, args: args, maxDepth: -1}
	var expr findExpr = func(*findItem) bool { return true }
	var err error
	if len(args) > 0 {
		expr, err = p.parseOr()
	}
	if err == nil && p.i < len(p.args) {
		err = fmt.Errorf("unexpected '%s'", p.args[p.i])
	}
	if err != nil {
		return c.fail("%v", err)
	}
	if !p.acts {
		expr = andExpr(expr, func(fi *findItem) bool { fmt.Fprintln(c.out, fi.path); return true })
	}
	status := 0
	for _, root := range roots {
		rootAbs := c.abs(root)
		err := filepath.WalkDir(rootAbs, func(abs string, d fs.DirEntry, err error) error {
			if c.stopped() {
				return errOutputLimit
			}
			if err != nil {
				status = c.ferr(root, err)
				return nil
			}
			r, _ := filepath.Rel(rootAbs, abs)
			shown := root
			if r != "." {
				shown = strings.TrimSuffix(root, "/") + "/" + r
			}
			depth := 0
			if r != "." {
				depth = strings.Count(r, "/") + 1
			}
			fi := &findItem{path: shown, abs: abs, d: d, depth: depth}
			if depth >= p.minDepth {
				expr(fi)
			}
			if fi.prune || (p.maxDepth >= 0 && depth >= p.maxDepth && d.IsDir()) {
				return filepath.SkipDir
			}
			return nil
		})
		if err != nil && err != errOutputLimit {
			status = c.fail("%v", err)
		}
	}
	return status
}

type findItem struct {
	path, abs string
	d         fs.DirEntry
	depth     int
	prune     bool
}

type findExpr func(*findItem) bool

func andExpr(a, b findExpr) findExpr {
	return func(fi *findItem) bool { return a(fi) && b(fi) }
}

type findParser struct {
	c                  *cmdCtx
	args               []string
	i                  int
	acts               bool
	maxDepth, minDepth int
}

func (p *findParser) next() (string, bool) {
	if p.i >= len(p.args) {
		return "", false
	}
	p.i++
	return p.args[p.i-1], true
}

func (p *findParser) parseOr() (findExpr, error) {
	left, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for p.i < len(p.args) && (p.args[p.i] == "-o" || p.args[p.i] == "-or") {
		p.i++
		right, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		l := left
		left = func(fi *findItem) bool { return l(fi) || right(fi) }
	}
	return left, nil
}

func (p *findParser) parseAnd() (findExpr, error) {
	left, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	for p.i < len(p.args) && p.args[p.i] != "-o" && p.args[p.i] != "-or" && p.args[p.i] != ")" {
		if p.args[p.i] == "-a" || p.args[p.i] == "-and" {
			p.i++
		}
		right, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		left = andExpr(left, right)
	}
	return left, nil
}

func (p *findParser) parseNot() (findExpr, error) {
	if p.i < len(p.args) && (p.args[p.i] == "!" || p.args[p.i] == "-not") {
		p.i++
		e, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		return func(fi *findItem) bool { return !e(fi) }, nil
	}
	return p.primary()
}

func (p *findParser) primary() (findExpr, error) {
	a, _ := p.next()
	arg := func() (string, error) {
		v, ok := p.next()
		if !ok {
			return "", fmt.Errorf("missing argument to '%s'", a)
		}
		return v, nil
	}
	c := p.c
	switch a {
	case "(":
		e, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		if v, _ := p.next(); v != ")" {
			return nil, fmt.Errorf("missing ')'")
		}
		return e, nil
	case "-name", "-iname", "-path", "-ipath", "-wholename":
		pat, err := arg()
		if err != nil {
			return nil, err
		}
		fold := a == "-iname" || a == "-ipath"
		if fold {
			pat = strings.ToLower(pat)
		}
		return func(fi *findItem) bool {
			s := fi.path
			if a == "-name" || a == "-iname" {
				s = path.Base(fi.path)
			}
			if fold {
				s = strings.ToLower(s)
			}
			ok, _ := path.Match(pat, s)
			return ok
		}, nil
	case "-type":
		t, err := arg()
		if err != nil {
			return nil, err
		}
		return func(fi *findItem) bool {
			switch t {
			case "f":
				return fi.d.Type().IsRegular()
			case "d":
				return fi.d.IsDir()
			case "l":
				return fi.d.Type()&fs.ModeSymlink != 0
			}
			return false
		}, nil
	case "-maxdepth", "-mindepth":
		v, err := arg()
		if err != nil {
			return nil, err
		}
		var n int
		if _, err := fmt.Sscan(v, &n); err != nil {
			return nil, fmt.Errorf("invalid %s '%s'", a, v)
		}
		if a == "-maxdepth" {
			p.maxDepth = n
		} else {
			p.minDepth = n
		}
		return func(*findItem) bool { return true }, nil
	case "-size":
		v, err := arg()
		if err != nil {
			return nil, err
		}
		cmp, num := 0, v
		if strings.HasPrefix(v, "+") {
			cmp, num = 1, v[1:]
		} else if strings.HasPrefix(v, "-") {
			cmp, num = -1, v[1:]
		}
		unit := int64(512)
		if num != "" {
			switch num[len(num)-1] {
			case 'c':
				unit, num = 1, num[:len(num)-1]
			case 'k':
				unit, num = 1024, num[:len(num)-1]
			case 'M':
				unit, num = 1<<20, num[:len(num)-1]
			case 'G':
				unit, num = 1<<30, num[:len(num)-1]
			case 'b':
				num = num[:len(num)-1]
			}
		}
		var n int64
		if _, err := fmt.Sscan(num, &n); err != nil {
			return nil, fmt.Errorf("invalid -size '%s'", v)
		}
		return func(fi *findItem) bool {
			info, err := fi.d.Info()
			if err != nil {
				return false
			}
			units := (info.Size() + unit - 1) / unit
			switch cmp {
			case 1:
				return units > n
			case -1:
				return units < n
			}
			return units == n
		}, nil
	case "-mtime", "-mmin":
		v, err := arg()
		if err != nil {
			return nil, err
		}
		var n float64
		if _, err := fmt.Sscan(strings.TrimLeft(v, "+-"), &n); err != nil {
			return nil, fmt.Errorf("invalid %s '%s'", a, v)
		}
		unit := 24 * time.Hour
		if a == "-mmin" {
			unit = time.Minute
		}
		return func(fi *findItem) bool {
			info, err := fi.d.Info()
			if err != nil {
				return false
			}
			age := float64(time.Since(info.ModTime()) / unit)
			switch v[0] {
			case '+':
				return age > n
			case '-':
				return age < n
			}
			return int(age) == int(n)
		}, nil
	case "-empty":
		return func(fi *findItem) bool {
			if fi.d.IsDir() {
				e, _ := os.ReadDir(fi.abs)
				return len(e) == 0
			}
			info, err := fi.d.Info()
			return err == nil && info.Size() == 0
		}, nil
	case "-newer":
		v, err := arg()
		if err != nil {
			return nil, err
		}
		ref, err := os.Stat(c.abs(v))
		if err != nil {
			return nil, fileError(v, err)
		}
		return func(fi *findItem) bool {
			info, err := fi.d.Info()
			return err == nil && info.ModTime().After(ref.ModTime())
		}, nil
	case "-true":
		return func(*findItem) bool { return true }, nil
	case "-false":
		return func(*findItem) bool { return false }, nil
	case "-prune":
		return func(fi *findItem) bool { fi.prune = true; return true }, nil
	case "-print":
		p.acts = true
		return func(fi *findItem) bool { fmt.Fprintln(c.out, fi.path); return true }, nil
	case "-print0":
		p.acts = true
		return func(fi *findItem) bool { fmt.Fprint(c.out, fi.path+"\x00"); return true }, nil
	case "-delete":
		p.acts = true
		return func(fi *findItem) bool {
			if err := os.Remove(fi.abs); err != nil {
				c.ferr(fi.path, err)
				return false
			}
			return true
		}, nil
	case "-exec":
		p.acts = true
		var tmpl []string
		for {
			v, ok := p.next()
			if !ok {
				return nil, fmt.Errorf("missing argument to '-exec'")
			}
			if v == ";" || v == "+" {
				break
			}
			tmpl = append(tmpl, v)
		}
		if len(tmpl) == 0 {
			return nil, fmt.Errorf("missing argument to '-exec'")
		}
		return func(fi *findItem) bool {
			argv := make([]string, len(tmpl))
			for i, t := range tmpl {
				argv[i] = strings.ReplaceAll(t, "{}", fi.path)
			}
			return c.runCommand(argv, strings.NewReader("")) == 0
		}, nil
	case "":
		return nil, fmt.Errorf("expected an expression")
	}
	return nil, fmt.Errorf("unknown predicate '%s'", a)
}

func cmdRealpath(c *cmdCtx) int {
	f, ok := c.parse("efmqs", map[string]string{"canonicalize": "f"})
	if !ok {
		return 1
	}
	status := 0
	for _, p := range f.rest {
		abs := c.abs(p)
		if c.name == "readlink" && !f.has("f") && !f.has("e") && !f.has("m") {
			status = 1 // nothing in the volume is a link
			continue
		}
		if _, err := os.Stat(abs); err != nil && (c.name == "realpath" && !f.has("m") || f.has("e")) {
			status = c.ferr(p, err)
			continue
		}
		fmt.Fprintln(c.out, abs)
	}
	return status
}

func cmdBasename(c *cmdCtx) int {
	f, ok := c.parse("as:z", map[string]string{"multiple": "a", "suffix=": "s"})
	if !ok {
		return 1
	}
	if len(f.rest) == 0 {
		return c.fail("missing operand")
	}
	names, suffix := f.rest, f.get("s", "")
	if !f.has("a") && !f.has("s") && len(names) == 2 {
		names, suffix = names[:1], names[1]
	}
	for _, n := range names {
		b := path.Base(n)
		if suffix != "" && b != suffix {
			b = strings.TrimSuffix(b, suffix)
		}
		fmt.Fprintln(c.out, b)
	}
	return 0
}

func cmdDirname(c *cmdCtx) int {
	if len(c.args) == 0 {
		return c.fail("missing operand")
	}
	for _, n := range c.args {
		fmt.Fprintln(c.out, path.Dir(strings.TrimSuffix(n, "/")))
	}
	return 0
}

func cmdTree(c *cmdCtx) int {
	f, ok := c.parse("adL:", nil)
	if !ok {
		return 1
	}
	root := "."
	if len(f.rest) > 0 {
		root = f.rest[0]
	}
	maxDepth, ok := f.num(c, "L", 1<<30)
	if !ok {
		return 1
	}
	fmt.Fprintln(c.out, root)
	dirs, files := 0, 0
	var walk func(dir, prefix string, depth int)
	walk = func(dir, prefix string, depth int) {
		entries, err := os.ReadDir(c.abs(dir))
		if err != nil || depth > maxDepth {
			return
		}
		var kept []fs.DirEntry
		for _, e := range entries {
			if (f.has("a") || !strings.HasPrefix(e.Name(), ".")) && (!f.has("d") || e.IsDir()) {
				kept = append(kept, e)
			}
		}
		for i, e := range kept {
			branch, next := "├── ", "│   "
			if i == len(kept)-1 {
				branch, next = "└── ", "    "
			}
			fmt.Fprintln(c.out, prefix+branch+e.Name())
			if e.IsDir() {
				dirs++
				walk(joinPath(dir, e.Name()), prefix+next, depth+1)
			} else {
				files++
			}
		}
	}
	walk(root, "", 1)
	if f.has("d") {
		fmt.Fprintf(c.out, "\n%d directories\n", dirs)
	} else {
		fmt.Fprintf(c.out, "\n%d directories, %d files\n", dirs, files)
	}
	return 0
}

func cmdTruncate(c *cmdCtx) int {
	f, ok := c.parse("s:c", map[string]string{"size=": "s", "no-create": "c"})
	if !ok {
		return 1
	}
	size, err := parseSize(f.get("s", ""))
	if err != nil || !f.has("s") {
		return c.fail("you must specify a valid '--size'")
	}
	status := 0
	for _, p := range f.rest {
		if _, err := os.Stat(c.abs(p)); os.IsNotExist(err) && f.has("c") {
			continue
		}
		fh, err := c.create(p, true)
		if err == nil {
			err = fh.Truncate(size)
			fh.Close()
		}
		if err != nil {
			status = c.fail("%v", err)
		}
	}
	return status
}

// parseSize reads 10, 10K, 10M, 10G (powers of 1024) or 10KB (1000).
func parseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.m
			break
		}
	}
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil {
		return 0, err
	}
	return n * mult, nil
}

func cmdMktemp(c *cmdCtx) int {
	f, ok := c.parse("dp:t", map[string]string{"directory": "d", "tmpdir=": "p"})
	if !ok {
		return 1
	}
	tmpl := "tmp.XXXXXXXXXX"
	if len(f.rest) > 0 {
		tmpl = f.rest[0]
	}
	dir := f.get("p", ".")
	pattern := strings.Replace(tmpl, "XXX", "*", 1)
	pattern = strings.ReplaceAll(pattern, "X", "")
	var name string
	var err error
	if f.has("d") {
		name, err = os.MkdirTemp(c.abs(dir), pattern)
	} else {
		var fh *os.File
		fh, err = os.CreateTemp(c.abs(dir), pattern)
		if err == nil {
			name = fh.Name()
			fh.Close()
			noteWrite(name)
		}
	}
	if err != nil {
		return c.fail("%v", fileError(dir, err))
	}
	fmt.Fprintln(c.out, joinPath(dir, filepath.Base(name)))
	return 0
}

func cmdChmod(c *cmdCtx) int {
	if len(c.args) < 2 {
		return c.fail("missing operand")
	}
	status := 0
	for _, p := range c.args[1:] {
		if _, err := os.Stat(c.abs(p)); err != nil {
			status = c.ferr(p, err)
		}
	}
	return status // WASI has no modes: a no-op on files that exist
}

func cmdFile(c *cmdCtx) int {
	status := 0
	for _, p := range c.args {
		st, err := os.Stat(c.abs(p))
		if err != nil {
			fmt.Fprintf(c.out, "%s: cannot open `%s' (No such file or directory)\n", p, p)
			status = 1
			continue
		}
		kind := "directory"
		if !st.IsDir() {
			kind = sniff(c.abs(p), st.Size())
		}
		fmt.Fprintf(c.out, "%s: %s\n", p, kind)
	}
	return status
}

func sniff(abs string, size int64) string {
	if size == 0 {
		return "empty"
	}
	fh, err := os.Open(abs)
	if err != nil {
		return "cannot read"
	}
	defer fh.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(fh, head)
	head = head[:n]
	switch {
	case strings.HasPrefix(string(head), "%PDF"):
		return "PDF document"
	case strings.HasPrefix(string(head), "\x89PNG"):
		return "PNG image data"
	case strings.HasPrefix(string(head), "\xff\xd8\xff"):
		return "JPEG image data"
	case strings.HasPrefix(string(head), "PK\x03\x04"):
		return "Zip archive data"
	case strings.HasPrefix(string(head), "\x1f\x8b"):
		return "gzip compressed data"
	case strings.HasPrefix(strings.TrimSpace(string(head)), "{") || strings.HasPrefix(strings.TrimSpace(string(head)), "["):
		return "JSON text data"
	}
	for _, b := range head {
		if b == 0 {
			return "data"
		}
	}
	return "ASCII text"
}

func cmdDf(c *cmdCtx) int {
	fmt.Fprintln(c.out, "Filesystem     Mounted on")
	fmt.Fprintln(c.out, "session-volume /volume")
	return 0
}
