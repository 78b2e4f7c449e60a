package main

import (
	"bufio"
	"bytes"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"math/big"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/itchyny/gojq"
	"mvdan.cc/sh/v3/expand"
)

func baseCodec(c *cmdCtx, enc func([]byte) string, dec func(string) ([]byte, error)) int {
	f, ok := c.parse("diw:", map[string]string{"decode": "d", "ignore-garbage": "i", "wrap=": "w"})
	if !ok {
		return 1
	}
	data, st := c.readAll(f.rest)
	if st != 0 {
		return st
	}
	if f.has("d") {
		out, err := dec(strings.Join(strings.Fields(string(data)), ""))
		if err != nil {
			c.out.Write(out)
			return c.fail("invalid input")
		}
		c.out.Write(out)
		return 0
	}
	s := enc(data)
	wrap, _ := f.num(c, "w", 76)
	if wrap == 0 {
		fmt.Fprintln(c.out, s)
		return 0
	}
	for len(s) > wrap {
		fmt.Fprintln(c.out, s[:wrap])
		s = s[wrap:]
	}
	if s != "" {
		fmt.Fprintln(c.out, s)
	}
	return 0
}

func cmdBase64(c *cmdCtx) int {
	return baseCodec(c, base64.StdEncoding.EncodeToString, base64.StdEncoding.DecodeString)
}

func cmdBase32(c *cmdCtx) int {
	return baseCodec(c, base32.StdEncoding.EncodeToString, base32.StdEncoding.DecodeString)
}

func hashCmd(kind string) command {
	newHash := map[string]func() hash.Hash{"md5": md5.New, "sha1": sha1.New, "sha224": sha256.New224, "sha256": sha256.New,
		"sha384": sha512.New384, "sha512": sha512.New}[kind]
	return func(c *cmdCtx) int {
		f, ok := c.parse("cbt", map[string]string{"check": "c", "binary": "b", "text": "t"})
		if !ok {
			return 1
		}
		if f.has("c") {
			lines, st := c.lines(f.rest)
			bad := 0
			for _, l := range lines {
				sum, name, ok := strings.Cut(l, "  ")
				if !ok {
					continue
				}
				data, rst := c.readAll([]string{name})
				h := newHash()
				h.Write(data)
				if rst != 0 || fmt.Sprintf("%x", h.Sum(nil)) != sum {
					fmt.Fprintf(c.out, "%s: FAILED\n", name)
					bad++
				} else {
					fmt.Fprintf(c.out, "%s: OK\n", name)
				}
			}
			if bad > 0 {
				fmt.Fprintf(c.errw, "%s: WARNING: %d computed checksum did NOT match\n", c.name, bad)
				return 1
			}
			return st
		}
		return c.each(f.rest, func(name string, r io.Reader) error {
			h := newHash()
			if _, err := io.Copy(h, r); err != nil {
				return err
			}
			_, err := fmt.Fprintf(c.out, "%x  %s\n", h.Sum(nil), name)
			return err
		})
	}
}

