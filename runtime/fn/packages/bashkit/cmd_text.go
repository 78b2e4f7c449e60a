package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// bre turns a POSIX basic regular expression into Go's syntax: \( \) \{ \}
// \| \+ \? are operators there and ( ) { } | + ? literal.
func bre(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch == '\\' && i+1 < len(s) {
			n := s[i+1]
			i++
			switch n {
			case '(', ')', '{', '}', '|', '+', '?':
				b.WriteByte(n)
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
			continue
		}
		switch ch {
		case '(', ')', '{', '}', '|', '+', '?':
			b.WriteByte('\\')
		}
		b.WriteByte(ch)
	}
	return b.String()
}

func cmdGrep(c *cmdCtx) int {
	f, ok := c.parse("EFGivcnlLoqsrRhHwxe:f:m:A:B:C:Z", map[string]string{"extended-regexp": "E", "fixed-strings": "F",
		"ignore-case": "i", "invert-match": "v", "count": "c", "line-number": "n", "files-with-matches": "l",
		"files-without-match": "L", "only-matching": "o", "quiet": "q", "silent": "q", "no-messages": "s", "recursive": "r",
		"no-filename": "h", "with-filename": "H", "word-regexp": "w", "line-regexp": "x", "regexp=": "e", "max-count=": "m",
		"after-context=": "A", "before-context=": "B", "context=": "C", "include=": "I"})
	if !ok {
		return 2
	}
	pats := f.all("e")
	ops := f.rest
	if len(pats) == 0 {
		if len(ops) == 0 {
			c.fail("no pattern given")
			return 2
		}
		pats, ops = []string{ops[0]}, ops[1:]
	}
	var alts []string
	for _, p := range pats {
		for _, q := range strings.Split(p, "\n") {
			switch {
			case f.has("F") || c.name == "fgrep":
				q = regexp.QuoteMeta(q)
			case !f.has("E") && c.name != "egrep":
				q = bre(q)
			}
			if f.has("w") {
				q = `\b(?:` + q + `)\b`
			}
			if f.has("x") {
				q = `^(?:` + q + `)$`
			}
			alts = append(alts, "(?:"+q+")")
		}
	}
	expr := strings.Join(alts, "|")
	if f.has("i") {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		c.fail("invalid regular expression: %v", err)
		return 2
	}
	maxCount, ok := f.num(c, "m", -1)
	if !ok {
		return 2
	}
	after, _ := f.num(c, "A", 0)
	before, _ := f.num(c, "B", 0)
	if f.has("C") {
		n, _ := f.num(c, "C", 0)
		after, before = n, n
	}
	if f.has("r") || f.has("R") {
		if len(ops) == 0 {
			ops = []string{"."}
		}
		ops = c.expandTree(ops, f.get("I", ""))
	}
	names := (len(ops) > 1 || f.has("r") || f.has("R")) && !f.has("h") || f.has("H")
	invert, quiet, listing, counting, only, numbers := f.has("v"), f.has("q"), f.has("l") || f.has("L"), f.has("c"), f.has("o"), f.has("n")
	matched := false
	st := c.each(ops, func(name string, r io.Reader) error {
		if name == "-" {
			name = "(standard input)"
		}
		count, n, lastShown, pendingAfter := 0, 0, 0, 0
		var ring []string
		prefix := func(n int, sep string) string {
			p := ""
			if names {
				p = name + sep
			}
			if numbers {
				p += strconv.Itoa(n) + sep
			}
			return p
		}
		err := scanLines(r, func(l string) error {
			n++
			if maxCount >= 0 && count >= maxCount {
				if pendingAfter > 0 {
					pendingAfter--
					lastShown = n
					_, err := fmt.Fprintln(c.out, prefix(n, "-")+l)
					return err
				}
				return nil
			}
			hit := re.MatchString(l) != invert
			if !hit {
				if pendingAfter > 0 && !counting && !listing && !quiet {
					pendingAfter--
					lastShown = n
					_, err := fmt.Fprintln(c.out, prefix(n, "-")+l)
					return err
				}
				if before > 0 {
					ring = append(ring, l)
					if len(ring) > before {
						ring = ring[1:]
					}
				}
				return nil
			}
			count++
			matched = true
			if quiet || listing || counting {
				return nil
			}
			if (before > 0 || after > 0) && lastShown > 0 && n-len(ring) > lastShown+1 {
				fmt.Fprintln(c.out, "--")
			}
			for i, rl := range ring {
				fmt.Fprintln(c.out, prefix(n-len(ring)+i, "-")+rl)
			}
			ring = ring[:0]
			lastShown, pendingAfter = n, after
			if only && !invert {
				for _, m := range re.FindAllString(l, -1) {
					if m != "" {
						if _, err := fmt.Fprintln(c.out, prefix(n, ":")+m); err != nil {
							return err
						}
					}
				}
				return nil
			}
			_, err := fmt.Fprintln(c.out, prefix(n, ":")+l)
			return err
		})
		switch {
		case f.has("q"):
		case f.has("l"):
			if count > 0 {
				fmt.Fprintln(c.out, name)
			}
		case f.has("L"):
			if count == 0 {
				fmt.Fprintln(c.out, name)
			}
		case f.has("c"):
			if names {
				fmt.Fprintf(c.out, "%s:%d\n", name, count)
			} else {
				fmt.Fprintln(c.out, count)
			}
		}
		return err
	})
	switch {
	case st != 0 && !(f.has("q") && matched):
		return 2
	case matched:
		return 0
	}
	return 1
}

