package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"gorm.io/gorm/clause"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/tools"
)

// ClientInput is Client.connect's body: the tools a client offers the session.
type ClientInput struct {
	Session string          `json:"session" param:"session"`
	Client  string          `json:"client" param:"client"`
	Tools   []tools.ToolDef `json:"tools"`
}

// ClientView is a connected client and its tools.
type ClientView struct {
	Name        string          `json:"name"`
	Tools       []tools.ToolDef `json:"tools"`
	ConnectedAt time.Time       `json:"connected_at"`
	LastSeenAt  time.Time       `json:"last_seen_at"`
}

var clientToolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// clientSchemaProblem explains why raw cannot be a client tool's input
// schema, or returns "". MCP lists a tool only with an object schema, and
// calls are validated against it, so it must be a JSON object whose "type"
// is "object" and that the validator can compile.
func clientSchemaProblem(raw json.RawMessage) string {
	if why := schemaShapeProblem(raw); why != "" {
		return why
	}
	var s jsonschema.Schema
	_ = json.Unmarshal(raw, &s) // schemaShapeProblem decoded it
	if _, err := s.Resolve(nil); err != nil {
		return "is not a usable JSON Schema: " + truncate(err.Error(), 300)
	}
	return ""
}

// schemaShapeProblem says why raw is not an input schema clients take (a
// JSON Schema of type "object", with known types, that does not loop), or
// "". It is what an MCP server's tool must meet to be offered: model APIs
// refuse the whole tool list when one tool's schema is not one.
func schemaShapeProblem(raw json.RawMessage) string {
	const want = `must be a JSON Schema of type "object", such as {"type": "object", "properties": {}}`
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil || probe == nil {
		return want
	}
	var typ string
	if err := json.Unmarshal(probe["type"], &typ); err != nil || typ != "object" {
		return want
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return "is not a valid JSON Schema: " + truncate(err.Error(), 300)
	}
	if t := unknownSchemaType(&s); t != "" {
		// The validator compiles an unknown type and then fails every call.
		return "is not a valid JSON Schema: " + t + " is not a JSON type; use null, boolean, object, array, number, integer or string"
	}
	if why := tools.SchemaLoop(raw); why != "" {
		return "is not a usable JSON Schema: " + why
	}
	return ""
}

// quoteCut quotes a type name a client sent, cut to 40 bytes.
func quoteCut(t string) string {
	return fmt.Sprintf("%q", truncate(t, 40))
}

var jsonTypes = []string{"null", "boolean", "object", "array", "number", "integer", "string"}

// unknownSchemaType returns, quoted, the first "type" under s that names no
// JSON type, or "".
func unknownSchemaType(s *jsonschema.Schema) string {
	if s == nil {
		return ""
	}
	if s.Type != "" && !slices.Contains(jsonTypes, s.Type) {
		return quoteCut(s.Type)
	}
	for _, t := range s.Types {
		if !slices.Contains(jsonTypes, t) {
			return quoteCut(t)
		}
	}
	var kids []*jsonschema.Schema
	kids = append(kids, s.Items, s.AdditionalItems, s.Contains, s.UnevaluatedItems, s.AdditionalProperties,
		s.PropertyNames, s.UnevaluatedProperties, s.Not, s.If, s.Then, s.Else, s.ContentSchema)
	for _, l := range [][]*jsonschema.Schema{s.PrefixItems, s.ItemsArray, s.AllOf, s.AnyOf, s.OneOf} {
		kids = append(kids, l...)
	}
	for _, m := range []map[string]*jsonschema.Schema{s.Defs, s.Definitions, s.DependencySchemas,
		s.Properties, s.PatternProperties, s.DependentSchemas} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			kids = append(kids, m[k])
		}
	}
	for _, k := range kids {
		if t := unknownSchemaType(k); t != "" {
			return t
		}
	}
	return ""
}

// ClientConnect is Client.connect: declares (or redeclares) a client's tools.
func (r *Runtime) ClientConnect(ctx context.Context, p Principal, in ClientInput) (ClientView, error) {
	var out ClientView
	err := r.run(ctx, p, "Client.connect", func(a *act) error {
		s, err := r.loadSession(ctx, p, in.Session)
		if err != nil {
			return err
		}
		if s.State != SessionActive {
			return conflict("session_ended", "the session has ended")
		}
		if errs := tools.CheckName(tools.KindClient, in.Client, nil); len(errs) > 0 {
			return invalid("client", errs[0].Code, errs[0].Detail)
		}
		if len(in.Tools) > 128 {
			return invalid("tools", "too_many_tools", "a client may declare at most 128 tools")
		}
		seen := map[string]bool{}
		for i, t := range in.Tools {
			field := fmt.Sprintf("tools[%d]", i)
			switch {
			case !clientToolName.MatchString(t.Name):
				return invalid(field+".name", "invalid_tool_name", "tool names are 1-64 characters of A-Z, a-z, 0-9, _ and -")
			case seen[t.Name]:
				return invalid(field+".name", "duplicate_tool", fmt.Sprintf("tool %q is declared twice", t.Name))
			case len(t.Description) > 4000:
				return invalid(field+".description", "description_too_long", "description must be at most 4,000 characters")
			}
			if len(t.InputSchema) == 0 {
				in.Tools[i].InputSchema = json.RawMessage(`{"type":"object"}`)
			} else if why := clientSchemaProblem(t.InputSchema); why != "" {
				return invalid(field+".input_schema", "invalid_schema", "input_schema "+why)
			}
			seen[t.Name] = true
		}
		b, _ := json.Marshal(in.Tools)
		c := models.Client{SessionID: s.ID, Name: in.Client, Tools: string(b), ConnectedAt: r.now(), LastSeenAt: r.now()}
		a.target(s.ID, in.Client)
		out = ClientView{Name: c.Name, Tools: in.Tools, ConnectedAt: c.ConnectedAt, LastSeenAt: c.LastSeenAt}
		if out.Tools == nil {
			out.Tools = []tools.ToolDef{}
		}
		return r.db.WithContext(ctx).Clauses(clause.OnConflict{UpdateAll: true}).Create(&c).Error
	}, in.Session)
	return out, err
}