// crcTable is POSIX cksum's CRC-32 (polynomial 0x04C11DB7, MSB first).
var crcTable = func() (t [256]uint32) {
	for i := range t {
		c := uint32(i) << 24
		for k := 0; k < 8; k++ {
			if c&0x80000000 != 0 {
				c = c<<1 ^ 0x04C11DB7
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return
}()

func cmdCksum(c *cmdCtx) int {
	return c.each(c.args, func(name string, r io.Reader) error {
		data, err := io.ReadAll(r)
		var crc uint32
		for _, b := range data {
			crc = crc<<8 ^ crcTable[byte(crc>>24)^b]
		}
		for n := len(data); n > 0; n >>= 8 {
			crc = crc<<8 ^ crcTable[byte(crc>>24)^byte(n)]
		}
		if name == "-" {
			fmt.Fprintf(c.out, "%d %d\n", ^crc, len(data))
		} else {
			fmt.Fprintf(c.out, "%d %d %s\n", ^crc, len(data), name)
		}
		return err
	})
}

func cmdSum(c *cmdCtx) int {
	return c.each(c.args, func(name string, r io.Reader) error {
		data, err := io.ReadAll(r)
		var s uint16
		for _, b := range data {
			s = s>>1 + s<<15 + uint16(b)
		}
		line := fmt.Sprintf("%05d %5d", s, (len(data)+1023)/1024)
		if name != "-" {
			line += " " + name
		}
		fmt.Fprintln(c.out, line)
		return err
	})
}

func cmdJq(c *cmdCtx) int {
	// jq's options come in long forms with two values; read them by hand.
	var filter string
	var files, names []string
	var values []any
	raw, compact, null, slurp, exit, join, sortKeys, tab, rawIn := false, false, false, false, false, false, false, false, false
	args := c.args
	haveFilter := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--arg" || a == "--argjson":
			if i+2 >= len(args) {
				c.fail("%s takes two parameters (e.g. %s varname value)", a, a)
				return 2
			}
			var v any = args[i+2]
			if a == "--argjson" {
				if err := json.Unmarshal([]byte(args[i+2]), &v); err != nil {
					c.fail("invalid JSON text passed to --argjson")
					return 2
				}
			}
			names, values = append(names, "$"+args[i+1]), append(values, v)
			i += 2
		case a == "--raw-output":
			raw = true
		case a == "--compact-output":
			compact = true
		case a == "--null-input":
			null = true
		case a == "--slurp":
			slurp = true
		case a == "--exit-status":
			exit = true
		case a == "--join-output":
			raw, join = true, true
		case a == "--sort-keys":
			sortKeys = true
		case a == "--tab":
			tab = true
		case a == "--raw-input":
			rawIn = true
		case len(a) > 1 && a[0] == '-' && a[1] != '-':
			for _, ch := range a[1:] {
				switch ch {
				case 'r':
					raw = true
				case 'c':
					compact = true
				case 'n':
					null = true
				case 's':
					slurp = true
				case 'e':
					exit = true
				case 'j':
					raw, join = true, true
				case 'S':
					sortKeys = true
				case 'R':
					rawIn = true
				case 'a', 'M', 'C':
				default:
					c.fail("unknown option: -%c", ch)
					return 2
				}
			}
		case !haveFilter:
			filter, haveFilter = a, true
		default:
			files = append(files, a)
		}
	}
	_ = sortKeys // gojq always writes an object's keys sorted
	if !haveFilter {
		filter = "."
	}
	q, err := gojq.Parse(filter)
	if err != nil {
		c.fail("error: %v", err)
		return 3
	}
	code, err := gojq.Compile(q, gojq.WithVariables(names))
	if err != nil {
		c.fail("error: %v", err)
		return 3
	}
	data, st := c.readAll(files)
	if st != 0 {
		return 2
	}
	var inputs []any
	if rawIn {
		text := string(data)
		if slurp {
			inputs = []any{text}
		} else {
			for _, l := range strings.SplitAfter(text, "\n") {
				if l != "" {
					inputs = append(inputs, strings.TrimSuffix(l, "\n"))
				}
			}
		}
	} else {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		for {
			var v any
			if err := dec.Decode(&v); err == io.EOF {
				break
			} else if err != nil {
				c.fail("error: cannot parse the input as JSON: %v", err)
				return 2
			}
			inputs = append(inputs, normalizeNumbers(v))
		}
		if slurp {
			inputs = []any{append([]any{}, inputs...)}
		}
	}
	if null {
		inputs = []any{nil}
	}
	status := 0
	var last any = true
	bw := bufio.NewWriter(c.out)
	defer bw.Flush()
	for _, in := range inputs {
		iter := code.Run(in, values...)
		for {
			v, ok := iter.Next()
			if !ok {
				break
			}
			if c.stopped() {
				return 1
			}
			if err, ok := v.(error); ok {
				var halt *gojq.HaltError
				if errors.As(err, &halt) && halt.Value() == nil {
					break
				}
				bw.Flush()
				c.fail("error: %v", err)
				status = 5
				break
			}
			last = v
			if s, ok := v.(string); ok && raw {
				bw.WriteString(s)
			} else {
				b, _ := gojq.Marshal(v)
				if !compact {
					var pretty bytes.Buffer
					indent := "  "
					if tab {
						indent = "\t"
					}
					json.Indent(&pretty, b, "", indent)
					b = pretty.Bytes()
				}
				bw.Write(b)
			}
			if !join {
				bw.WriteByte('\n')
			}
		}
	}
	if exit && status == 0 && (last == nil || last == false) {
		return 1
	}
	return status
}

// normalizeNumbers turns json.Numbers into ints where they fit, floats otherwise.
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.Atoi(x.String()); err == nil {
			return i
		}
		if bi, ok := new(big.Int).SetString(x.String(), 10); ok {
			return bi
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = normalizeNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normalizeNumbers(x[k])
		}
	}
	return v
}

