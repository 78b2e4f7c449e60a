package handlers

import (
	"testing"
	"time"
)

// A secret shows once, only to the browser that made it, only within its
// time, and the oldest go first when too many wait.
func TestRevealsShowOnceWithinTheirBounds(t *testing.T) {
	var r reveals
	now := time.Now()
	r.put("browser-a", "token", "sbk_1", now, time.Minute, 2)
	if _, ok := r.take("browser-b", "token", now, time.Minute); ok {
		t.Fatal("another browser got the secret")
	}
	if v, ok := r.take("browser-a", "token", now, time.Minute); !ok || v != "sbk_1" {
		t.Fatalf("the browser that made it got %q, %v", v, ok)
	}
	if _, ok := r.take("browser-a", "token", now, time.Minute); ok {
		t.Fatal("the secret showed twice")
	}

	r.put("browser-a", "token", "late", now, time.Minute, 2)
	if _, ok := r.take("browser-a", "token", now.Add(2*time.Minute), time.Minute); ok {
		t.Fatal("a secret past its time showed")
	}

	r.put("a", "s", "first", now, time.Minute, 2)
	r.put("b", "s", "second", now.Add(time.Second), time.Minute, 2)
	r.put("c", "s", "third", now.Add(2*time.Second), time.Minute, 2)
	if len(r.m) != 2 {
		t.Fatalf("%d secrets kept, want at most 2", len(r.m))
	}
	if _, ok := r.take("a", "s", now.Add(3*time.Second), time.Minute); ok {
		t.Fatal("the oldest secret was kept past the bound")
	}
	if v, ok := r.take("c", "s", now.Add(3*time.Second), time.Minute); !ok || v != "third" {
		t.Fatalf("the newest secret: %q, %v", v, ok)
	}
}