// ClientCallNext is ClientCall.next: the oldest call waiting for this client
// (its own tools, or an ask_user question any client may answer), claimed for
// it; it waits up to wait for one to arrive and answers none when nothing does.
func (r *Runtime) ClientCallNext(ctx context.Context, p Principal, session, client string, wait time.Duration) ([]ToolCallView, error) {
	out := []ToolCallView{}
	err := r.run(ctx, p, "ClientCall.next", func(a *act) error {
		if _, err := r.loadSession(ctx, p, session); err != nil {
			return err
		}
		r.db.WithContext(ctx).Model(&models.Client{}).Where("session_id = ? AND name = ?", session, client).Update("last_seen_at", r.now())
		ended := false
		// The session's end, or a call of it waiting for a client.
		want := func(e Event) bool {
			return e.SessionID == session && (e.Kind == "session" || e.Kind == "call" && e.State == CallWaitingClient)
		}
		err := r.waitFor(ctx, min(max(wait, 0), time.Minute), want, func(e Event) bool {
			if e.Kind == "session" && e.SessionID == session && e.State == SessionEnded {
				ended = true
				return true
			}
			return e.SessionID == session && e.Kind == "call" && e.State == CallWaitingClient
		},
			func() (bool, error) {
				v, ok := r.claimClientCall(ctx, session, client)
				if ok {
					a.target(v.ID)
					out = append(out, v)
				}
				return ok || ended, nil
			})
		return err
	}, session)
	return out, err
}

// waitingClientWhere is the condition of the partial index tool_calls_waiting
// (migration 0034), named literally for the index to be used: a poll then
// reads the session's waiting calls, not every call it made
// (TestClientPollReadsOnlyWaitingCalls).
const waitingClientWhere = "status = '" + CallWaitingClient + "'"

func (r *Runtime) claimClientCall(ctx context.Context, session, client string) (ToolCallView, bool) {
	var cands []models.ToolCall
	// Delivery is at most once: a client may be working on a call for minutes
	// (a person answering ask_user), and handing it out again would run it
	// twice. A call whose delivery was lost ends with the client timeout.
	r.db.WithContext(ctx).Where(waitingClientWhere+" AND session_id = ? AND claimed_by = '' AND (client = ? OR (kind = ? AND client = ''))",
		session, client, tools.KindBuiltin).Order("created_at").Limit(5).Find(&cands)
	for _, c := range cands {
		res := r.db.WithContext(ctx).Model(&models.ToolCall{}).Where("id = ? AND claimed_by = ''", c.ID).
			Updates(map[string]any{"claimed_by": client, "claimed_at": r.now()})
		if res.RowsAffected == 1 {
			c.ClaimedBy = client
			return callView(c), true
		}
	}
	return ToolCallView{}, false
}

// CompleteInput is ToolCall.complete's body: an output, or an error.
type CompleteInput struct {
	Call   string          `json:"call" param:"call"`
	Output json.RawMessage `json:"output"`
	Error  string          `json:"error"`
}

// ToolCallComplete is ToolCall.complete: a client's (or, for ask_user, an
// operator's) answer to a call that waits for one.
func (r *Runtime) ToolCallComplete(ctx context.Context, p Principal, in CompleteInput) (ToolCallView, error) {
	var out ToolCallView
	err := r.run(ctx, p, "ToolCall.complete", func(a *act) error {
		var c models.ToolCall
		if err := r.db.WithContext(ctx).First(&c, "id = ?", in.Call).Error; err != nil {
			return notFound("tool call", in.Call)
		}
		if _, err := r.loadSession(ctx, p, c.SessionID); err != nil {
			return notFound("tool call", in.Call)
		}
		if c.Status != CallWaitingClient {
			return conflict("not_waiting", fmt.Sprintf("call %s is %s, not waiting for an answer", c.ID, c.Status))
		}
		if (len(in.Output) == 0) == (in.Error == "") {
			return invalid("output", "output_or_error", "give either output or error")
		}
		if len(in.Output) > 0 && !json.Valid(in.Output) {
			return invalid("output", "invalid_json", "output must be JSON")
		}
		var err error
		if in.Error != "" {
			err = fmt.Errorf("%s", truncate(in.Error, maxCallErrorBytes))
		}
		if !r.finishCall(ctx, c, CallWaitingClient, in.Output, err) {
			return conflict("not_waiting", "the call was answered or ended meanwhile")
		}
		out, err = r.callByID(ctx, c.ID)
		return err
	}, in.Call)
	return out, err
}
