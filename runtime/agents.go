package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
)

// AgentView is an agent as interfaces show it.
type AgentView struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// PublishedVersion is the id of the agent's newest published version.
	PublishedVersion string `json:"published_version,omitempty"`
}

func agentView(a models.Agent) AgentView {
	return AgentView{ID: a.ID, Name: a.Name, Description: a.Description, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
}

// AgentInput creates or updates an agent; nil fields are left as they are.
type AgentInput struct {
	Agent       string  `json:"agent" param:"agent"`
	Name        *string `json:"name" form:"name"`
	Description *string `json:"description" form:"description"`
}

func (in AgentInput) check(creating bool) error {
	if in.Name != nil || creating {
		name := ""
		if in.Name != nil {
			name = strings.TrimSpace(*in.Name)
		}
		switch n := utf8.RuneCountInString(name); {
		case n == 0:
			return invalid("name", "name_required", "name is required")
		case n > 64:
			return invalid("name", "name_too_long", fmt.Sprintf("name must be at most 64 characters; it has %d", n))
		}
	}
	if in.Description != nil && utf8.RuneCountInString(*in.Description) > 2000 {
		return invalid("description", "description_too_long", "description must be at most 2,000 characters")
	}
	return nil
}

func (r *Runtime) agentNameTaken(ctx context.Context, name, except string) bool {
	var n int64
	r.db.WithContext(ctx).Model(&models.Agent{}).Where("LOWER(name) = LOWER(?) AND id <> ?", name, except).Count(&n)
	return n > 0
}

var errAgentNameTaken = &Error{Kind: KindConflict, Code: "name_taken", Title: "Name taken", Field: "name",
	Detail: "another agent already has this name", Fields: []FieldError{{Field: "name", Code: "name_taken", Detail: "another agent already has this name"}}}

// AgentCreate is Agent.create.
func (r *Runtime) AgentCreate(ctx context.Context, p Principal, in AgentInput) (AgentView, error) {
	var out AgentView
	err := r.run(ctx, p, "Agent.create", func(a *act) error {
		if err := in.check(true); err != nil {
			return err
		}
		name := strings.TrimSpace(*in.Name)
		if r.agentNameTaken(ctx, name, "") {
			return errAgentNameTaken
		}
		rec := models.Agent{ID: newID("ag"), Name: name, CreatedAt: r.now(), UpdatedAt: r.now()}
		if in.Description != nil {
			rec.Description = strings.TrimSpace(*in.Description)
		}
		if err := r.db.WithContext(ctx).Create(&rec).Error; err != nil {
			return fmt.Errorf("runtime: create agent: %w", err)
		}
		a.target(rec.ID)
		out = agentView(rec)
		return nil
	})
	return out, err
}

// AgentList is Agent.list, by name.
func (r *Runtime) AgentList(ctx context.Context, p Principal) ([]AgentView, error) {
	out := []AgentView{}
	err := r.run(ctx, p, "Agent.list", func(a *act) error {
		var recs []models.Agent
		if err := r.db.WithContext(ctx).Order("name").Find(&recs).Error; err != nil {
			return err
		}
		pub, err := r.publishedVersions(ctx)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			v := agentView(rec)
			v.PublishedVersion = pub[rec.ID]
			out = append(out, v)
		}
		return nil
	})
	return out, err
}

// publishedVersions is each agent's newest published version's id (one
// agent's, given its id), in one query.
func (r *Runtime) publishedVersions(ctx context.Context, agent ...string) (map[string]string, error) {
	var rows []struct{ AgentID, ID string }
	q := r.db.WithContext(ctx).Model(&models.Version{}).Select("agent_id, id").
		Where("state = ? AND number = (SELECT MAX(w.number) FROM versions w WHERE w.agent_id = versions.agent_id AND w.state = ?)", StatePublished, StatePublished)
	if len(agent) > 0 {
		q = q.Where("agent_id IN ?", agent)
	}
	if err := q.Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make(map[string]string, len(rows))
	for _, v := range rows {
		out[v.AgentID] = v.ID
	}
	return out, nil
}

func (r *Runtime) loadAgent(ctx context.Context, id string) (models.Agent, error) {
	var rec models.Agent
	err := r.db.WithContext(ctx).First(&rec, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return rec, notFound("agent", id)
	}
	return rec, err
}

// AgentGet is Agent.get.
func (r *Runtime) AgentGet(ctx context.Context, p Principal, id string) (AgentView, error) {
	var out AgentView
	err := r.run(ctx, p, "Agent.get", func(a *act) error {
		rec, err := r.loadAgent(ctx, id)
		if err != nil {
			return err
		}
		out = agentView(rec)
		pub, err := r.publishedVersions(ctx, id)
		out.PublishedVersion = pub[id]
		return err
	}, id)
	return out, err
}

// AgentUpdate is Agent.update.
func (r *Runtime) AgentUpdate(ctx context.Context, p Principal, in AgentInput) (AgentView, error) {
	var out AgentView
	err := r.run(ctx, p, "Agent.update", func(a *act) error {
		if err := in.check(false); err != nil {
			return err
		}
		rec, err := r.loadAgent(ctx, in.Agent)
		if err != nil {
			return err
		}
		if in.Name != nil {
			rec.Name = strings.TrimSpace(*in.Name)
			if r.agentNameTaken(ctx, rec.Name, rec.ID) {
				return errAgentNameTaken
			}
		}
		if in.Description != nil {
			rec.Description = strings.TrimSpace(*in.Description)
		}
		rec.UpdatedAt = r.now()
		out = agentView(rec)
		return r.db.WithContext(ctx).Save(&rec).Error
	}, in.Agent)
	return out, err
}

// AgentDelete is Agent.delete.
func (r *Runtime) AgentDelete(ctx context.Context, p Principal, id string) error {
	return r.run(ctx, p, "Agent.delete", func(a *act) error {
		if _, err := r.loadAgent(ctx, id); err != nil {
			return err
		}
		if err := r.agentDeletable(ctx, id); err != nil {
			return err
		}
		return r.db.WithContext(ctx).Delete(&models.Agent{}, "id = ?", id).Error
	}, id)
}

// agentSessionsCounted bounds the count of an agent's sessions that its
// page and Agent.delete's refusal give: the Agent page shows it on every view.
const agentSessionsCounted = 1000

// agentDeletable refuses an agent that has run: sessions keep the record of
// what ran, so an agent with sessions stays.
func (r *Runtime) agentDeletable(ctx context.Context, id string) error {
	var n int64
	some := r.db.WithContext(ctx).Model(&models.Session{}).Select("1").Where("agent_id = ?", id).Limit(agentSessionsCounted)
	if err := r.db.WithContext(ctx).Table("(?) AS agent_sessions", some).Count(&n).Error; err != nil {
		return fmt.Errorf("runtime: count sessions of agent %s: %w", id, err)
	}
	howMany := countOf(int(n), "session")
	if n >= agentSessionsCounted {
		howMany += " or more"
	}
	if n > 0 {
		return conflict("agent_has_sessions", "the agent has "+howMany+": their records keep it; delete is for agents that never ran")
	}
	return nil
}

// AgentDeleteRefusal says why Agent.delete would refuse this agent now, or ""
// if it would not, so a page can disable its Delete button and say why
// before anyone clicks. Like PendingApprovals it is not an Action: it runs on
// a page view and reveals nothing the viewer cannot already read.
func (r *Runtime) AgentDeleteRefusal(ctx context.Context, p Principal, id string) string {
	if !p.Can("Agent.delete") {
		return "deleting an agent needs the Agent.delete permission"
	}
	return refusal(r.agentDeletable(ctx, id))
}
