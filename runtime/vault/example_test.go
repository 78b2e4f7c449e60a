package vault_test

import (
	"fmt"
	"net/http"

	"github.com/subako/subako/runtime/vault"
)

// The runtime picks the credential for a tool's URL, opens its secret and
// attaches it to the outgoing request.
func ExampleMatch() {
	creds := []vault.Credential{
		{ID: "gh", Prefix: "https://api.github.com", Type: vault.TypeBearer},
		{ID: "gh-orders", Prefix: "https://api.github.com/repos/acme/orders", Type: vault.TypeHeader, HeaderName: "X-Api-Key"},
	}
	for _, url := range []string{
		"https://api.github.com/repos/acme/orders/issues",
		"https://api.github.com/repos/acme/orders-old",
		"http://api.github.com/user",
	} {
		c, ok := vault.Match(creds, url)
		fmt.Println(url, "->", c.ID, ok)
	}
	req, _ := http.NewRequest(http.MethodGet, "https://api.github.com/user", nil)
	vault.Apply(req, creds[0], "ghp_secret")
	fmt.Println(req.Header.Get("Authorization") != "")
	// Output:
	// https://api.github.com/repos/acme/orders/issues -> gh-orders true
	// https://api.github.com/repos/acme/orders-old -> gh true
	// http://api.github.com/user ->  false
	// true
}
