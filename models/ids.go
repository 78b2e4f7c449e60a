package models

import (
	"crypto/rand"
	"encoding/base32"
	"time"
)

// idEncoding is base32 over a–z and 2–7 in their byte order, so encoded
// ids compare as their bytes do.
var idEncoding = base32.NewEncoding("234567abcdefghijklmnopqrstuvwxyz").WithPadding(base32.NoPadding)

// NewID returns a record's id, its kind's prefix and 26 characters such as
// "call_2c6…": the prefix tells a person reading a log what kind of record
// an id names. The id is the time in milliseconds (6 bytes) then 80 random
// bits, encoded so that ids made later sort after: a record's insert lands
// at the right edge of its table's primary-key index, one page kept hot,
// where a random id lands on any leaf of an index that grows with the
// history, read in and written out for each record (issue 11;
// BenchmarkCallRecord's history=200000).
func NewID(prefix string) string { return prefix + "_" + idAt(time.Now()) }

func idAt(t time.Time) string {
	var b [16]byte
	ms := uint64(t.UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	_, _ = rand.Read(b[6:])
	return idEncoding.EncodeToString(b[:])
}