func cmdEcho(c *cmdCtx) int {
	args, newline, escapes := c.args, true, false
	for len(args) > 0 && len(args[0]) > 1 && strings.Trim(args[0], "neE") == "-" {
		newline = newline && !strings.Contains(args[0], "n")
		escapes = strings.Contains(args[0], "e")
		args = args[1:]
	}
	s := strings.Join(args, " ")
	if escapes {
		s, _, _ = expand.Format(&expand.Config{}, "%b", []string{s})
	}
	if newline {
		s += "\n"
	}
	io.WriteString(c.out, s)
	return 0
}

func cmdPrintf(c *cmdCtx) int {
	if len(c.args) == 0 {
		return c.fail("usage: printf format [arguments]")
	}
	format, args := c.args[0], c.args[1:]
	for {
		s, n, err := expand.Format(&expand.Config{}, format, args)
		if err != nil {
			return c.fail("%v", err)
		}
		io.WriteString(c.out, s)
		if n <= 0 || n >= len(args) {
			return 0
		}
		args = args[n:]
	}
}

func cmdSeq(c *cmdCtx) int {
	f := flags{vals: map[string][]string{}}
	args := c.args
	for len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' && (args[0][1] < '0' || args[0][1] > '9') && args[0][1] != '.' {
		switch a := args[0]; {
		case len(a) > 2 && (a[1] == 's' || a[1] == 'f'):
			f.vals[a[1:2]] = []string{a[2:]}
			args = args[1:]
			continue
		}
		switch args[0] {
		case "-s", "-f":
			if len(args) < 2 {
				return c.fail("option requires an argument")
			}
			f.vals[args[0][1:]] = []string{args[1]}
			args = args[2:]
		case "-w":
			f.vals["w"] = []string{"1"}
			args = args[1:]
		default:
			return c.fail("invalid option '%s'", args[0])
		}
	}
	nums := make([]float64, len(args))
	prec := 0
	for i, a := range args {
		v, err := strconv.ParseFloat(a, 64)
		if err != nil {
			return c.fail("invalid floating point argument: '%s'", a)
		}
		nums[i] = v
		if d := strings.IndexByte(a, '.'); d >= 0 {
			prec = max(prec, len(a)-d-1)
		}
	}
	first, step, last := 1.0, 1.0, 0.0
	switch len(nums) {
	case 1:
		last = nums[0]
	case 2:
		first, last = nums[0], nums[1]
	case 3:
		first, step, last = nums[0], nums[1], nums[2]
	default:
		return c.fail("missing operand")
	}
	if step == 0 {
		return c.fail("invalid Zero increment value: '0'")
	}
	sep, format := f.get("s", "\n"), f.get("f", "")
	width := 0
	if f.has("w") {
		width = max(len(strconv.FormatFloat(first, 'f', prec, 64)), len(strconv.FormatFloat(last, 'f', prec, 64)))
	}
	bw := bufio.NewWriter(c.out)
	defer bw.Flush()
	for i := 0; ; i++ {
		v := first + float64(i)*step
		if step > 0 && v > last+1e-9 || step < 0 && v < last-1e-9 {
			break
		}
		if i%1024 == 0 && c.stopped() {
			return 1
		}
		if i > 0 {
			bw.WriteString(sep)
		}
		var s string
		if format != "" {
			s = fmt.Sprintf(strings.ReplaceAll(format, "%g", "%v"), v)
		} else {
			s = strconv.FormatFloat(v, 'f', prec, 64)
			if width > 0 {
				s = fmt.Sprintf("%0*s", width, s)
			}
		}
		if _, err := bw.WriteString(s); err != nil {
			return 1
		}
	}
	bw.WriteString("\n")
	return 0
}

