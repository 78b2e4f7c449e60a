package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/subako/subako/models/modelstest"
)

// The matrix's representative verb through `subako do`: a token narrowed to
// Credential.list on one vault lists that vault's credentials; on another
// vault it is refused with the missing permission named by the vault's name;
// a verb it does not hold at all is refused naming the verb.
func TestDoRefusalNamesTheMissingPermission(t *testing.T) {
	dir, url := modelstest.Fresh(t)
	db := []string{"--data", dir, "--database-url", url}
	if err := userCmd(append([]string{"add", "--email", "owner@example.com", "--access", "owner", "--password-stdin"}, db...),
		strings.NewReader("correct-horse-battery\n"), io.Discard); err != nil {
		t.Fatal(err)
	}
	token := func(perms ...string) string {
		args := []string{"create", "--email", "owner@example.com"}
		for _, p := range perms {
			args = append(args, "--permission", p)
		}
		var out bytes.Buffer
		if err := tokenCmd(append(args, db...), &out); err != nil {
			t.Fatalf("token create %v: %v", perms, err)
		}
		return strings.TrimSpace(out.String())
	}
	srv := serveDB(t, dir, url)
	t.Setenv("SUBAKO_URL", srv.URL)
	t.Setenv("SUBAKO_TOKEN", token())
	var a, b struct{ ID string }
	doJSON(t, &a, "Vault.create", `{"name": "customer-a"}`)
	doJSON(t, &b, "Vault.create", `{"name": "customer-b"}`)

	t.Setenv("SUBAKO_TOKEN", token("Credential.list vault:"+b.ID))
	if err := doCmd([]string{"Credential.list", "--json", `{"vault": "customer-b"}`}, nil, io.Discard); err != nil {
		t.Fatalf("Credential.list on the token's vault: %v", err)
	}
	// The refusal's problem is printed on stderr.
	refused := func(verb, input string) string {
		t.Helper()
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		stderr := os.Stderr
		os.Stderr = w
		err = doCmd([]string{verb, "--json", input}, nil, io.Discard)
		os.Stderr = stderr
		w.Close()
		printed, _ := io.ReadAll(r)
		if err == nil || !strings.Contains(err.Error(), "403") {
			t.Fatalf("%s %s: %v", verb, input, err)
		}
		return string(printed)
	}
	if got := refused("Credential.list", `{"vault": "customer-a"}`); !strings.Contains(got, `"missing_permission": "Credential.list vault:customer-a"`) {
		t.Fatalf("Credential.list on another vault printed:\n%s", got)
	}
	if got := refused("Vault.create", `{"name": "customer-c"}`); !strings.Contains(got, `"missing_permission": "Vault.create"`) {
		t.Fatalf("a verb the token does not hold printed:\n%s", got)
	}
}
