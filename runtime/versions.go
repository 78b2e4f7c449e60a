package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/tools"
)

// Version states.
const (
	StateDraft     = "draft"
	StatePublished = "published"
)

// VersionView is a version as API.md shows it.
type VersionView struct {
	ID          string          `json:"id"`
	Agent       string          `json:"agent"`
	Number      int             `json:"number"`
	State       string          `json:"state"`
	Config      json.RawMessage `json:"config"`
	From        string          `json:"from,omitempty"`
	CreatedAt   time.Time       `json:"created_at"`
	PublishedAt *time.Time      `json:"published_at"`
}

func versionView(v models.Version) VersionView {
	return VersionView{ID: v.ID, Agent: v.AgentID, Number: v.Number, State: v.State, Config: json.RawMessage(v.Config),
		From: v.FromVersionID, CreatedAt: v.CreatedAt, PublishedAt: v.PublishedAt}
}

// Parsed is the version's config as runtime/tools reads it.
func (v VersionView) Parsed() tools.Config {
	var cfg tools.Config
	_ = json.Unmarshal(v.Config, &cfg)
	return cfg
}

// VersionFromLatest as Version.create's from starts the draft from the
// agent's latest version.
const VersionFromLatest = "latest"

// VersionCreateInput makes a draft from a config, a copy of another version, or empty.
type VersionCreateInput struct {
	Agent  string          `json:"agent" param:"agent"`
	Config json.RawMessage `json:"config"`
	From   string          `json:"from"`
}

var errPublished = &Error{Kind: KindConflict, Code: "version_published", Title: "Version is published",
	Detail: "a published version is immutable: create a new draft from it to make changes"}

// configError turns runtime/tools' validation into the runtime's error, every
// problem kept with its JSON path; the first one leads.
func configError(err error) error {
	var ve *tools.ValidationError
	if !errors.As(err, &ve) || len(ve.Errors) == 0 {
		return err
	}
	first := ve.Errors[0]
	out := &Error{Kind: KindInvalid, Code: first.Code, Title: first.Title, Detail: first.Detail, Field: first.Field}
	if out.Title == "" {
		out.Title = "Invalid agent config"
	}
	for _, fe := range ve.Errors {
		out.Fields = append(out.Fields, FieldError{Field: fe.Field, Code: fe.Code, Detail: fe.Detail})
	}
	return out
}

// canonical parses and validates a config and returns it as Export writes it.
func (r *Runtime) canonical(ctx context.Context, raw []byte) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	out, err := tools.Canonical(raw, r.catalog(ctx))
	if err != nil {
		return "", configError(err)
	}
	return string(out), nil
}

// VersionCreate is Version.create: a new draft numbered after the agent's last version.
func (r *Runtime) VersionCreate(ctx context.Context, p Principal, in VersionCreateInput) (VersionView, error) {
	var out VersionView
	err := r.run(ctx, p, "Version.create", func(a *act) error {
		if _, err := r.loadAgent(ctx, in.Agent); err != nil {
			return err
		}
		if in.From != "" && len(in.Config) > 0 {
			return invalid("from", "from_and_config", "give either config or from, not both")
		}
		raw := []byte(in.Config)
		// "latest" is the agent's highest-numbered version, so the console's
		// New version continues from where the agent is rather than from an
		// empty config; an agent with no version yet starts empty.
		if in.From == VersionFromLatest {
			var latest models.Version
			err := r.db.WithContext(ctx).Where("agent_id = ?", in.Agent).Order("number DESC").Limit(1).Find(&latest).Error
			if err != nil {
				return fmt.Errorf("runtime: latest version: %w", err)
			}
			in.From = latest.ID
		}
		if in.From != "" {
			src, err := r.loadVersion(ctx, in.From)
			if err != nil {
				return err
			}
			if src.AgentID != in.Agent {
				return invalid("from", "other_agent", "from must be a version of the same agent")
			}
			raw = []byte(src.Config)
		}
		cfg, err := r.canonical(ctx, raw)
		if err != nil {
			return err
		}
		return r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			// Lock the agent row so two drafts made at once get distinct numbers.
			if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).First(&models.Agent{}, "id = ?", in.Agent).Error; err != nil {
				return err
			}
			var last int
			tx.Model(&models.Version{}).Where("agent_id = ?", in.Agent).Select("COALESCE(MAX(number), 0)").Scan(&last)
			v := models.Version{ID: newID("ver"), AgentID: in.Agent, Number: last + 1, State: StateDraft, Config: cfg,
				FromVersionID: in.From, CreatedBy: p.ID, CreatedAt: r.now(), UpdatedAt: r.now()}
			a.target(in.Agent, v.ID)
			out = versionView(v)
			if err := tx.Create(&v).Error; err != nil {
				return err
			}
			// A draft starts with the tools its source fetched or pinned (toolpins.go).
			return copyPins(tx, in.From, v.ID)
		})
	}, in.Agent)
	return out, err
}

func (r *Runtime) loadVersion(ctx context.Context, id string) (models.Version, error) {
	var v models.Version
	err := r.db.WithContext(ctx).First(&v, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return v, notFound("version", id)
	}
	return v, err
}