// expandTree lists the files under each operand, for grep -r.
func (c *cmdCtx) expandTree(ops []string, include string) []string {
	var out []string
	for _, o := range ops {
		var fs []string
		findCtx := *c
		var buf bytes.Buffer
		findCtx.out = &buf
		findCtx.args = []string{o, "-type", "f"}
		if include != "" {
			findCtx.args = append(findCtx.args, "-name", include)
		}
		cmdFind(&findCtx)
		fs = strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		sort.Strings(fs)
		for _, f := range fs {
			if f != "" {
				out = append(out, f)
			}
		}
	}
	return out
}

// sortKey is one -k field range of sort, with its own options.
type sortKey struct {
	f1, c1, f2, c2 int
	numeric, rev   bool
	fold, human    bool
	general        bool
}

func cmdSort(c *cmdCtx) int {
	f, ok := c.parse("nrufbt:k:o:shVgcm", map[string]string{"numeric-sort": "n", "reverse": "r", "unique": "u",
		"ignore-case": "f", "field-separator=": "t", "key=": "k", "output=": "o", "stable": "s", "human-numeric-sort": "h",
		"version-sort": "V", "general-numeric-sort": "g", "check": "c", "merge": "m", "ignore-leading-blanks": "b"})
	if !ok {
		return 2
	}
	lines, st := c.lines(f.rest)
	if st != 0 {
		return 2
	}
	sep := f.get("t", "")
	var keys []sortKey
	for _, k := range f.all("k") {
		var key sortKey
		spec, opts := k, ""
		for i, r := range spec {
			if unicode.IsLetter(r) {
				spec, opts = k[:i], k[i:]
				break
			}
		}
		if i := strings.IndexAny(opts, ","); i >= 0 {
			spec, opts = k, ""
		}
		a, b, _ := strings.Cut(spec, ",")
		stripOpts := func(s string) (string, string) {
			for i, r := range s {
				if unicode.IsLetter(r) {
					return s[:i], s[i:]
				}
			}
			return s, ""
		}
		a, o1 := stripOpts(a)
		b, o2 := stripOpts(b)
		opts += o1 + o2
		fa, ca, _ := strings.Cut(a, ".")
		key.f1, _ = strconv.Atoi(fa)
		key.c1, _ = strconv.Atoi(ca)
		if b != "" {
			fb, cb, _ := strings.Cut(b, ".")
			key.f2, _ = strconv.Atoi(fb)
			key.c2, _ = strconv.Atoi(cb)
		}
		if key.f1 < 1 {
			c.fail("invalid key '%s'", k)
			return 2
		}
		key.numeric = strings.Contains(opts, "n")
		key.rev = strings.Contains(opts, "r")
		key.fold = strings.Contains(opts, "f")
		key.human = strings.Contains(opts, "h")
		key.general = strings.Contains(opts, "g")
		if opts == "" || opts == "b" {
			key.numeric, key.fold, key.human, key.general = f.has("n"), f.has("f"), f.has("h"), f.has("g")
		}
		keys = append(keys, key)
	}
	whole := sortKey{numeric: f.has("n"), fold: f.has("f"), human: f.has("h"), general: f.has("g")}
	version, stable := f.has("V"), f.has("s") || f.has("u") // read once: cmp runs n log n times
	cmpKey := func(a, b string, k sortKey) int {
		if k.f1 > 0 {
			a, b = keyField(a, sep, k), keyField(b, sep, k)
		}
		var r int
		switch {
		case k.numeric || k.general:
			r = cmpNum(numPrefix(a), numPrefix(b))
		case k.human:
			r = cmpNum(humanNum(a), humanNum(b))
		case version:
			r = cmpVersion(a, b)
		case k.fold:
			r = strings.Compare(strings.ToUpper(a), strings.ToUpper(b))
		default:
			r = strings.Compare(a, b)
		}
		if k.rev {
			r = -r
		}
		return r
	}
	cmp := func(a, b string) int {
		for _, k := range keys {
			if r := cmpKey(a, b, k); r != 0 {
				return r
			}
		}
		if len(keys) == 0 {
			if r := cmpKey(a, b, whole); r != 0 {
				return r
			}
		}
		if stable {
			return 0
		}
		return strings.Compare(a, b) // GNU's last resort: the whole line, bytewise
	}
	if f.has("r") {
		base := cmp
		cmp = func(a, b string) int { return -base(a, b) }
	}
	if f.has("c") {
		for i := 1; i < len(lines); i++ {
			if cmp(lines[i-1], lines[i]) > 0 {
				fmt.Fprintf(c.errw, "sort: -:%d: disorder: %s\n", i+1, lines[i])
				return 1
			}
		}
		return 0
	}
	slices.SortStableFunc(lines, cmp)
	if f.has("u") {
		out := lines[:0]
		for i, l := range lines {
			if i == 0 || cmp(out[len(out)-1], l) != 0 {
				out = append(out, l)
			}
		}
		lines = out
	}
	w := c.out
	if o := f.get("o", ""); o != "" {
		fh, err := c.create(o, false)
		if err != nil {
			c.fail("%v", err)
			return 2
		}
		defer fh.Close()
		w = fh
	}
	if err := writeLines(w, lines); err != nil {
		return 2
	}
	return 0
}

// keyField cuts a sort key out of a line: fields split by sep, or by runs of
// blanks that stay at the front of each field (as GNU sort does without -t).
func keyField(line, sep string, k sortKey) string {
	var starts, ends []int
	if sep != "" {
		pos := 0
		for _, part := range strings.Split(line, sep) {
			starts, ends = append(starts, pos), append(ends, pos+len(part))
			pos += len(part) + len(sep)
		}
	} else {
		i := 0
		for i < len(line) {
			s := i
			for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
				i++
			}
			for i < len(line) && line[i] != ' ' && line[i] != '\t' {
				i++
			}
			starts, ends = append(starts, s), append(ends, i)
		}
	}
	if k.f1 > len(starts) {
		return ""
	}
	from := starts[k.f1-1]
	if k.c1 > 0 {
		from = min(from+k.c1-1, len(line))
	}
	to := len(line)
	if k.f2 > 0 && k.f2 <= len(ends) {
		to = ends[k.f2-1]
		if k.c2 > 0 {
			to = min(starts[k.f2-1]+k.c2, to)
		}
	}
	if to < from {
		return ""
	}
	s := line[from:to]
	if k.numeric || k.human || k.general {
		s = strings.TrimLeft(s, " \t")
	}
	return s
}

