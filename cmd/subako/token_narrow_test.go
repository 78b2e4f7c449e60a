package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/subako/subako/models/modelstest"
)

// `subako token create --permission` makes a token narrowed to those
// permissions: it lists agents and is refused creating one.
func TestTokenCreateNarrowedFromTheCLI(t *testing.T) {
	dir, url := modelstest.Fresh(t)
	db := []string{"--data", dir, "--database-url", url}
	if err := userCmd(append([]string{"add", "--email", "owner@example.com", "--access", "owner", "--password-stdin"}, db...),
		strings.NewReader("correct-horse-battery\n"), io.Discard); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := tokenCmd(append([]string{"create", "--email", "owner@example.com", "--permission", "Agent.list *", "--permission", "Agent.get"}, db...), &out); err != nil {
		t.Fatalf("token create --permission: %v", err)
	}
	token := strings.TrimSpace(out.String())
	if err := tokenCmd(append([]string{"create", "--email", "owner@example.com", "--permission", "Agent.fly"}, db...), io.Discard); err == nil ||
		!strings.Contains(err.Error(), "permissions[0]") {
		t.Fatalf("an unknown verb: %v", err)
	}
	srv := serveDB(t, dir, url)
	for _, c := range []struct {
		method, body string
		want         int
	}{{"GET", "", 200}, {"POST", `{"name": "x"}`, 403}} {
		req, _ := http.NewRequest(c.method, srv.URL+"/api/v1/agents", strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s /agents with the narrowed token: %d, want %d", c.method, resp.StatusCode, c.want)
		}
	}
}