// VersionList is Version.list: an agent's versions, newest first.
func (r *Runtime) VersionList(ctx context.Context, p Principal, agent string) ([]VersionView, error) {
	out := []VersionView{}
	err := r.run(ctx, p, "Version.list", func(a *act) error {
		if _, err := r.loadAgent(ctx, agent); err != nil {
			return err
		}
		var vs []models.Version
		if err := r.db.WithContext(ctx).Where("agent_id = ?", agent).Order("number DESC").Find(&vs).Error; err != nil {
			return err
		}
		for _, v := range vs {
			out = append(out, versionView(v))
		}
		return nil
	}, agent)
	return out, err
}

// PublishedChoice is a published version offered to the New session form.
type PublishedChoice struct {
	ID, AgentName string
	Number        int
}

// MaxPublishedChoices bounds the New session form's versions; the rest are
// started through Session.create or a version's own Start session link.
const MaxPublishedChoices = 500

// PublishedChoices is the New session form's versions: every published
// version of the agents p may list versions of, by agent name, newest first,
// in one query and one Version.list Action (not one per agent), as
// Version.list on each agent would allow them (agentScope). want, when
// set, is included even past the bound (a version's Start session link).
// more says the bound cut the list.
func (r *Runtime) PublishedChoices(ctx context.Context, p Principal, want string) (out []PublishedChoice, more bool, err error) {
	err = r.run(ctx, p, "Version.list", func(a *act) error {
		scope := r.agentScope(ctx, p, "Version.list", a)
		if !scope.All && len(scope.Agents) == 0 {
			// Allowed by a grant that covers no agent (a tenant's), its
			// limits spent: no agent's versions may be listed.
			return denied(p, "Version.list", "no agent's versions may be listed now: no grant of Version.list on everything or on an agent is left (none held, each limit spent, or bounded to an input)")
		}
		published := func() *gorm.DB {
			q := r.db.WithContext(ctx).Table("agents AS a").Joins("JOIN versions AS v ON v.agent_id = a.id").
				Select("v.id AS id, a.name AS agent_name, v.number AS number").Where("v.state = ?", StatePublished)
			if !scope.All {
				q = q.Where("a.id IN ?", scope.Agents)
			}
			return q
		}
		if err := published().Order("a.name, v.number DESC").Limit(MaxPublishedChoices + 1).Scan(&out).Error; err != nil {
			return err
		}
		if more = len(out) > MaxPublishedChoices; more {
			out = out[:MaxPublishedChoices]
		}
		if want == "" || slices.ContainsFunc(out, func(c PublishedChoice) bool { return c.ID == want }) {
			return nil
		}
		var extra []PublishedChoice
		if err := published().Where("v.id = ?", want).Scan(&extra).Error; err != nil {
			return err
		}
		out = append(extra, out...)
		return nil
	})
	return out, more, err
}

// VersionGet is Version.get.
func (r *Runtime) VersionGet(ctx context.Context, p Principal, id string) (VersionView, error) {
	var out VersionView
	err := r.run(ctx, p, "Version.get", func(a *act) error {
		v, err := r.loadVersion(ctx, id)
		out = versionView(v)
		return err
	}, id)
	return out, err
}

// VersionUpdate is Version.update: replaces a draft's config whole. A
// published version answers version_published and is left as it was.
func (r *Runtime) VersionUpdate(ctx context.Context, p Principal, id string, config []byte) (VersionView, error) {
	return r.updateConfig(ctx, p, id, func(string) ([]byte, error) {
		// A forgotten body must not empty a draft: an empty config is said as {}.
		if t := bytes.TrimSpace(config); len(t) == 0 || bytes.Equal(t, []byte("null")) {
			return nil, invalid("config", "required", "the agent config is required: send a JSON object (an empty config is {})")
		}
		return config, nil
	})
}

// updateConfig is Version.update with the new config derived from the
// current one. It checks the config outside any transaction (the catalog reads
// must not wait on SQLite's write lock), then writes it only if the stored
// config is still the one it started from; if another save came first, it
// derives again from that one, so no edit is lost.
func (r *Runtime) updateConfig(ctx context.Context, p Principal, id string, next func(current string) ([]byte, error)) (VersionView, error) {
	var out VersionView
	err := r.run(ctx, p, "Version.update", func(a *act) error {
		for range 20 {
			v, err := r.loadVersion(ctx, id)
			if err != nil {
				return err
			}
			if v.State != StateDraft {
				return errPublished
			}
			raw, err := next(v.Config)
			if err != nil {
				return err
			}
			cfg, err := r.canonicalIn(ctx, raw, id)
			if err != nil {
				return err
			}
			now := r.now()
			res := r.db.WithContext(ctx).Model(&models.Version{}).Where("id = ? AND state = ? AND config = ?", id, StateDraft, v.Config).
				Updates(map[string]any{"config": cfg, "updated_at": now})
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 1 {
				v.Config, v.UpdatedAt = cfg, now
				out = versionView(v)
				return nil
			}
		}
		return conflict("version_busy", "the version kept changing while saving: try again")
	}, id)
	return out, err
}