func numPrefix(s string) float64 {
	s = strings.TrimLeft(s, " \t")
	end := 0
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] == '.' || end == 0 && s[end] == '-') {
		end++
	}
	v, _ := strconv.ParseFloat(s[:end], 64)
	return v
}

func humanNum(s string) float64 {
	v := numPrefix(s)
	s = strings.TrimSpace(s)
	if s != "" {
		if i := strings.IndexByte("KMGTPE", s[len(s)-1]); i >= 0 {
			for ; i >= 0; i-- {
				v *= 1024
			}
		}
	}
	return v
}

func cmpNum(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpVersion compares runs of digits as numbers and the rest as text.
func cmpVersion(a, b string) int {
	for a != "" && b != "" {
		da, db := unicode.IsDigit(rune(a[0])), unicode.IsDigit(rune(b[0]))
		if da && db {
			ia, ib := digitsEnd(a), digitsEnd(b)
			na, _ := strconv.ParseUint(a[:ia], 10, 64)
			nb, _ := strconv.ParseUint(b[:ib], 10, 64)
			if na != nb {
				return cmpNum(float64(na), float64(nb))
			}
			a, b = a[ia:], b[ib:]
			continue
		}
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		a, b = a[1:], b[1:]
	}
	return len(a) - len(b)
}

func digitsEnd(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

func cmdUniq(c *cmdCtx) int {
	f, ok := c.parse("cduif:s:w:", map[string]string{"count": "c", "repeated": "d", "unique": "u", "ignore-case": "i",
		"skip-fields=": "f", "skip-chars=": "s", "check-chars=": "w"})
	if !ok {
		return 1
	}
	skipF, _ := f.num(c, "f", 0)
	skipC, _ := f.num(c, "s", 0)
	checkW, _ := f.num(c, "w", 0)
	key := func(l string) string {
		for i := 0; i < skipF; i++ {
			l = strings.TrimLeft(l, " \t")
			if j := strings.IndexAny(l, " \t"); j >= 0 {
				l = l[j:]
			} else {
				l = ""
			}
		}
		if skipC > 0 {
			l = l[min(skipC, len(l)):]
		}
		if checkW > 0 && len(l) > checkW {
			l = l[:checkW]
		}
		if f.has("i") {
			l = strings.ToLower(l)
		}
		return l
	}
	in, out := f.rest, ""
	if len(in) > 1 {
		in, out = in[:1], in[1]
	}
	w := c.out
	if out != "" {
		fh, err := c.create(out, false)
		if err != nil {
			return c.fail("%v", err)
		}
		defer fh.Close()
		w = fh
	}
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	var prev string
	n := 0
	flush := func() {
		if n == 0 || f.has("d") && n < 2 || f.has("u") && n > 1 {
			return
		}
		if f.has("c") {
			fmt.Fprintf(bw, "%7d %s\n", n, prev)
		} else {
			fmt.Fprintln(bw, prev)
		}
	}
	st := c.each(in, func(_ string, r io.Reader) error {
		return scanLines(r, func(l string) error {
			if n > 0 && key(l) == key(prev) {
				n++
				return nil
			}
			flush()
			prev, n = l, 1
			return nil
		})
	})
	flush()
	return st
}

func cmdWc(c *cmdCtx) int {
	f, ok := c.parse("lwcmL", map[string]string{"lines": "l", "words": "w", "bytes": "c", "chars": "m", "max-line-length": "L"})
	if !ok {
		return 1
	}
	show := []string{}
	for _, k := range []string{"l", "w", "m", "c", "L"} {
		if f.has(k) {
			show = append(show, k)
		}
	}
	if len(show) == 0 {
		show = []string{"l", "w", "c"}
	}
	type counts map[string]int
	var rows []counts
	var names []string
	total := counts{}
	st := c.each(f.rest, func(name string, r io.Reader) error {
		b, err := io.ReadAll(r)
		n := counts{"l": bytes.Count(b, []byte{'\n'}), "w": len(bytes.Fields(b)), "c": len(b), "m": utf8.RuneCount(b)}
		for _, l := range strings.Split(string(b), "\n") {
			n["L"] = max(n["L"], utf8.RuneCountInString(l))
		}
		rows, names = append(rows, n), append(names, name)
		for k, v := range n {
			if k == "L" {
				total[k] = max(total[k], v)
			} else {
				total[k] += v
			}
		}
		return err
	})
	if len(rows) > 1 {
		rows, names = append(rows, total), append(names, "total")
	}
	// GNU's width: 1 for one count of one file; else the digits of the
	// files' total size, at least 7 when one input is not a file.
	width := 1
	if len(show) > 1 || len(rows) > 1 {
		width = len(strconv.Itoa(total["c"]))
		for _, n := range names {
			if n == "-" {
				width = max(width, 7)
			}
		}
	}
	for i, row := range rows {
		parts := make([]string, len(show))
		for j, k := range show {
			parts[j] = fmt.Sprintf("%*d", width, row[k])
		}
		line := strings.Join(parts, " ")
		if names[i] != "-" {
			line += " " + names[i]
		}
		fmt.Fprintln(c.out, line)
	}
	return st
}

// leadingCount turns head -5 / tail -5 / tail +5 into -n.
func leadingCount(c *cmdCtx) {
	if len(c.args) > 0 && len(c.args[0]) > 1 && (c.args[0][0] == '-' || c.args[0][0] == '+' && c.name == "tail") {
		if _, err := strconv.Atoi(c.args[0][1:]); err == nil {
			v := c.args[0][1:]
			if c.args[0][0] == '+' {
				v = "+" + v
			}
			c.args = append([]string{"-n", v}, c.args[1:]...)
		}
	}
}

func cmdHead(c *cmdCtx) int {
	leadingCount(c)
	f, ok := c.parse("n:c:qv", map[string]string{"lines=": "n", "bytes=": "c", "quiet": "q", "verbose": "v"})
	if !ok {
		return 1
	}
	n, ok := f.num(c, "n", 10)
	if !ok {
		return 1
	}
	multi := len(f.rest) > 1 && !f.has("q") || f.has("v")
	first := true
	return c.each(f.rest, func(name string, r io.Reader) error {
		if multi {
			if !first {
				fmt.Fprintln(c.out)
			}
			fmt.Fprintf(c.out, "==> %s <==\n", name)
		}
		first = false
		if f.has("c") {
			nc, _ := f.num(c, "c", 0)
			if nc < 0 {
				b, err := io.ReadAll(r)
				c.out.Write(b[:max(0, len(b)+nc)])
				return err
			}
			_, err := io.CopyN(c.out, r, int64(nc))
			if err == io.EOF {
				err = nil
			}
			return err
		}
		if n < 0 {
			var lines []string
			err := scanLines(r, func(l string) error { lines = append(lines, l); return nil })
			writeLines(c.out, lines[:max(0, len(lines)+n)])
			return err
		}
		br := bufio.NewReader(r)
		for i := 0; i < n; i++ {
			l, err := br.ReadString('\n')
			if l != "" {
				if _, werr := io.WriteString(c.out, l); werr != nil {
					return werr
				}
			}
			if err != nil {
				break
			}
		}
		go io.Copy(io.Discard, br) // let a writer upstream finish, like a closed pipe
		return nil
	})
}

func cmdTail(c *cmdCtx) int {
	leadingCount(c)
	f, ok := c.parse("n:c:qvf", map[string]string{"lines=": "n", "bytes=": "c", "quiet": "q", "verbose": "v", "follow": "f"})
	if !ok {
		return 1
	}
	spec := f.get("n", "10")
	fromStart := strings.HasPrefix(spec, "+")
	n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimPrefix(spec, "+"), "-"))
	if err != nil {
		return c.fail("invalid number of lines: '%s'", spec)
	}
	multi := len(f.rest) > 1 && !f.has("q") || f.has("v")
	first := true
	return c.each(f.rest, func(name string, r io.Reader) error {
		if multi {
			if !first {
				fmt.Fprintln(c.out)
			}
			fmt.Fprintf(c.out, "==> %s <==\n", name)
		}
		first = false
		b, err := io.ReadAll(r)
		if f.has("c") {
			cs := f.get("c", "0")
			nc, _ := strconv.Atoi(strings.TrimPrefix(cs, "+"))
			if strings.HasPrefix(cs, "+") {
				c.out.Write(b[min(len(b), max(nc-1, 0)):])
			} else {
				c.out.Write(b[max(0, len(b)-nc):])
			}
			return err
		}
		lines := strings.SplitAfter(string(b), "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		if fromStart {
			lines = lines[min(len(lines), max(n-1, 0)):]
		} else {
			lines = lines[max(0, len(lines)-n):]
		}
		_, werr := io.WriteString(c.out, strings.Join(lines, ""))
		if werr != nil {
			return werr
		}
		return err
	})
}

