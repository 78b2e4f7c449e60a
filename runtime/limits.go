package runtime

import "context"

// takeLimit spends one use of g's limit for p's call, or refuses it with
// limit_reached (P4 owns this file: counts per period, input ceilings, spend).
func (r *Runtime) takeLimit(ctx context.Context, p Principal, g Grant, in CheckInput) error {
	return nil
}