func cmdYes(c *cmdCtx) int {
	s := "y"
	if len(c.args) > 0 {
		s = strings.Join(c.args, " ")
	}
	line := []byte(s + "\n")
	for i := 0; ; i++ {
		if _, err := c.out.Write(line); err != nil {
			return 1
		}
		if i%256 == 0 && c.stopped() {
			return 1
		}
	}
}

// parseDate reads @unix, RFC 3339, "2006-01-02 15:04:05", "2006-01-02", "now".
func parseDate(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "now" || s == "" {
		return time.Now(), nil
	}
	if strings.HasPrefix(s, "@") {
		v, err := strconv.ParseFloat(s[1:], 64)
		if err != nil {
			return time.Time{}, err
		}
		sec, frac := math.Modf(v)
		return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02", time.RFC1123Z, time.RFC1123} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("invalid date '%s'", s)
}

// strftime formats t with date's % conversions.
func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		switch format[i] {
		case 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'I':
			fmt.Fprintf(&b, "%02d", (t.Hour()+11)%12+1)
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'N':
			fmt.Fprintf(&b, "%09d", t.Nanosecond())
		case 'p':
			b.WriteString(t.Format("PM"))
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 's':
			fmt.Fprint(&b, t.Unix())
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'A':
			b.WriteString(t.Format("Monday"))
		case 'b', 'h':
			b.WriteString(t.Format("Jan"))
		case 'B':
			b.WriteString(t.Format("January"))
		case 'u':
			fmt.Fprint(&b, (int(t.Weekday())+6)%7+1)
		case 'w':
			fmt.Fprint(&b, int(t.Weekday()))
		case 'Z':
			b.WriteString(t.Format("MST"))
		case 'z':
			b.WriteString(t.Format("-0700"))
		case 'F':
			b.WriteString(t.Format("2006-01-02"))
		case 'T':
			b.WriteString(t.Format("15:04:05"))
		case 'D':
			b.WriteString(t.Format("01/02/06"))
		case 'R':
			b.WriteString(t.Format("15:04"))
		case 'V':
			_, w := t.ISOWeek()
			fmt.Fprintf(&b, "%02d", w)
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}

func cmdDate(c *cmdCtx) int {
	f, ok := c.parse("ud:r:IR", map[string]string{"utc": "u", "date=": "d", "reference=": "r", "iso-8601": "I", "rfc-email": "R"})
	if !ok {
		return 1
	}
	t := time.Now().UTC() // the module's clock has no time zone: UTC
	if d := f.get("d", ""); f.has("d") {
		var err error
		if t, err = parseDate(d); err != nil {
			return c.fail("%v", err)
		}
	}
	if r := f.get("r", ""); r != "" {
		st, err := os.Stat(c.abs(r))
		if err != nil {
			return c.ferr(r, err)
		}
		t = st.ModTime().UTC()
	}
	format := "%a %b %e %H:%M:%S %Z %Y"
	switch {
	case f.has("I"):
		format = "%F"
	case f.has("R"):
		format = "%a, %d %b %Y %H:%M:%S %z"
	}
	for _, a := range f.rest {
		if strings.HasPrefix(a, "+") {
			format = a[1:]
		} else {
			return c.fail("invalid date '%s'", a)
		}
	}
	fmt.Fprintln(c.out, strftime(t, format))
	return 0
}

func cmdSleep(c *cmdCtx) int {
	var total time.Duration
	for _, a := range c.args {
		unit := time.Second
		switch {
		case strings.HasSuffix(a, "s"):
			a = strings.TrimSuffix(a, "s")
		case strings.HasSuffix(a, "m"):
			a, unit = strings.TrimSuffix(a, "m"), time.Minute
		case strings.HasSuffix(a, "h"):
			a, unit = strings.TrimSuffix(a, "h"), time.Hour
		}
		v, err := strconv.ParseFloat(a, 64)
		if err != nil || v < 0 {
			return c.fail("invalid time interval '%s'", a)
		}
		total += time.Duration(v * float64(unit))
	}
	end := time.Now().Add(total)
	for time.Now().Before(end) {
		if c.stopped() {
			return 1
		}
		time.Sleep(min(time.Until(end), 50*time.Millisecond))
	}
	return 0
}

func cmdEnv(c *cmdCtx) int {
	args := c.args
	extra := map[string]string{}
	for len(args) > 0 && strings.Contains(args[0], "=") && !strings.HasPrefix(args[0], "=") {
		k, v, _ := strings.Cut(args[0], "=")
		extra[k] = v
		args = args[1:]
	}
	if len(args) > 0 && args[0] == "-i" {
		args = args[1:]
	}
	if len(args) > 0 {
		return c.runCommand(args, c.in)
	}
	c.env.Each(func(name string, vr expand.Variable) bool {
		if vr.Exported && vr.IsSet() {
			if _, over := extra[name]; !over {
				fmt.Fprintf(c.out, "%s=%s\n", name, vr.String())
			}
		}
		return true
	})
	for k, v := range extra {
		fmt.Fprintf(c.out, "%s=%s\n", k, v)
	}
	return 0
}

func cmdPrintenv(c *cmdCtx) int {
	if len(c.args) == 0 {
		return cmdEnv(&cmdCtx{ctx: c.ctx, name: "env", env: c.env, out: c.out, errw: c.errw, in: c.in, dir: c.dir})
	}
	status := 0
	for _, n := range c.args {
		vr := c.env.Get(n)
		if !vr.IsSet() || !vr.Exported {
			status = 1
			continue
		}
		fmt.Fprintln(c.out, vr.String())
	}
	return status
}

func cmdXargs(c *cmdCtx) int {
	f := flags{vals: map[string][]string{}}
	args := c.args
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
		a := args[0]
		switch {
		case a == "-0" || a == "-r" || a == "-t" || a == "--null" || a == "--no-run-if-empty":
			f.vals[a[len(a)-1:]] = []string{"1"}
			if a == "--null" {
				f.vals["0"] = []string{"1"}
			}
			args = args[1:]
		case a == "-n" || a == "-I" || a == "-d" || a == "-L" || a == "-P":
			if len(args) < 2 {
				return c.fail("option requires an argument -- '%s'", a[1:])
			}
			f.vals[a[1:]] = []string{args[1]}
			args = args[2:]
		case len(a) > 2 && strings.ContainsRune("nIdLP", rune(a[1])):
			f.vals[a[1:2]] = []string{a[2:]}
			args = args[1:]
		default:
			return c.fail("invalid option -- '%s'", a)
		}
	}
	if len(args) == 0 {
		args = []string{"echo"}
	}
	data, err := io.ReadAll(c.in)
	if err != nil {
		return 1
	}
	var items []string
	switch {
	case f.has("0"):
		items = strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
	case f.has("d"):
		d := strings.NewReplacer(`\n`, "\n", `\t`, "\t").Replace(f.get("d", ""))
		items = strings.Split(strings.TrimSuffix(string(data), d), d)
	case f.has("I") || f.has("L"):
		for _, l := range strings.Split(string(data), "\n") {
			if strings.TrimSpace(l) != "" {
				items = append(items, strings.TrimLeft(l, " \t"))
			}
		}
	default:
		items = shellWords(string(data))
	}
	if len(items) == 1 && items[0] == "" {
		items = nil
	}
	status := 0
	runOne := func(argv []string) {
		if f.has("t") {
			fmt.Fprintln(c.errw, strings.Join(argv, " "))
		}
		if st := c.runCommand(argv, strings.NewReader("")); st != 0 {
			status = 123
			if st == 127 {
				status = 127
			}
		}
	}
	if rep := f.get("I", ""); rep != "" {
		for _, it := range items {
			argv := make([]string, len(args))
			for i, a := range args {
				argv[i] = strings.ReplaceAll(a, rep, it)
			}
			runOne(argv)
		}
		return status
	}
	n, err := strconv.Atoi(f.get("n", f.get("L", "0")))
	if err != nil || n < 0 {
		return c.fail("invalid number for -n")
	}
	if len(items) == 0 {
		if !f.has("r") {
			runOne(args)
		}
		return status
	}
	if n == 0 {
		n = len(items)
	}
	for i := 0; i < len(items) && !c.stopped(); i += n {
		runOne(append(append([]string{}, args...), items[i:min(i+n, len(items))]...))
	}
	return status
}