// ranges parses cut's list: N, N-M, N-, -M, comma separated.
func ranges(list string) ([][2]int, error) {
	var out [][2]int
	for _, part := range strings.Split(list, ",") {
		a, b, isRange := strings.Cut(part, "-")
		lo, hi := 1, 1<<30
		var err error
		if a != "" {
			if lo, err = strconv.Atoi(a); err != nil || lo < 1 {
				return nil, fmt.Errorf("invalid field value '%s'", part)
			}
		}
		if !isRange {
			hi = lo
		} else if b != "" {
			if hi, err = strconv.Atoi(b); err != nil {
				return nil, fmt.Errorf("invalid field range '%s'", part)
			}
		}
		out = append(out, [2]int{lo, hi})
	}
	return out, nil
}

func inRanges(rs [][2]int, i int) bool {
	for _, r := range rs {
		if i >= r[0] && i <= r[1] {
			return true
		}
	}
	return false
}

func cmdCut(c *cmdCtx) int {
	f, ok := c.parse("d:f:c:b:sz", map[string]string{"delimiter=": "d", "fields=": "f", "characters=": "c", "bytes=": "b",
		"only-delimited": "s", "complement": "C", "output-delimiter=": "O"})
	if !ok {
		return 1
	}
	list := f.get("f", f.get("c", f.get("b", "")))
	if list == "" {
		return c.fail("you must specify a list of bytes, characters, or fields")
	}
	rs, err := ranges(list)
	if err != nil {
		return c.fail("%v", err)
	}
	delim := f.get("d", "\t")
	if len(delim) != 1 {
		return c.fail("the delimiter must be a single character")
	}
	outDelim := f.get("O", delim)
	fields, onlyDelimited, complement, chars := f.has("f"), f.has("s"), f.has("C"), f.has("c")
	bw := bufio.NewWriter(c.out)
	defer bw.Flush()
	return c.each(f.rest, func(_ string, r io.Reader) error {
		return scanLines(r, func(l string) error {
			var out string
			if fields {
				if !strings.Contains(l, delim) {
					if onlyDelimited {
						return nil
					}
					out = l
				} else {
					parts := strings.Split(l, delim)
					var kept []string
					for i, p := range parts {
						if inRanges(rs, i+1) != complement {
							kept = append(kept, p)
						}
					}
					out = strings.Join(kept, outDelim)
				}
			} else {
				var b strings.Builder
				units := []string{}
				if chars {
					for _, r := range l {
						units = append(units, string(r))
					}
				} else {
					for i := 0; i < len(l); i++ {
						units = append(units, l[i:i+1])
					}
				}
				for i, u := range units {
					if inRanges(rs, i+1) != complement {
						b.WriteString(u)
					}
				}
				out = b.String()
			}
			bw.WriteString(out)
			return bw.WriteByte('\n')
		})
	})
}

