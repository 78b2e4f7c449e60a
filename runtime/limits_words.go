package runtime

import "fmt"

// countOf says n of a thing in English: "1 permission", "2 permissions".
func countOf(n int, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %ss", n, one)
}

// countUsed says a count limit is spent: "the 1 call of this hour is used",
// "all 20 calls of this day are used" (it read "all 1 of this hour are used").
func countUsed(n int, period string) string {
	if n == 1 {
		return "the 1 call of this " + period + " is used"
	}
	return fmt.Sprintf("all %d calls of this %s are used", n, period)
}
