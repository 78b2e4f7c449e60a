package handlers

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"

	"github.com/subako/subako/views/pages"
)

// Live lists sent one item at a time (issue 11). A stream remembers which
// items the page shows, in order, each by a fingerprint of what its card
// says; after a change it sends only the items that arrived, changed or left,
// each as its own event that htmx swaps out of band (hx-swap-oob), so the
// rest of the list is not rendered, sent or swapped again. A page that
// connects unseeded (a reconnect, which may have missed changes) gets the
// whole list once, then items.

// liveList is what a stream last sent of one list: its items' ids in order
// and their fingerprints.
type liveList struct {
	ids   []string
	sums  map[string]string
	known bool // false until the page's list is known: the first update sends it whole
}

func (l *liveList) set(ids []string, sums map[string]string) {
	l.ids, l.sums, l.known = ids, sums, true
}

// listChange is one item's change: gone (left the list), or its index in
// the new list and whether the page already has it (changed in place).
type listChange struct {
	id       string
	gone     bool
	index    int
	replaced bool
}

// diff says what changed from the list last sent to ids: the items gone
// first, then those that arrived or changed, in the new list's order, so
// each arrival can be placed after the one before it.
func (l *liveList) diff(ids []string, sums map[string]string) []listChange {
	var out []listChange
	for _, id := range l.ids {
		if _, ok := sums[id]; !ok {
			out = append(out, listChange{id: id, gone: true})
		}
	}
	for i, id := range ids {
		prev, had := l.sums[id]
		if !had || prev != sums[id] {
			out = append(out, listChange{id: id, index: i, replaced: had})
		}
	}
	return out
}

// fingerprint sums what a value shows; two values that render alike sum alike.
func fingerprint(v any) string { return htmlSum(fmt.Sprintf("%+v", v)) }

// writeEvent writes one event whose data is HTML, a data line for each of its lines.
func writeEvent(w io.Writer, name, html string) error {
	var ev strings.Builder
	ev.Grow(len(html) + 64)
	ev.WriteString("event: " + name + "\n")
	html = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(html)
	for line := range strings.SplitSeq(html, "\n") {
		ev.WriteString("data: " + line + "\n")
	}
	ev.WriteString("\n")
	_, err := io.WriteString(w, ev.String())
	return err
}