// trSet expands a tr set: ranges a-z, classes [:alpha:], escapes \n \t \\.
func trSet(s string) []rune {
	classes := map[string]func(rune) bool{"alpha": unicode.IsLetter, "digit": unicode.IsDigit, "upper": unicode.IsUpper,
		"lower": unicode.IsLower, "space": unicode.IsSpace, "alnum": func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) },
		"punct": func(r rune) bool { return r < 128 && unicode.IsPunct(r) || r < 128 && unicode.IsSymbol(r) }, "blank": func(r rune) bool { return r == ' ' || r == '\t' },
		"cntrl": unicode.IsControl, "print": func(r rune) bool { return r >= 32 && r < 127 }, "xdigit": func(r rune) bool { return strings.ContainsRune("0123456789abcdefABCDEF", r) }}
	var out []rune
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		if rs[i] == '[' && i+1 < len(rs) && rs[i+1] == ':' {
			if end := strings.Index(string(rs[i:]), ":]"); end > 0 {
				name := string(rs[i+2 : i+end])
				if is, ok := classes[name]; ok {
					for r := rune(0); r < 128; r++ {
						if is(r) {
							out = append(out, r)
						}
					}
					i += len([]rune(string(rs[i:i+end+2]))) - 1
					continue
				}
			}
		}
		r := rs[i]
		if r == '\\' && i+1 < len(rs) {
			i++
			r = map[rune]rune{'n': '\n', 't': '\t', 'r': '\r', '\\': '\\', '0': 0, 'a': 7, 'b': 8, 'f': 12, 'v': 11}[rs[i]]
			if r == 0 && rs[i] != '0' {
				r = rs[i]
			}
		}
		if i+2 < len(rs) && rs[i+1] == '-' {
			for x := r; x <= rs[i+2]; x++ {
				out = append(out, x)
			}
			i += 2
			continue
		}
		out = append(out, r)
	}
	return out
}

func cmdTr(c *cmdCtx) int {
	f, ok := c.parse("dscCt", map[string]string{"delete": "d", "squeeze-repeats": "s", "complement": "c", "truncate-set1": "t"})
	if !ok {
		return 1
	}
	if len(f.rest) < 1 || len(f.rest) < 2 && !f.has("d") && !f.has("s") {
		return c.fail("missing operand")
	}
	set1 := trSet(f.rest[0])
	var set2 []rune
	if len(f.rest) > 1 {
		set2 = trSet(f.rest[1])
	}
	in1 := map[rune]bool{}
	for _, r := range set1 {
		in1[r] = true
	}
	comp := f.has("c") || f.has("C")
	member := func(r rune) bool { return in1[r] != comp }
	mapping := map[rune]rune{}
	if !f.has("d") && len(set2) > 0 && !comp {
		for i, r := range set1 {
			if _, seen := mapping[r]; !seen {
				mapping[r] = set2[min(i, len(set2)-1)]
			}
		}
	}
	squeeze := map[rune]bool{}
	sq := set2
	if f.has("d") || len(set2) == 0 {
		sq = set1
	}
	for _, r := range sq {
		squeeze[r] = true
	}
	data, st := c.readAll(nil)
	var b strings.Builder
	last := rune(-1)
	for _, r := range string(data) {
		if f.has("d") && member(r) {
			continue
		}
		if !f.has("d") && len(set2) > 0 {
			if comp && member(r) {
				r = set2[len(set2)-1]
			} else if m, ok := mapping[r]; ok {
				r = m
			}
		}
		if f.has("s") && r == last && (squeeze[r] != (comp && (f.has("d") || len(set2) == 0))) {
			continue
		}
		b.WriteRune(r)
		last = r
	}
	io.WriteString(c.out, b.String())
	return st
}

func cmdTee(c *cmdCtx) int {
	f, ok := c.parse("ai", map[string]string{"append": "a"})
	if !ok {
		return 1
	}
	ws := []io.Writer{c.out}
	status := 0
	for _, p := range f.rest {
		fh, err := c.create(p, f.has("a"))
		if err != nil {
			status = c.fail("%v", err)
			continue
		}
		defer fh.Close()
		ws = append(ws, fh)
	}
	if _, err := io.Copy(io.MultiWriter(ws...), c.in); err != nil && err != errOutputLimit {
		return c.fail("%v", err)
	}
	return status
}

func cmdPaste(c *cmdCtx) int {
	f, ok := c.parse("d:s", map[string]string{"delimiters=": "d", "serial": "s"})
	if !ok {
		return 1
	}
	delims := []rune(strings.NewReplacer(`\t`, "\t", `\n`, "\n", `\0`, "").Replace(f.get("d", "\t")))
	if len(delims) == 0 {
		delims = []rune{0}
	}
	files := f.rest
	if len(files) == 0 {
		files = []string{"-"}
	}
	var cols [][]string
	for _, name := range files {
		ls, st := c.lines([]string{name})
		if st != 0 {
			return st
		}
		cols = append(cols, ls)
	}
	delim := func(i int) string {
		d := delims[i%len(delims)]
		if d == 0 {
			return ""
		}
		return string(d)
	}
	var out []string
	if f.has("s") {
		for _, col := range cols {
			var b strings.Builder
			for i, l := range col {
				if i > 0 {
					b.WriteString(delim(i - 1))
				}
				b.WriteString(l)
			}
			out = append(out, b.String())
		}
	} else {
		rows := 0
		for _, col := range cols {
			rows = max(rows, len(col))
		}
		for r := 0; r < rows; r++ {
			var b strings.Builder
			for i, col := range cols {
				if i > 0 {
					b.WriteString(delim(i - 1))
				}
				if r < len(col) {
					b.WriteString(col[r])
				}
			}
			out = append(out, b.String())
		}
	}
	writeLines(c.out, out)
	return 0
}