// VersionPublish is Version.publish: the draft becomes immutable. Its config is
// checked again, since a skill or package it names may have gone since.
func (r *Runtime) VersionPublish(ctx context.Context, p Principal, id string) (VersionView, error) {
	var out VersionView
	err := r.run(ctx, p, "Version.publish", func(a *act) error {
		v, err := r.loadVersion(ctx, id)
		if err != nil {
			return err
		}
		if v.State != StateDraft {
			return errPublished
		}
		if _, err := r.canonicalIn(ctx, []byte(v.Config), id); err != nil {
			return err
		}
		// The tools fetched for its servers become the version's pins (toolpins.go).
		if err := prunePins(r.db.WithContext(ctx), id, versionView(v).Parsed()); err != nil {
			return err
		}
		now := r.now()
		res := r.db.WithContext(ctx).Model(&models.Version{}).Where("id = ? AND state = ?", id, StateDraft).
			Updates(map[string]any{"state": StatePublished, "published_at": now, "updated_at": now})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return errPublished
		}
		v.State, v.PublishedAt = StatePublished, &now
		out = versionView(v)
		return nil
	}, id)
	return out, err
}

// ToolView is one tool a version grants, as Version.tools answers.
type ToolView struct {
	Name         string          `json:"name"`
	Kind         string          `json:"kind"`
	Grant        string          `json:"grant"`
	Tool         string          `json:"tool"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	Policy       string          `json:"policy"`
	PolicySource string          `json:"policy_source,omitempty"`
	Offered      bool            `json:"offered"`
	Discovered   bool            `json:"discovered"`
	Title        string          `json:"title,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Meta         json.RawMessage `json:"meta,omitempty"`
	// Rules are the tool's argument rules; Policy governs the calls none matches.
	Rules []tools.ArgRule `json:"rules,omitempty"`
}

// VersionTools is Version.tools: every tool the version grants with its
// effective policy; denied tools are listed as not offered.
func (r *Runtime) VersionTools(ctx context.Context, p Principal, id string) ([]ToolView, error) {
	out := []ToolView{}
	err := r.run(ctx, p, "Version.tools", func(a *act) error {
		v, err := r.loadVersion(ctx, id)
		if err != nil {
			return err
		}
		cfg := versionView(v).Parsed()
		failed := r.discoveryErrors(ctx, cfg)
		pins, err := r.publishedPins(ctx, v)
		if err != nil {
			return err
		}
		for _, t := range tools.List(cfg, r.discoveredTools(ctx, cfg), r.catalog(ctx)) {
			t = asPinned(t, cfg, pins, v.Number) // what its sessions offer (toolpins.go)
			if !t.Discovered && t.Kind == tools.KindMCP && failed[t.Grant] != "" {
				// Say why the tools are missing: the last attempt's error names the fix.
				t.Description = "last discovery failed: " + failed[t.Grant]
			}
			out = append(out, ToolView(t))
		}
		return nil
	}, id)
	return out, err
}

// discoveredTools holds each MCP grant's tools once a session has discovered
// them; until then the grant shows as not discovered.
// Tools a session would skip are left out here too.
func (r *Runtime) discoveredTools(ctx context.Context, cfg tools.Config) map[string][]tools.ToolDef {
	var urls []string
	for _, g := range cfg.MCPServers {
		urls = append(urls, g.URL)
	}
	if len(urls) == 0 {
		return nil
	}
	byURL := r.discoveredByURL(ctx, urls)
	out := map[string][]tools.ToolDef{}
	for _, g := range cfg.MCPServers {
		if listed, ok := byURL[g.URL]; ok {
			out[g.Name], _ = offerable(g.Name, listed)
		}
	}
	return out
}

// VersionDiff is Version.diff: grants added, removed and changed from `against` to this version.
func (r *Runtime) VersionDiff(ctx context.Context, p Principal, id, against string) ([]tools.Change, error) {
	var out []tools.Change
	err := r.run(ctx, p, "Version.diff", func(a *act) error {
		if against == "" {
			return invalid("against", "against_required", "against must name the version to compare with")
		}
		v, err := r.loadVersion(ctx, id)
		if err != nil {
			return err
		}
		w, err := r.loadVersion(ctx, against)
		if err != nil {
			return err
		}
		out = tools.Diff(versionView(w).Parsed(), versionView(v).Parsed())
		if out == nil {
			out = []tools.Change{}
		}
		return nil
	}, id, against)
	return out, err
}

// VersionExport returns a version's config as the agent config JSON file.
func (r *Runtime) VersionExport(ctx context.Context, p Principal, id string) ([]byte, VersionView, error) {
	v, err := r.VersionGet(ctx, p, id)
	if err != nil {
		return nil, v, err
	}
	b, err := tools.Export(v.Parsed())
	if err != nil {
		return nil, v, fmt.Errorf("runtime: export %s: %w", id, err)
	}
	return b, v, nil
}
