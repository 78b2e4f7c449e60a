package runtime

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/fn"
	"github.com/subako/subako/runtime/sandbox"
)

// What the verbs with limited inputs pass to the check (CheckInput): the
// values a permission's input ceiling may name, and what a call may cost.
//
//   - ToolCall.create: grant (the grant of the tool, e.g. "workbench"), tool
//     (its full name, e.g. "fn__workbench__run"), and for the tools that
//     cost money the most the call can cost: a function call its longest
//     deadline (the engine's caps, 60 s by default) at PriceFunctionSecond,
//     a sandbox exec its timeout_secs (300 by default) at PriceMachineSecond.
//   - Approval.approve and Approval.deny: grant (the grant of the call decided).

// callCheckInput is what ToolCall.create shows its limits.
func (r *Runtime) callCheckInput(in ToolCallInput) CheckInput {
	kind, grant, _ := splitToolName(in.Tool)
	out := CheckInput{Fields: map[string]string{"grant": grant, "tool": in.Tool}}
	switch kind {
	case "fn":
		caps := fn.DefaultCaps()
		if e := r.functionEngine(); e != nil {
			caps = e.Caps()
		}
		out.SpendSC = caps.MaxTimeout.Seconds() * PriceFunctionSecond
	case "sandbox":
		secs := sandbox.DefaultTimeoutSecs
		var req struct {
			TimeoutSecs int `json:"timeout_secs"`
		}
		if json.Unmarshal(in.Input, &req) == nil && req.TimeoutSecs > 0 {
			secs = min(req.TimeoutSecs, sandbox.MaxTimeoutSecs)
		}
		out.SpendSC = float64(secs) * PriceMachineSecond
	}
	return out
}

// splitToolName reads <kind>__<grant>__<tool>.
func splitToolName(name string) (kind, grant, tool string) {
	parts := strings.SplitN(name, "__", 3)
	if len(parts) != 3 {
		return "", "", ""
	}
	return parts[0], parts[1], parts[2]
}

// decisionCheckInput is what Approval.approve and Approval.deny show their
// limits: the grant of the call the approval asks about.
func (r *Runtime) decisionCheckInput(ctx context.Context, approvalID string) CheckInput {
	var grant string
	r.db.WithContext(ctx).Model(&models.ToolCall{}).
		Where("id = (SELECT tool_call_id FROM approvals WHERE id = ?)", approvalID).Limit(1).Pluck("grant_name", &grant)
	if grant == "" {
		return CheckInput{} // no such approval: the verb answers not_found
	}
	return CheckInput{Fields: map[string]string{"grant": grant}}
}
