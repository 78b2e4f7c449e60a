package handlers

import "time"

// isoTime is a time for components.When: RFC 3339 in UTC, which the page
// shows as readable UTC text and its script as the viewer's local time.
func isoTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func isoTimePtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return isoTime(*t)
}
