package static

import (
	"io/fs"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// contrast is the WCAG 2 contrast ratio of two #rrggbb colours.
func contrast(a, b string) float64 {
	lum := func(hex string) float64 {
		var c [3]float64
		for i := range c {
			v, _ := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
			s := float64(v) / 255
			if s <= 0.03928 {
				c[i] = s / 12.92
			} else {
				c[i] = math.Pow((s+0.055)/1.055, 2.4)
			}
		}
		return 0.2126*c[0] + 0.7152*c[1] + 0.0722*c[2]
	}
	la, lb := lum(a), lum(b)
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}

var customProperty = regexp.MustCompile(`(--[a-z0-9-]+):\s*(#[0-9a-f]{6})`)

// themes reads the light and the dark theme's colours from app.css.
func themes(t *testing.T, css string) map[string]map[string]string {
	t.Helper()
	light, rest, ok := strings.Cut(css, "@media (prefers-color-scheme: dark)")
	if !ok {
		t.Fatal("app.css has no dark theme")
	}
	dark, _, _ := strings.Cut(rest, "}\n}")
	out := map[string]map[string]string{"light": {}, "dark": {}}
	for name, block := range map[string]string{"light": light, "dark": dark} {
		for _, m := range customProperty.FindAllStringSubmatch(block, -1) {
			out[name][m[1]] = m[2]
		}
	}
	// The dark theme overrides only some colours; the rest are the light ones.
	for k, v := range out["light"] {
		if _, ok := out["dark"][k]; !ok {
			out["dark"][k] = v
		}
	}
	return out
}

// Badges are small text: WCAG AA asks 4.5:1 against their background.
func TestBadgeContrastInBothThemes(t *testing.T) {
	b, err := fs.ReadFile(FS, "css/app.css")
	if err != nil {
		t.Fatal(err)
	}
	css := string(b)
	rule := regexp.MustCompile(`\.badge-retired \{ background: var\((--[a-z0-9-]+)\); color: var\((--[a-z0-9-]+)\); \}`).FindStringSubmatch(css)
	if rule == nil {
		t.Fatal("app.css has no .badge-retired rule of the form `background: var(--x); color: var(--y);`")
	}
	for name, vars := range themes(t, css) {
		bg, fg := vars[rule[1]], vars[rule[2]]
		if bg == "" || fg == "" {
			t.Fatalf("%s theme: %s or %s is not a colour", name, rule[1], rule[2])
		}
		if r := contrast(fg, bg); r < 4.5 {
			t.Errorf("the retired badge is %s on %s in the %s theme: %.2f:1, under 4.5:1", fg, bg, name, r)
		}
	}
}
