package runtime

import (
	"encoding/base64"
	"testing"
	"time"
)

func TestCursorRoundTripsAndRefusesWhatNoListGave(t *testing.T) {
	at := time.Date(2026, 12, 1, 20, 0, 0, 123456789, time.UTC)
	for _, c := range []Cursor{{At: at, ID: "ses_abc123"}, {At: at, ID: "act_x-y", Back: true}, {At: time.Unix(0, 0).UTC(), ID: "a"}} {
		got, err := ParseCursor(c.String())
		if err != nil || got != c {
			t.Errorf("ParseCursor(%q) = %+v, %v; want %+v", c.String(), got, err, c)
		}
	}
	if c, err := ParseCursor(""); err != nil || !c.IsZero() {
		t.Errorf(`ParseCursor("") = %+v, %v; want the start of the list`, c, err)
	}
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, bad := range []string{"%%%", "not base64!", enc("n|1|"), enc("x|1|ses_a"), enc("n|soon|ses_a"), enc("n|1|ses a"),
		enc("n|1|ses_a' OR 1=1"), enc("n|1"), string(make([]byte, 201))} {
		_, err := ParseCursor(bad)
		if e, ok := AsError(err); !ok || e.Kind != KindInvalid || e.Field != "cursor" || e.Code != "invalid_cursor" {
			t.Errorf("ParseCursor(%.30q) = %v; want 422 invalid_cursor naming cursor", bad, err)
		}
	}
}

func TestPageOfLinksBothWays(t *testing.T) {
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	key := func(i int) (time.Time, string) { return at.Add(-time.Duration(i) * time.Second), string(rune('a' + i)) }
	rows := []int{0, 1, 2, 3}
	// First page of 3: more follow, nothing newer.
	page, links := pageOf(rows, Cursor{}, 3, key)
	if len(page) != 3 || links.Next == "" || links.Prev != "" {
		t.Fatalf("first page %v %+v", page, links)
	}
	next, _ := ParseCursor(links.Next)
	if next.Back || next.ID != "c" {
		t.Errorf("next cursor %+v, want after row c going older", next)
	}
	// A page read going back (rows come oldest first) is turned newest first.
	page, links = pageOf([]int{3, 2, 1}, Cursor{At: at, ID: "z", Back: true}, 3, key)
	if page[0] != 1 || page[2] != 3 || links.Prev != "" || links.Next == "" {
		t.Errorf("back page %v %+v: want [1 2 3], an older link and no newer one", page, links)
	}
}
