package fn

import (
	"bytes"
	"strconv"
	"strings"
)

// cappedBuffer keeps the first limit bytes written and drops the rest without
// failing the writer, so a chatty guest is not killed by its own stderr; the
// call decides afterwards what truncation means.
type cappedBuffer struct {
	bytes.Buffer
	limit     int
	truncated bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	room := b.limit - b.Len()
	if len(p) > room {
		b.truncated = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// String returns what was kept as text, marked when some was dropped; bytes
// that are not UTF-8 (a character cut at the limit, binary noise) become U+FFFD.
func (b *cappedBuffer) String() string {
	s := strings.ToValidUTF8(b.Buffer.String(), "\uFFFD")
	if b.truncated {
		return s + "\n[truncated: the limit is " + strconv.Itoa(b.limit) + " bytes]"
	}
	return s
}
