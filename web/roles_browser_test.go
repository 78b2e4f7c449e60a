package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/subako/subako/runtime"
)

// loginAs signs the browser in as email, signed out of whoever was before.
func loginAs(t *testing.T, ctx context.Context, base, email string) []chromedp.Action[chromedp.Void] {
	t.Helper()
	if _, err := chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
		t.Fatalf("clear cookies: %v", err)
	}
	return []chromedp.Action[chromedp.Void]{
		chromedp.Navigate(base + "/login"),
		chromedp.WaitVisible(css(`[data-testid=login-email]`)),
		chromedp.SendKeys(css(`[data-testid=login-email]`), email),
		chromedp.SendKeys(css(`[data-testid=login-password]`), password),
		chromedp.Click(css(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=dashboard]`)),
	}
}

// In Chromium: the owner creates a role with a scoped permission and a limit
// on the Roles page and seats bob in it on the People page; bob's console
// widens to the vault the role names (and no other); unseated while his
// Approvals page is open, the vault is gone from his very next page. The
// built-in levels show as roles that cannot be edited; the Changes page
// lists the unseating with Undo.
func TestBrowserRoleNarrowsTheConsole(t *testing.T) {
	w := newRoleWorld(t, runtime.Options{})
	ctx := browserCtx(t)
	base := w.srv.URL
	vaultsText := func() string { return text(t, ctx, `main`) }

	steps(t, ctx, "bob sees no vault of the owner's", append(loginAs(t, ctx, base, "bob@example.com"),
		chromedp.Navigate(base+"/vaults"),
		chromedp.WaitVisible(css(`main`)))...)
	if s := vaultsText(); strings.Contains(s, "customer-a") || strings.Contains(s, "customer-b") {
		t.Fatalf("bob's Vaults page before a seat:\n%s", s)
	}

	steps(t, ctx, "the owner creates a role on the Roles page", append(loginAs(t, ctx, base, "owner@example.com"),
		chromedp.Navigate(base+"/roles"),
		chromedp.WaitVisible(css(`[data-testid=role-create]`)),
		chromedp.SendKeys(css(`[data-testid=role-name]`), "Vault keeper"),
		chromedp.SendKeys(css(`[data-testid=role-decay]`), "30"),
		chromedp.Click(css(`[data-testid="verb-Vault.get"]`)),
		chromedp.Click(css(`[data-testid="verb-Credential.set"]`)),
		chromedp.Click(css(`[data-testid="verb-Credential.list"]`)),
		chromedp.SetValue(css(`[data-testid=perm-scope]`), "vault:"+w.a),
		chromedp.SendKeys(css(`[data-testid=limit-count]`), "5"),
		chromedp.SetValue(css(`[data-testid=limit-period]`), "day"),
		chromedp.Click(css(`[data-testid=role-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=role-permissions]`)))...)
	perms := text(t, ctx, `[data-testid=role-permissions]`)
	for _, want := range []string{"Vault.get", "Credential.set", "vault:customer-a", "5 a day"} {
		if !strings.Contains(perms, want) {
			t.Fatalf("the role's permissions lack %q:\n%s", want, perms)
		}
	}
	screenshot(ctx, t, "role-page")
	steps(t, ctx, "a built-in level is read-only",
		chromedp.Navigate(base+"/roles/member"),
		chromedp.WaitVisible(css(`[data-testid=built-in]`)))
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("form[action^='/roles/member']").length`)); err != nil || n != 0 {
		t.Fatalf("the member level has %d forms (%v)", n, err)
	}

	steps(t, ctx, "the owner seats bob on the People page",
		chromedp.Navigate(base+"/people"),
		chromedp.WaitVisible(css(`[data-testid="assign-role-bob@example.com"]`)),
		chromedp.Click(css(`[data-testid="assign-bob@example.com"]`)),
		chromedp.WaitVisible(css(`[data-testid="unseat-bob@example.com-Vault keeper"]`)))
	screenshot(ctx, t, "people-seated")

	steps(t, ctx, "bob now sees customer-a (only) and its credential form", append(loginAs(t, ctx, base, "bob@example.com"),
		chromedp.Navigate(base+"/vaults"),
		chromedp.WaitVisible(css(`[data-testid=vault-row]`)))...)
	if s := vaultsText(); !strings.Contains(s, "customer-a") || strings.Contains(s, "customer-b") {
		t.Fatalf("bob's Vaults page with the seat:\n%s", s)
	}
	steps(t, ctx, "bob opens customer-a",
		chromedp.Navigate(base+"/vaults/"+w.a),
		chromedp.WaitVisible(css(`[data-testid=credential-form]`)))

	steps(t, ctx, "bob's Approvals page streams",
		chromedp.Navigate(base+"/approvals"),
		watchDOM(`document.querySelector("[data-testid=approval-live]").getAttribute("data-live") === "open"`, 10*time.Second))
	var seats []runtime.SeatView
	w.api(w.owner, "GET", "/seats?user=bob@example.com", nil, &seats)
	if len(seats) != 1 {
		t.Fatalf("bob's seats: %+v", seats)
	}
	if s := w.api(w.owner, "DELETE", "/seats/"+seats[0].ID, nil, nil); s != 204 {
		t.Fatalf("Seat.delete: %d", s)
	}
	steps(t, ctx, "unseated with his Approvals page open, bob's next page no longer shows customer-a",
		chromedp.Navigate(base+"/vaults"),
		chromedp.WaitVisible(css(`main`)))
	if s := vaultsText(); strings.Contains(s, "customer-a") {
		t.Fatalf("bob's Vaults page after the unseating:\n%s", s)
	}
	steps(t, ctx, "the Changes page lists the unseating with Undo for the owner", append(loginAs(t, ctx, base, "owner@example.com"),
		chromedp.Navigate(base+"/changes"),
		chromedp.WaitVisible(css(`[data-testid=changes]`)))...)
	if s := text(t, ctx, `[data-testid=changes]`); !strings.Contains(s, "unseated bob@example.com from role Vault keeper") || !strings.Contains(s, "Undo") {
		t.Fatalf("the Changes page:\n%s", s)
	}
}
