package runtime

import (
	"context"
	"fmt"

	"github.com/subako/subako/models"
)

// MaxProgramBytes bounds a code-mode program kept with its Action.
const MaxProgramBytes = 64 << 10

// ProgramInput is one code-mode program (/mcp `do`) as its Action keeps it.
type ProgramInput struct {
	Program string
	Client  string // the MCP client that sent it
	Model   string // the model, when the client says
}

// ProgramRun is Program.run: it records the program's Action (with its text)
// before the program runs, so each $ call inside, recorded by its own verb,
// links to it by parent_id; body gets that Action's id. A program that fails
// leaves its Action failed with the reason; body's error is returned.
//
// The verb holds nothing itself: every $ call is checked on its own. Every
// access level holds Program.run (a viewer's program can still read).
func (r *Runtime) ProgramRun(ctx context.Context, p Principal, in ProgramInput, body func(ctx context.Context, actionID string) error) error {
	var bodyErr error
	err := r.run(ctx, p, "Program.run", func(a *act) error {
		if len(in.Program) > MaxProgramBytes {
			return invalid("program", "program_too_large", fmt.Sprintf("program is %d bytes; the limit is %d bytes (64 KiB)", len(in.Program), MaxProgramBytes))
		}
		a.client, a.model = in.Client, in.Model
		rec := r.actionRecord(p, "Program.run", a, VerdictAllowed, "")
		rec.Program = truncate(in.Program, MaxProgramBytes)
		if err := r.db.WithContext(ctx).Create(&rec).Error; err != nil {
			return fmt.Errorf("program: record: %w", err)
		}
		a.recorded = true
		if bodyErr = body(ctx, rec.ID); bodyErr != nil {
			if err := r.db.WithContext(context.WithoutCancel(ctx)).Model(&models.Action{}).Where("id = ?", rec.ID).
				Updates(map[string]any{"verdict": VerdictFailed, "reason": truncate(bodyErr.Error(), 1000)}).Error; err != nil {
				r.opts.Log.Error("runtime: record program failure", "action", rec.ID, "err", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return bodyErr
}
