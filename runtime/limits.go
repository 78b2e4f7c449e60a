package runtime

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

// takeLimit spends one use of g's limit for p's call, or refuses it with
// limit_reached (called by authorize, check.go): g allows p's call only within its
// limit. An input ceiling needs the verb to pass the field's value
// (CheckInput.Fields); a count takes one unit of the period; a spend ceiling
// takes what the call may cost (CheckInput.SpendSC) from the UTC day's. Usage
// is counted per permission and holder (the person or session calling), so a
// narrowed token counts on its holder's permission (tokenGrants).
func (r *Runtime) takeLimit(ctx context.Context, p Principal, g Grant, in CheckInput) error {
	l := g.Limit
	if l.IsZero() {
		return nil
	}
	if l.Field != "" {
		v, ok := in.Fields[l.Field]
		if !ok {
			return &Error{Kind: KindForbidden, Code: "limit_reached", Title: "Limit reached",
				Detail: fmt.Sprintf("limit reached: %s allows only %s %s, and this call names no %s", g, l.Field, strings.Join(l.Values, ", "), l.Field)}
		}
		if !slices.Contains(l.Values, v) {
			return &Error{Kind: KindForbidden, Code: "limit_reached", Title: "Limit reached",
				Detail: fmt.Sprintf("limit reached: %s allows only %s %s, not %q", g, l.Field, strings.Join(l.Values, ", "), truncate(v, 100))}
		}
	}
	spend := l.SpendSC > 0 && in.SpendSC > 0
	if l.Count <= 0 && !spend {
		return nil
	}
	now := r.now()
	r.sweepLimitUsage(ctx, now)
	take := func(tx *gorm.DB) error {
		if l.Count > 0 {
			start, next, err := periodBounds(l.Period, now)
			if err != nil {
				return err
			}
			ok, err := r.takeUnits(ctx, tx, g.PermissionID, p.ID, start, 1, l.Count)
			if err != nil {
				return err
			}
			if !ok {
				return limitReached(g, countUsed(l.Count, l.Period), now, next)
			}
		}
		if spend {
			start, next, _ := periodBounds(PeriodDay, now)
			ok, err := r.takeSpend(ctx, tx, g.PermissionID, p.ID, start, in.SpendSC, l.SpendSC)
			if err != nil {
				return err
			}
			if !ok {
				return limitReached(g, fmt.Sprintf("this call may cost up to %s SC, more than is left of %s SC today", scText(in.SpendSC), scText(l.SpendSC)), now, next)
			}
		}
		return nil
	}
	if l.Count > 0 && spend {
		// Both or neither: a unit taken for a call the spend refuses is given back.
		return r.db.WithContext(ctx).Transaction(take)
	}
	return take(nil)
}

// limitReached is the refusal of a call over a limit: which limit, and when
// it resets (RetryAfter).
func limitReached(g Grant, why string, now, next time.Time) *Error {
	wait := next.Sub(now)
	return &Error{Kind: KindTooMany, Code: "limit_reached", Title: "Limit reached", RetryAfter: wait,
		Detail: fmt.Sprintf("limit reached: %s: %s; it resets at %s (in %s)", g, why, next.UTC().Format(time.RFC3339), wait.Round(time.Second))}
}

func scText(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
