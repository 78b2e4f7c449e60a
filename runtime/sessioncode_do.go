package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/codemode"
)

// SessionProgramInput is one program a session's agent runs in code mode.
type SessionProgramInput struct {
	Session string
	Program string // TypeScript against the session's $
	Client  string // the MCP client that sent it
	Model   string
}

// Bounds of a session's program: codemode's default deadline for its own
// time; a program that may call a tool that waits for a person (ask first,
// an argument rule that asks, ask_user, a client's tool) gets its clock
// stopped while its calls wait, up to maxWait in all, so an approval can
// come while it waits. Past that a waiting call is cancelled.
const (
	sessionProgramDeadline = codemode.DefaultDeadline
	sessionCallWait        = maxWait
)

// SessionProgram is a session's `do`: the program's own Action
// (Program.run, with its text and the session's version), then each $ call
// inside as a ToolCall.create of its own (policy, approval, record), its
// Action linked to the program's by parent_id. A refused or failed call
// throws in the program with the reason; a call still waiting when the
// program ends is cancelled. It returns the program's result and its
// Action's id; a program that did not finish gives a *codemode.Error.
func (r *Runtime) SessionProgram(ctx context.Context, p Principal, in SessionProgramInput) (codemode.Result, string, error) {
	s, err := r.loadSession(ctx, p, in.Session)
	if err != nil {
		return codemode.Result{}, "", err
	}
	if s.State != SessionActive {
		return codemode.Result{}, "", conflict("session_ended", "the session has ended")
	}
	var res codemode.Result
	var actionID string
	err = r.ProgramRun(ctx, p, ProgramInput{Program: in.Program, Client: in.Client, Model: in.Model},
		func(ctx context.Context, id string) error {
			actionID = id
			// The program's Action says where it ran: the session, under its version.
			if err := r.db.WithContext(ctx).Model(&models.Action{}).Where("id = ?", id).
				Updates(map[string]any{"version": s.VersionID, "targets": s.ID}).Error; err != nil {
				return fmt.Errorf("runtime: program's version: %w", err)
			}
			rep, err := r.sessionToolsReport(ctx, s, false)
			if err != nil {
				return err
			}
			ts := codeTools(offeredOf(rep))
			names := make([]string, 0, len(ts))
			byName := map[string]CodeTool{}
			for _, t := range ts {
				names = append(names, t.Dotted())
				byName[t.Dotted()] = t
			}
			call := func(ctx context.Context, name string, input json.RawMessage) (codemode.Answer, error) {
				t, ok := byName[name]
				if !ok {
					return codemode.Answer{}, &codemode.CallError{Code: "unknown_tool", Message: "this session offers no tool " + name}
				}
				out, err := r.programCall(ctx, p, s.ID, t, input, Caller{Client: in.Client, Model: in.Model, ParentAction: id}, in)
				return codemode.JSON(out), err
			}
			lim := codemode.Limits{Deadline: sessionProgramDeadline}
			if slices.ContainsFunc(ts, func(t CodeTool) bool { return t.mayWait }) {
				lim.CallWait = sessionCallWait
			}
			res, err = codemode.Run(ctx, in.Program, names, call, lim)
			return err
		})
	return res, actionID, err
}

// offeredOf is what Session.tools answers from a report: the offered tools.
func offeredOf(rep toolsReport) []OfferedTool {
	out := []OfferedTool{}
	for _, t := range rep.all {
		if t.Offered {
			out = append(out, OfferedTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, Policy: t.Policy,
				OutputSchema: t.OutputSchema, Rules: t.Rules})
		}
	}
	return out
}

// programCall is one $ call: ToolCall.create as the flat tools/call makes
// it, waiting for an ask-first call's decision.
func (r *Runtime) programCall(ctx context.Context, p Principal, session string, t CodeTool, input json.RawMessage, c Caller, in SessionProgramInput) (json.RawMessage, error) {
	ctx = WithCaller(ctx, c)
	wait := sessionCallWait.Seconds()
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, max(time.Until(dl).Seconds(), 0))
	}
	call, err := r.ToolCallCreate(ctx, p, ToolCallInput{Session: session, Tool: t.Name, Input: input, WaitSeconds: &wait,
		Model: in.Model, ClientInfo: in.Client})
	if err != nil {
		if e, ok := AsError(err); ok {
			return nil, &codemode.CallError{Code: e.Code, Message: e.Error(), Field: e.Field, MissingPermission: e.MissingPermission}
		}
		return nil, err
	}
	if call.Open() {
		// The program's time is up while the call waits: nobody will read
		// its answer, so it ends here and its approval leaves the queues.
		if v, err := r.ToolCallCancel(context.WithoutCancel(ctx), p, call.ID, "the program that made the call ended before it finished"); err == nil {
			call = v
		}
		if call.Open() || call.Status == CallRefused {
			return nil, &codemode.CallError{Code: "call_unfinished", Message: fmt.Sprintf(
				"%s (call %s) did not finish within the program's time, so it was cancelled (a program's calls may wait %s in all)", t.Expr(), call.ID, sessionCallWait)}
		}
	}
	switch call.Status {
	case CallSucceeded:
		if len(call.Output) == 0 {
			return json.RawMessage("null"), nil
		}
		return call.Output, nil
	case CallRefused:
		return nil, &codemode.CallError{Code: "refused", Message: fmt.Sprintf("%s was refused (call %s): %s", t.Expr(), call.ID, call.Reason)}
	default:
		return nil, &codemode.CallError{Code: "tool_failed", Message: fmt.Sprintf("%s failed (call %s): %s", t.Expr(), call.ID, call.Error)}
	}
}
