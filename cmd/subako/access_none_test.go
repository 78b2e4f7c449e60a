package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/subako/subako/models/modelstest"
)

// subako user add takes access none (a person holding only their seats'
// roles); a level that does not exist is refused naming the choices.
func TestUserAddWithAccessNone(t *testing.T) {
	dir, url := modelstest.Fresh(t)
	db := []string{"--data", dir, "--database-url", url}
	var out bytes.Buffer
	if err := userCmd(append([]string{"add", "--email", "seated@example.com", "--access", "none", "--password-stdin"}, db...),
		strings.NewReader("correct-horse-battery\n"), &out); err != nil {
		t.Fatalf("user add --access none: %v", err)
	}
	if !strings.HasPrefix(out.String(), "added seated@example.com as none") {
		t.Fatalf("user add said %q", out.String())
	}
	err := userCmd(append([]string{"add", "--email", "x@example.com", "--access", "nobody", "--password-stdin"}, db...),
		strings.NewReader("correct-horse-battery\n"), &out)
	if err == nil || !strings.Contains(err.Error(), "viewer, none") {
		t.Fatalf("user add --access nobody: %v", err)
	}
}