// shellWords splits xargs input on blanks, honouring quotes and backslashes.
func shellWords(s string) []string {
	var out []string
	var b strings.Builder
	in, quote := false, rune(0)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				b.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == '\\' && i < len(s):
			r2, size2 := utf8.DecodeRuneInString(s[i:])
			i += size2
			b.WriteRune(r2)
			in = true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				out = append(out, b.String())
				b.Reset()
				in = false
			}
		default:
			b.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, b.String())
	}
	return out
}

func cmdExpr(c *cmdCtx) int {
	p := &exprParser{args: c.args}
	v, err := p.or()
	if err == nil && p.i < len(p.args) {
		err = fmt.Errorf("syntax error: unexpected argument '%s'", p.args[p.i])
	}
	if err != nil {
		c.fail("%v", err)
		return 2
	}
	fmt.Fprintln(c.out, v)
	if v == "" || v == "0" {
		return 1
	}
	return 0
}

type exprParser struct {
	args []string
	i    int
}

func (p *exprParser) peek() string {
	if p.i < len(p.args) {
		return p.args[p.i]
	}
	return ""
}

func (p *exprParser) binary(ops []string, next func() (string, error), apply func(op, a, b string) (string, error)) (string, error) {
	a, err := next()
	if err != nil {
		return "", err
	}
	for {
		op := p.peek()
		found := false
		for _, o := range ops {
			if o == op {
				found = true
			}
		}
		if !found {
			return a, nil
		}
		p.i++
		b, err := next()
		if err != nil {
			return "", err
		}
		if a, err = apply(op, a, b); err != nil {
			return "", err
		}
	}
}