func cmdRev(c *cmdCtx) int {
	return c.each(c.args, func(_ string, r io.Reader) error {
		return scanLines(r, func(l string) error {
			rs := []rune(l)
			for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
				rs[i], rs[j] = rs[j], rs[i]
			}
			_, err := fmt.Fprintln(c.out, string(rs))
			return err
		})
	})
}

func cmdNl(c *cmdCtx) int {
	f, ok := c.parse("b:w:s:v:n:", map[string]string{"body-numbering=": "b", "number-width=": "w", "number-separator=": "s"})
	if !ok {
		return 1
	}
	width, _ := f.num(c, "w", 6)
	n, _ := f.num(c, "v", 1)
	sep, style, format := f.get("s", "\t"), f.get("b", "t"), f.get("n", "rn")
	return c.each(f.rest, func(_ string, r io.Reader) error {
		return scanLines(r, func(l string) error {
			if style == "n" || style == "t" && l == "" {
				_, err := fmt.Fprintf(c.out, "%s%s\n", strings.Repeat(" ", width+len(sep)), l)
				return err
			}
			num := fmt.Sprintf("%*d", width, n)
			switch format {
			case "ln":
				num = fmt.Sprintf("%-*d", width, n)
			case "rz":
				num = fmt.Sprintf("%0*d", width, n)
			}
			n++
			_, err := fmt.Fprintf(c.out, "%s%s%s\n", num, sep, l)
			return err
		})
	})
}

func cmdFold(c *cmdCtx) int {
	f, ok := c.parse("w:sb", map[string]string{"width=": "w", "spaces": "s", "bytes": "b"})
	if !ok {
		return 1
	}
	width, ok := f.num(c, "w", 80)
	if !ok || width < 1 {
		return c.fail("invalid number of columns")
	}
	return c.each(f.rest, func(_ string, r io.Reader) error {
		return scanLines(r, func(l string) error {
			rs := []rune(l)
			for len(rs) > width {
				cut := width
				if f.has("s") {
					if i := strings.LastIndexAny(string(rs[:width]), " \t"); i >= 0 {
						cut = len([]rune(string(rs[:width])[:i+1]))
					}
				}
				fmt.Fprintln(c.out, string(rs[:cut]))
				rs = rs[cut:]
			}
			_, err := fmt.Fprintln(c.out, string(rs))
			return err
		})
	})
}

func cmdExpand(c *cmdCtx) int {
	f, ok := c.parse("t:i", map[string]string{"tabs=": "t", "initial": "i"})
	if !ok {
		return 1
	}
	tab, _ := f.num(c, "t", 8)
	return c.each(f.rest, func(_ string, r io.Reader) error {
		return scanLines(r, func(l string) error {
			var b strings.Builder
			col, lead := 0, true
			for _, ch := range l {
				if ch == '\t' && (lead || !f.has("i")) {
					n := tab - col%tab
					b.WriteString(strings.Repeat(" ", n))
					col += n
					continue
				}
				if ch != ' ' {
					lead = false
				}
				b.WriteRune(ch)
				col++
			}
			_, err := fmt.Fprintln(c.out, b.String())
			return err
		})
	})
}

func cmdUnexpand(c *cmdCtx) int {
	f, ok := c.parse("t:a", map[string]string{"tabs=": "t", "all": "a"})
	if !ok {
		return 1
	}
	tab, _ := f.num(c, "t", 8)
	return c.each(f.rest, func(_ string, r io.Reader) error {
		return scanLines(r, func(l string) error {
			lead := len(l) - len(strings.TrimLeft(l, " "))
			if f.has("a") || f.has("t") {
				// whole line: every run of spaces reaching a tab stop
				var b strings.Builder
				col, spaces := 0, 0
				for _, ch := range l {
					if ch == ' ' {
						spaces++
						col++
						if col%tab == 0 {
							if spaces > 1 {
								b.WriteByte('\t')
							} else {
								b.WriteByte(' ')
							}
							spaces = 0
						}
						continue
					}
					b.WriteString(strings.Repeat(" ", spaces))
					spaces = 0
					b.WriteRune(ch)
					col++
				}
				b.WriteString(strings.Repeat(" ", spaces))
				_, err := fmt.Fprintln(c.out, b.String())
				return err
			}
			_, err := fmt.Fprintln(c.out, strings.Repeat("\t", lead/tab)+strings.Repeat(" ", lead%tab)+l[lead:])
			return err
		})
	})
}

func cmdTac(c *cmdCtx) int {
	lines, st := c.lines(c.args)
	for i := len(lines) - 1; i >= 0; i-- {
		if _, err := fmt.Fprintln(c.out, lines[i]); err != nil {
			return 1
		}
	}
	return st
}

