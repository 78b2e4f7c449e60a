package runtime

import (
	"context"
	"fmt"
	"regexp"
	"strings"

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
		if err := CheckModel("model", in.Model); err != nil {
			// As the API refuses X-Subako-Model: its calls would record it.
			return err
		}
		if secretCall.MatchString(in.Program) {
			// Refused before its text is kept: the secret it would pass
			// would be kept (and shown on the Audit page) with it.
			return invalid("program", "secret_in_program", "the program calls Credential.set, which takes a secret, and a program's text is kept with its Action: set credentials with subako do, the API or the console")
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

// secretCall finds a call of a verb taking a secret (Credential.set) in a
// program's text, written $.Credential.set, $.Credential?.set or with brackets.
var secretCall = regexp.MustCompile("Credential[\"'`]?\\s*\\]?\\s*(?:\\?\\.|\\.|\\[)\\s*[\"'`]?set\\b")

// RedactProgram removes a secret from the kept text of program action: a
// call that took it was refused, but the text held it (a call the text
// check did not see, e.g. $[name].set).
func (r *Runtime) RedactProgram(ctx context.Context, action, secret string) {
	if secret == "" || action == "" {
		return
	}
	var a models.Action
	db := r.db.WithContext(context.WithoutCancel(ctx))
	if err := db.Select("id", "program").Where("id = ? AND verb = ?", action, "Program.run").Take(&a).Error; err != nil {
		return
	}
	if !strings.Contains(a.Program, secret) {
		return
	}
	if err := db.Model(&models.Action{}).Where("id = ?", action).Update("program", strings.ReplaceAll(a.Program, secret, "[secret removed]")).Error; err != nil {
		r.opts.Log.Error("runtime: redact a program's secret", "action", action, "err", err)
	}
}
