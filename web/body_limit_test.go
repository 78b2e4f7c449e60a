package web_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// A body past the request limit answered 413 "Request Entity Too Large"
// and no more; it names the limit, as every refusal does.
func TestBodyOverTheLimitNamesIt(t *testing.T) {
	e := newEnv(t)
	tok := e.owner().token()
	st, body := e.rawAPI(tok, "POST", "/agents", `{"name": "big", "description": "`+strings.Repeat("x", 5<<20)+`"}`)
	var p problem
	_ = json.Unmarshal(body, &p)
	if st != 413 || !strings.Contains(p.Detail, "larger than 4 MiB") {
		t.Fatalf("a 5 MiB body answered %d %s; want 413 naming the 4 MiB limit", st, body)
	}
}