func cmdComm(c *cmdCtx) int {
	f, ok := c.parse("123", nil)
	if !ok {
		return 1
	}
	if len(f.rest) != 2 {
		return c.fail("missing operand")
	}
	a, st1 := c.lines(f.rest[:1])
	b, st2 := c.lines(f.rest[1:])
	if st1+st2 != 0 {
		return 1
	}
	col := func(n int, s string) {
		if f.has(strconv.Itoa(n)) {
			return
		}
		pre := ""
		for k := 1; k < n; k++ {
			if !f.has(strconv.Itoa(k)) {
				pre += "\t"
			}
		}
		fmt.Fprintln(c.out, pre+s)
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j >= len(b) || i < len(a) && a[i] < b[j]:
			col(1, a[i])
			i++
		case i >= len(a) || b[j] < a[i]:
			col(2, b[j])
			j++
		default:
			col(3, a[i])
			i, j = i+1, j+1
		}
	}
	return 0
}

func cmdJoin(c *cmdCtx) int {
	f, ok := c.parse("t:1:2:j:a:v:i", nil)
	if !ok {
		return 1
	}
	if len(f.rest) != 2 {
		return c.fail("missing operand")
	}
	f1, _ := f.num(c, "1", 1)
	f2, _ := f.num(c, "2", 1)
	if f.has("j") {
		j, _ := f.num(c, "j", 1)
		f1, f2 = j, j
	}
	sep := f.get("t", "")
	split := func(l string) []string {
		if sep != "" {
			return strings.Split(l, sep)
		}
		return strings.Fields(l)
	}
	outSep := sep
	if outSep == "" {
		outSep = " "
	}
	a, _ := c.lines(f.rest[:1])
	b, _ := c.lines(f.rest[1:])
	key := func(fs []string, n int) string {
		if n-1 < len(fs) {
			if f.has("i") {
				return strings.ToLower(fs[n-1])
			}
			return fs[n-1]
		}
		return ""
	}
	rest := func(fs []string, n int) []string {
		var out []string
		for i, x := range fs {
			if i != n-1 {
				out = append(out, x)
			}
		}
		return out
	}
	unpaired := map[string]bool{}
	for _, v := range append(f.all("a"), f.all("v")...) {
		unpaired[v] = true
	}
	only := f.has("v")
	emit := func(parts []string) { fmt.Fprintln(c.out, strings.Join(parts, outSep)) }
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var fa, fb []string
		if i < len(a) {
			fa = split(a[i])
		}
		if j < len(b) {
			fb = split(b[j])
		}
		switch {
		case j >= len(b) || i < len(a) && key(fa, f1) < key(fb, f2):
			if unpaired["1"] {
				emit(fa)
			}
			i++
		case i >= len(a) || key(fb, f2) < key(fa, f1):
			if unpaired["2"] {
				emit(fb)
			}
			j++
		default:
			k := key(fa, f1)
			j0 := j
			for ; i < len(a) && key(split(a[i]), f1) == k; i++ {
				for j = j0; j < len(b) && key(split(b[j]), f2) == k; j++ {
					if !only {
						emit(append(append([]string{split(a[i])[f1-1]}, rest(split(a[i]), f1)...), rest(split(b[j]), f2)...))
					}
				}
			}
		}
	}
	return 0
}

func cmdSplit(c *cmdCtx) int {
	f, ok := c.parse("l:b:n:da:", map[string]string{"lines=": "l", "bytes=": "b", "numeric-suffixes": "d", "suffix-length=": "a"})
	if !ok {
		return 1
	}
	in, prefix := "-", "x"
	if len(f.rest) > 0 {
		in = f.rest[0]
	}
	if len(f.rest) > 1 {
		prefix = f.rest[1]
	}
	data, st := c.readAll([]string{in})
	if st != 0 {
		return st
	}
	var chunks [][]byte
	if f.has("b") {
		n, err := parseSize(f.get("b", ""))
		if err != nil || n < 1 {
			return c.fail("invalid number of bytes")
		}
		for len(data) > 0 {
			k := min(int(n), len(data))
			chunks, data = append(chunks, data[:k]), data[k:]
		}
	} else {
		n, ok := f.num(c, "l", 1000)
		if !ok || n < 1 {
			return c.fail("invalid number of lines")
		}
		lines := bytes.SplitAfter(data, []byte{'\n'})
		if len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		for i := 0; i < len(lines); i += n {
			chunks = append(chunks, bytes.Join(lines[i:min(i+n, len(lines))], nil))
		}
	}
	width, _ := f.num(c, "a", 2)
	for i, ch := range chunks {
		suffix := ""
		if f.has("d") {
			suffix = fmt.Sprintf("%0*d", width, i)
		} else {
			for k, v := 0, i; k < width; k, v = k+1, v/26 {
				suffix = string(rune('a'+v%26)) + suffix
			}
		}
		fh, err := c.create(prefix+suffix, false)
		if err != nil {
			return c.fail("%v", err)
		}
		_, err = fh.Write(ch)
		fh.Close()
		if err != nil {
			return c.fail("%v", fileError(prefix+suffix, err))
		}
	}
	return 0
}

func cmdCmp(c *cmdCtx) int {
	f, ok := c.parse("sl", map[string]string{"silent": "s", "quiet": "s", "verbose": "l"})
	if !ok || len(f.rest) != 2 {
		c.fail("missing operand")
		return 2
	}
	a, st1 := c.readAll(f.rest[:1])
	b, st2 := c.readAll(f.rest[1:])
	if st1+st2 != 0 {
		return 2
	}
	line := 1
	for i := 0; i < min(len(a), len(b)); i++ {
		if a[i] != b[i] {
			if !f.has("s") {
				fmt.Fprintf(c.out, "%s %s differ: byte %d, line %d\n", f.rest[0], f.rest[1], i+1, line)
			}
			return 1
		}
		if a[i] == '\n' {
			line++
		}
	}
	if len(a) != len(b) {
		if !f.has("s") {
			short := f.rest[0]
			if len(b) < len(a) {
				short = f.rest[1]
			}
			fmt.Fprintf(c.errw, "cmp: EOF on %s after byte %d\n", short, min(len(a), len(b)))
		}
		return 1
	}
	return 0
}

