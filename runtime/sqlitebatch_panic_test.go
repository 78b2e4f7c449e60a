package runtime

import (
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
)

// TestGroupCommitPanicStaysWithItsCaller: a write that panics while it runs
// in another caller's batch must not answer the batch's other callers
// "written" for rows that were rolled back, must not make the caller
// running the batch panic for it, and must not leave the writer's lock held
// (every later hot-path write would wait forever). The panicking caller gets
// its panic, as it did when each write ran alone.
func TestGroupCommitPanicStaysWithItsCaller(t *testing.T) {
	db := modelstest.Open(t)
	if db.Dialect != models.SQLite {
		t.Skip("group commit is SQLite's")
	}
	r, _, _ := skillSession(t, db)
	ctx := t.Context()
	if err := db.Exec(`CREATE TABLE batch_probe (id TEXT PRIMARY KEY)`).Error; err != nil {
		t.Fatal(err)
	}
	insert := func(id string) func(tx *gorm.DB) error {
		return func(tx *gorm.DB) error { return tx.Exec(`INSERT INTO batch_probe (id) VALUES (?)`, id).Error }
	}
	type outcome struct {
		err      error
		panicked any
	}
	write := func(fn func(tx *gorm.DB) error) <-chan outcome {
		ch := make(chan outcome, 1)
		go func() {
			var o outcome
			defer func() {
				o.panicked = recover()
				ch <- o
			}()
			o.err = r.hotWrite(ctx, true, fn)
		}()
		return ch
	}
	b := &r.hot.batch
	r.hot.writeMu.Lock()
	a := write(insert("a"))
	for {
		b.mu.Lock()
		leading := b.leading
		b.mu.Unlock()
		if leading {
			break
		}
		time.Sleep(time.Millisecond)
	}
	bOut := write(insert("b"))
	for b.stats.queued.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	cOut := write(func(tx *gorm.DB) error {
		if err := insert("c")(tx); err != nil {
			return err
		}
		var m map[string]int
		m["boom"]++ // a bug in this caller's write
		return nil
	})
	for b.stats.queued.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	r.hot.writeMu.Unlock()

	has := func(id string) bool {
		var n int64
		db.Raw(`SELECT COUNT(*) FROM batch_probe WHERE id = ?`, id).Scan(&n)
		return n == 1
	}
	get := func(name string, ch <-chan outcome) outcome {
		select {
		case o := <-ch:
			return o
		case <-time.After(30 * time.Second):
			t.Fatalf("caller %s never answered", name)
			return outcome{}
		}
	}
	for _, c := range []struct {
		name string
		ch   <-chan outcome
	}{{"a", a}, {"b", bOut}} {
		o := get(c.name, c.ch)
		if o.panicked != nil {
			t.Errorf("caller %s panicked for another caller's write: %v", c.name, o.panicked)
		}
		if o.err == nil && o.panicked == nil && !has(c.name) {
			t.Errorf("caller %s was answered written, but its row is not there", c.name)
		}
	}
	if o := get("c", cOut); o.panicked == nil && o.err == nil {
		t.Errorf("the panicking caller was answered written (row there: %v)", has("c"))
	}
	if has("c") {
		t.Errorf("the panicking write's row was committed")
	}
	// The writer is free again: a later write is answered.
	if o := get("d", write(insert("d"))); o.err != nil || o.panicked != nil || !has("d") {
		t.Errorf("a later write: %v %v", o.err, o.panicked)
	}
}
