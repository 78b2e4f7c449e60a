package main

import (
	"fmt"
	"strconv"
	"strings"
)

// byteSize is a flag of a size in bytes, written as a number with an
// optional unit: 2GiB, 512MiB, 1.5G (powers of 1024 either way), or plain bytes.
type byteSize int64

var sizeUnits = []struct {
	suffix string
	mult   float64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1},
}

func (s *byteSize) Set(v string) error {
	text := strings.TrimSpace(v)
	mult := 1.0
	for _, u := range sizeUnits {
		if rest, ok := strings.CutSuffix(text, u.suffix); ok {
			text, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(text, 64)
	if err != nil || n < 0 || n*mult > 1<<62 {
		return fmt.Errorf("%q is not a size: write bytes or a number with KiB, MiB, GiB or TiB", v)
	}
	*s = byteSize(n * mult)
	return nil
}

func (s *byteSize) String() string {
	n := int64(*s)
	for _, u := range sizeUnits[:4] {
		if m := int64(u.mult); n >= m && n%m == 0 {
			return strconv.FormatInt(n/m, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