func cmdColumn(c *cmdCtx) int {
	f, ok := c.parse("ts:o:", map[string]string{"table": "t", "separator=": "s", "output-separator=": "o"})
	if !ok {
		return 1
	}
	lines, st := c.lines(f.rest)
	if !f.has("t") {
		writeLines(c.out, lines)
		return st
	}
	var rows [][]string
	var widths []int
	for _, l := range lines {
		var cells []string
		if s := f.get("s", ""); s != "" {
			cells = strings.FieldsFunc(l, func(r rune) bool { return strings.ContainsRune(s, r) })
		} else {
			cells = strings.Fields(l)
		}
		if len(cells) == 0 {
			continue
		}
		for i, cell := range cells {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
		rows = append(rows, cells)
	}
	sep := f.get("o", "  ")
	for _, row := range rows {
		var b strings.Builder
		for i, cell := range row {
			if i == len(row)-1 {
				b.WriteString(cell)
				break
			}
			b.WriteString(cell + strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell)) + sep)
		}
		fmt.Fprintln(c.out, b.String())
	}
	return st
}

func cmdStrings(c *cmdCtx) int {
	f, ok := c.parse("n:", map[string]string{"bytes=": "n"})
	if !ok {
		return 1
	}
	minLen, _ := f.num(c, "n", 4)
	return c.each(f.rest, func(_ string, r io.Reader) error {
		b, err := io.ReadAll(r)
		var run []byte
		flush := func() {
			if len(run) >= minLen {
				fmt.Fprintln(c.out, string(run))
			}
			run = run[:0]
		}
		for _, x := range b {
			if x >= 32 && x < 127 || x == '\t' {
				run = append(run, x)
			} else {
				flush()
			}
		}
		flush()
		return err
	})
}

func cmdShuf(c *cmdCtx) int {
	f, ok := c.parse("n:ei:r", map[string]string{"head-count=": "n", "echo": "e", "input-range=": "i", "repeat": "r"})
	if !ok {
		return 1
	}
	var items []string
	switch {
	case f.has("e"):
		items = f.rest
	case f.has("i"):
		lo, hi, _ := strings.Cut(f.get("i", ""), "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || b-a > 1<<20 {
			return c.fail("invalid input range")
		}
		for i := a; i <= b; i++ {
			items = append(items, strconv.Itoa(i))
		}
	default:
		var st int
		items, st = c.lines(f.rest)
		if st != 0 {
			return st
		}
	}
	rand.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	n, _ := f.num(c, "n", len(items))
	if f.has("r") && len(items) > 0 {
		for i := 0; i < n && !c.stopped(); i++ {
			fmt.Fprintln(c.out, items[rand.IntN(len(items))])
		}
		return 0
	}
	writeLines(c.out, items[:min(n, len(items))])
	return 0
}

func cmdOd(c *cmdCtx) int {
	f, ok := c.parse("cAt:xbv", nil)
	if !ok {
		return 1
	}
	data, st := c.readAll(f.rest)
	for off := 0; off < len(data); off += 16 {
		row := data[off:min(off+16, len(data))]
		var b strings.Builder
		fmt.Fprintf(&b, "%07o", off)
		for _, x := range row {
			if f.has("c") || f.get("t", "") == "c" {
				s := strconv.QuoteRune(rune(x))
				s = s[1 : len(s)-1]
				fmt.Fprintf(&b, " %3s", s)
			} else {
				fmt.Fprintf(&b, " %02x", x)
			}
		}
		fmt.Fprintln(c.out, b.String())
	}
	fmt.Fprintf(c.out, "%07o\n", len(data))
	return st
}

func cmdXxd(c *cmdCtx) int {
	f, ok := c.parse("prc:", nil)
	if !ok {
		return 1
	}
	data, st := c.readAll(f.rest)
	if f.has("r") {
		clean := strings.Map(func(r rune) rune {
			if strings.ContainsRune("0123456789abcdefABCDEF", r) {
				return r
			}
			return -1
		}, string(data))
		out := make([]byte, len(clean)/2)
		for i := range out {
			v, _ := strconv.ParseUint(clean[2*i:2*i+2], 16, 8)
			out[i] = byte(v)
		}
		c.out.Write(out)
		return st
	}
	if f.has("p") {
		for off := 0; off < len(data); off += 30 {
			fmt.Fprintf(c.out, "%x\n", data[off:min(off+30, len(data))])
		}
		return st
	}
	for off := 0; off < len(data); off += 16 {
		row := data[off:min(off+16, len(data))]
		var hex strings.Builder
		for i := 0; i < 16; i++ {
			if i < len(row) {
				fmt.Fprintf(&hex, "%02x", row[i])
			} else {
				hex.WriteString("  ")
			}
			if i%2 == 1 {
				hex.WriteByte(' ')
			}
		}
		text := []byte(string(row))
		for i, x := range text {
			if x < 32 || x > 126 {
				text[i] = '.'
			}
		}
		fmt.Fprintf(c.out, "%08x: %s %s\n", off, hex.String(), text)
	}
	return st
}

func cmdFmt(c *cmdCtx) int {
	f, ok := c.parse("w:", map[string]string{"width=": "w"})
	if !ok {
		return 1
	}
	width, _ := f.num(c, "w", 75)
	data, st := c.readAll(f.rest)
	for _, para := range strings.Split(string(data), "\n\n") {
		words := strings.Fields(para)
		line := ""
		for _, w := range words {
			if line != "" && len(line)+1+len(w) > width {
				fmt.Fprintln(c.out, line)
				line = ""
			}
			if line != "" {
				line += " "
			}
			line += w
		}
		if line != "" {
			fmt.Fprintln(c.out, line)
		}
	}
	return st
}
