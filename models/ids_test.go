package models

import (
	"regexp"
	"slices"
	"testing"
	"time"
)

// A record's id sorts after every id made before it (in an earlier
// millisecond), so inserts land at the right edge of a primary-key index;
// ids stay unique and in the characters ids always had.
func TestIDsMadeLaterSortAfter(t *testing.T) {
	shape := regexp.MustCompile(`^call_[a-z2-7]{26}$`)
	var ids []string
	seen := map[string]bool{}
	for range 5 {
		for range 2000 {
			id := NewID("call")
			if !shape.MatchString(id) {
				t.Fatalf("id %q: want call_ and 26 of a-z, 2-7", id)
			}
			if seen[id] {
				t.Fatalf("id %q made twice", id)
			}
			seen[id] = true
			ids = append(ids, id)
		}
		time.Sleep(2 * time.Millisecond)
	}
	// Made in the same millisecond, ids sort at random among themselves;
	// across milliseconds they sort by time.
	for i := 0; i < len(ids); i += 2000 {
		for _, later := range ids[i+2000:] {
			if ids[i] >= later {
				t.Fatalf("id %q made before %q sorts after it", ids[i], later)
			}
		}
	}
	// By the millisecond, over a range that spans a byte boundary of the
	// time and both ends of the alphabet.
	base := time.UnixMilli(1_700_000_000_000)
	prev := idAt(base)
	for _, step := range []time.Duration{time.Millisecond, 255 * time.Millisecond, time.Second, time.Hour, 24 * time.Hour, 365 * 24 * time.Hour, 50 * 365 * 24 * time.Hour} {
		next := idAt(base.Add(step))
		if prev >= next {
			t.Fatalf("id at +%s %q sorts before or with the earlier %q", step, next, prev)
		}
		prev = next
	}
	if !slices.IsSortedFunc([]string{idAt(time.UnixMilli(0)), idAt(time.UnixMilli(1)), idAt(time.UnixMilli(1 << 47))}, func(a, b string) int {
		if a < b {
			return -1
		}
		return 1
	}) {
		t.Fatal("ids at the ends of the time's range do not sort by time")
	}
}