func null(s string) bool { return s == "" || s == "0" }

func (p *exprParser) or() (string, error) {
	return p.binary([]string{"|"}, p.and, func(_, a, b string) (string, error) {
		if !null(a) {
			return a, nil
		}
		if !null(b) {
			return b, nil
		}
		return "0", nil
	})
}

func (p *exprParser) and() (string, error) {
	return p.binary([]string{"&"}, p.cmp, func(_, a, b string) (string, error) {
		if null(a) || null(b) {
			return "0", nil
		}
		return a, nil
	})
}

func (p *exprParser) cmp() (string, error) {
	return p.binary([]string{"=", "==", "!=", "<", "<=", ">", ">="}, p.add, func(op, a, b string) (string, error) {
		var r int
		x, e1 := strconv.ParseInt(a, 10, 64)
		y, e2 := strconv.ParseInt(b, 10, 64)
		if e1 == nil && e2 == nil {
			r = cmpNum(float64(x), float64(y))
		} else {
			r = strings.Compare(a, b)
		}
		ok := map[string]bool{"=": r == 0, "==": r == 0, "!=": r != 0, "<": r < 0, "<=": r <= 0, ">": r > 0, ">=": r >= 0}[op]
		if ok {
			return "1", nil
		}
		return "0", nil
	})
}