func renderHTML(cx context.Context, comps ...templ.Component) (string, error) {
	var b strings.Builder
	for _, c := range comps {
		if err := c.Render(cx, &b); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// --- The approvals queue ---

// queueItemSum is an approval card's fingerprint, without the wait it shows
// (the page's script counts that up by itself).
func queueItemSum(it pages.ApprovalItem) string {
	it.Waited, it.OOB = "", ""
	return fingerprint(it)
}

func queueSums(v pages.ApprovalQueueView) ([]string, map[string]string) {
	ids := make([]string, 0, len(v.Items))
	sums := make(map[string]string, len(v.Items))
	for _, it := range v.Items {
		ids = append(ids, it.ID)
		sums[it.ID] = queueItemSum(it)
	}
	return ids, sums
}

// queueSum stands for a whole queue as the page shows it: its items and
// what the rest of the fragment says.
func queueSum(v pages.ApprovalQueueView) string {
	ids, sums := queueSums(v)
	var b strings.Builder
	fmt.Fprintf(&b, "%d|%t|%s|%s|%t|", v.Pending, v.Filtered, v.Approval, v.Back, v.CanDecide)
	for _, id := range ids {
		b.WriteString(id + ":" + sums[id] + ",")
	}
	return htmlSum(b.String())
}

// queueSeen is the Approvals page's seen parameter for its events URL: the
// queue it rendered, which the stream trusts for seenFor.
func queueSeen(v pages.ApprovalQueueView) string {
	return "at:" + strconv.FormatInt(time.Now().Unix(), 10) + ",queue:" + queueSum(v)
}

// queueLive is what one approvals stream last sent.
type queueLive struct {
	list    liveList
	pending int
	empty   string // the empty state's HTML sum
}

// push sends the queue v: whole on the first update unless the page showed
// it already, then only the items that changed, an event each ("item"), the
// last carrying the count and the empty state when they changed ("count"
// when no item did).
func (q *queueLive) push(cx context.Context, out *sseStream, v pages.ApprovalQueueView) error {
	ids, sums := queueSums(v)
	emptyHTML, err := renderHTML(cx, pages.ApprovalQueueEmpty(v, true))
	if err != nil {
		return fmt.Errorf("handlers: render the queue's empty state: %w", err)
	}
	emptySum := htmlSum(emptyHTML)
	if !q.list.known {
		if seed, ok := out.last["queue"]; !ok || seed != queueSum(v) {
			html, err := renderHTML(cx, pages.ApprovalQueue(v))
			if err != nil {
				return fmt.Errorf("handlers: render the queue: %w", err)
			}
			if err := writeEvent(out.w, "queue", html); err != nil {
				return err
			}
		}
		q.list.set(ids, sums)
		q.pending, q.empty = v.Pending, emptySum
		return nil
	}
	changes := q.list.diff(ids, sums)
	var tail []templ.Component // what goes with the last event
	if v.Pending != q.pending {
		tail = append(tail, pages.ApprovalPendingCount(v.Pending, true))
	}
	if emptySum != q.empty {
		tail = append(tail, templ.Raw(emptyHTML))
	}
	q.list.set(ids, sums)
	q.pending, q.empty = v.Pending, emptySum
	if len(changes) == 0 {
		if len(tail) == 0 {
			return nil
		}
		html, err := renderHTML(cx, tail...)
		if err != nil {
			return err
		}
		return writeEvent(out.w, "count", html)
	}
	for n, ch := range changes {
		var comps []templ.Component
		switch {
		case ch.gone:
			comps = append(comps, pages.ApprovalItemRemoved(ch.id))
		case ch.replaced:
			it := v.Items[ch.index]
			it.OOB = "true"
			comps = append(comps, pages.ApprovalCard(it, v))
		default:
			where := "afterbegin:#approval-items"
			if ch.index > 0 {
				where = "afterend:#approval-" + v.Items[ch.index-1].ID
			}
			comps = append(comps, pages.ApprovalItemInsert(where, v.Items[ch.index], v))
		}
		if n == len(changes)-1 {
			comps = append(comps, tail...)
		}
		html, err := renderHTML(cx, comps...)
		if err != nil {
			return fmt.Errorf("handlers: render approval %s: %w", ch.id, err)
		}
		if err := writeEvent(out.w, "item", html); err != nil {
			return err
		}
	}
	return nil
}

// --- The session page's call log ---

func callSums(v pages.SessionCalls) ([]string, map[string]string) {
	ids := make([]string, 0, len(v.Calls))
	sums := make(map[string]string, len(v.Calls))
	for _, c := range v.Calls {
		ids = append(ids, c.ID)
		sums[c.ID] = fingerprint(c)
	}
	return ids, sums
}

// pushCalls sends the call log: whole while it has no table (no call yet)
// or on the first update (skipped when the page showed that log), then a
// call at a time ("call"), newest first as the log lists them.
func pushCalls(cx context.Context, out *sseStream, l *liveList, v pages.SessionCalls) error {
	ids, sums := callSums(v)
	if !l.known || len(l.ids) == 0 || len(ids) == 0 {
		l.set(ids, sums)
		return out.send(cx, "calls", pages.SessionCallLog(v))
	}
	changes := l.diff(ids, sums)
	l.set(ids, sums)
	if len(changes) == 0 {
		return nil
	}
	// The log on the page is no longer the one last sent whole.
	delete(out.last, "calls")
	for _, ch := range changes {
		var comp templ.Component
		switch {
		case ch.gone:
			comp = pages.SessionCallRemoved(ch.id)
		case ch.replaced:
			comp = pages.SessionCallReplace(v.Calls[ch.index])
		default:
			where := "afterend:#call-log-head"
			if ch.index > 0 {
				where = "afterend:#call-row-" + v.Calls[ch.index-1].ID
			}
			comp = pages.SessionCallInsert(where, v.Calls[ch.index])
		}
		html, err := renderHTML(cx, comp)
		if err != nil {
			return fmt.Errorf("handlers: render call %s: %w", ch.id, err)
		}
		if err := writeEvent(out.w, "call", html); err != nil {
			return err
		}
	}
	return nil
}