func (p *exprParser) arith(op, a, b string) (string, error) {
	x, e1 := strconv.ParseInt(a, 10, 64)
	y, e2 := strconv.ParseInt(b, 10, 64)
	if e1 != nil || e2 != nil {
		return "", errors.New("non-integer argument")
	}
	switch op {
	case "+":
		return fmt.Sprint(x + y), nil
	case "-":
		return fmt.Sprint(x - y), nil
	case "*":
		return fmt.Sprint(x * y), nil
	}
	if y == 0 {
		return "", errors.New("division by zero")
	}
	if op == "/" {
		return fmt.Sprint(x / y), nil
	}
	return fmt.Sprint(x % y), nil
}

func (p *exprParser) add() (string, error) { return p.binary([]string{"+", "-"}, p.mul, p.arith) }
func (p *exprParser) mul() (string, error) {
	return p.binary([]string{"*", "/", "%"}, p.match, p.arith)
}

func (p *exprParser) match() (string, error) {
	return p.binary([]string{":"}, p.primary, func(_, a, b string) (string, error) {
		re, err := regexp.Compile("^(?:" + bre(b) + ")")
		if err != nil {
			return "", err
		}
		m := re.FindStringSubmatch(a)
		if re.NumSubexp() > 0 {
			if m == nil {
				return "", nil
			}
			return m[1], nil
		}
		if m == nil {
			return "0", nil
		}
		return fmt.Sprint(utf8.RuneCountInString(m[0])), nil
	})
}

func (p *exprParser) primary() (string, error) {
	if p.i >= len(p.args) {
		return "", errors.New("syntax error: missing argument")
	}
	a := p.args[p.i]
	p.i++
	take := func(n int) ([]string, error) {
		if p.i+n > len(p.args) {
			return nil, fmt.Errorf("syntax error: missing argument after '%s'", a)
		}
		v := p.args[p.i : p.i+n]
		p.i += n
		return v, nil
	}
	switch a {
	case "(":
		v, err := p.or()
		if err != nil {
			return "", err
		}
		if p.peek() != ")" {
			return "", errors.New("syntax error: expecting ')'")
		}
		p.i++
		return v, nil
	case "length":
		v, err := take(1)
		if err != nil {
			return "", err
		}
		return fmt.Sprint(utf8.RuneCountInString(v[0])), nil
	case "substr":
		v, err := take(3)
		if err != nil {
			return "", err
		}
		rs := []rune(v[0])
		pos, _ := strconv.Atoi(v[1])
		n, _ := strconv.Atoi(v[2])
		if pos < 1 || pos > len(rs) || n < 1 {
			return "", nil
		}
		return string(rs[pos-1 : min(len(rs), pos-1+n)]), nil
	case "index":
		v, err := take(2)
		if err != nil {
			return "", err
		}
		for i, r := range []rune(v[0]) {
			if strings.ContainsRune(v[1], r) {
				return fmt.Sprint(i + 1), nil
			}
		}
		return "0", nil
	case "match":
		v, err := take(2)
		if err != nil {
			return "", err
		}
		sub := &exprParser{args: []string{v[0], ":", v[1]}}
		return sub.match()
	}
	return a, nil
}

func cmdWhich(c *cmdCtx) int {
	status := 0
	for _, n := range c.args {
		if _, ok := commands[n]; ok {
			fmt.Fprintln(c.out, "/bin/"+n)
		} else {
			status = 1
		}
	}
	return status
}

func cmdWhoami(c *cmdCtx) int   { fmt.Fprintln(c.out, "bashkit"); return 0 }
func cmdHostname(c *cmdCtx) int { fmt.Fprintln(c.out, "bashkit"); return 0 }
func cmdNproc(c *cmdCtx) int    { fmt.Fprintln(c.out, 1); return 0 }
func cmdID(c *cmdCtx) int {
	fmt.Fprintln(c.out, "uid=1000(bashkit) gid=1000(bashkit) groups=1000(bashkit)")
	return 0
}

func cmdUname(c *cmdCtx) int {
	f, ok := c.parse("asnrmo", nil)
	if !ok {
		return 1
	}
	if f.has("a") {
		fmt.Fprintln(c.out, "WASI bashkit 1.0.0 wasm32 WASI")
		return 0
	}
	var parts []string
	for _, k := range [][2]string{{"s", "WASI"}, {"n", "bashkit"}, {"r", "1.0.0"}, {"m", "wasm32"}, {"o", "WASI"}} {
		if f.has(k[0]) {
			parts = append(parts, k[1])
		}
	}
	if len(parts) == 0 {
		parts = []string{"WASI"}
	}
	fmt.Fprintln(c.out, strings.Join(parts, " "))
	return 0
}

func cmdFactor(c *cmdCtx) int {
	nums := c.args
	if len(nums) == 0 {
		data, _ := io.ReadAll(c.in)
		nums = strings.Fields(string(data))
	}
	for _, a := range nums {
		n, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			return c.fail("'%s' is not a valid positive integer", a)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d:", n)
		for p := uint64(2); p*p <= n; p++ {
			for n%p == 0 {
				fmt.Fprintf(&b, " %d", p)
				n /= p
			}
			if p%4096 == 0 && c.stopped() {
				return 1
			}
		}
		if n > 1 {
			fmt.Fprintf(&b, " %d", n)
		}
		fmt.Fprintln(c.out, b.String())
	}
	return 0
}

func cmdUUID(c *cmdCtx) int {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	fmt.Fprintf(c.out, "%x-%x-%x-%x-%x\n", u[0:4], u[4:6], u[6:8], u[8:10], u[10:])
	return 0
}

func cmdNumfmt(c *cmdCtx) int {
	f, ok := c.parse("", map[string]string{"to=": "t", "from=": "f"})
	if !ok {
		return 1
	}
	nums := f.rest
	if len(nums) == 0 {
		lines, _ := c.lines(nil)
		nums = lines
	}
	for _, a := range nums {
		v := numPrefix(a)
		switch f.get("f", "") {
		case "iec":
			v = humanNum(a)
		case "si":
			s := strings.TrimSpace(a)
			if s != "" {
				if i := strings.IndexByte("KMGTPE", s[len(s)-1]); i >= 0 {
					v *= math.Pow(1000, float64(i+1))
				}
			}
		}
		switch f.get("t", "") {
		case "iec", "si":
			base := 1024.0
			if f.get("t", "") == "si" {
				base = 1000
			}
			i := -1
			for v >= base && i < 5 {
				v /= base
				i++
			}
			if i < 0 {
				fmt.Fprintf(c.out, "%.0f\n", v)
			} else if v < 10 {
				fmt.Fprintf(c.out, "%.1f%c\n", math.Ceil(v*10)/10, "KMGTPE"[i])
			} else {
				fmt.Fprintf(c.out, "%.0f%c\n", math.Ceil(v), "KMGTPE"[i])
			}
		default:
			fmt.Fprintf(c.out, "%.0f\n", v)
		}
	}
	return 0
}
