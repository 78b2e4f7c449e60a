package runtime

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/tools"
)

// runSkill answers skill__<name>__read: the file list, or one file.
func (r *Runtime) runSkill(ctx context.Context, t offered, input json.RawMessage) (json.RawMessage, error) {
	var in struct {
		Path string `json:"path"`
	}
	_ = json.Unmarshal(input, &in)
	rec, err := r.hotSkill(ctx, t.Skill) // from memory on the hot path (hotpath.go)
	if err != nil {
		return nil, fmt.Errorf("skill %s is no longer in the library", t.Skill)
	}
	if in.Path == "" {
		files, err := r.skillFiles(ctx, rec.ID)
		if err != nil {
			return nil, err
		}
		return json.Marshal(map[string]any{"skill": rec.Name, "description": rec.Description, "files": files})
	}
	p := strings.TrimPrefix(in.Path, "./")
	if path.IsAbs(p) || p != path.Clean(p) || p == ".." || strings.HasPrefix(p, "../") {
		return nil, fmt.Errorf("path %q must be relative to the skill, without .. or a leading /", in.Path)
	}
	f, err := r.hotSkillFile(ctx, rec.ID, p)
	if err != nil {
		return nil, fmt.Errorf("skill %s has no file %q: read without a path to list its files", rec.Name, p)
	}
	out := map[string]any{"path": f.Path, "size": f.Size}
	if utf8.Valid(f.Content) {
		out["content"] = string(f.Content)
	} else {
		out["content"], out["encoding"] = base64.StdEncoding.EncodeToString(f.Content), "base64"
	}
	return json.Marshal(out)
}

// runBuiltin runs Subako's own tools: session__rename here; ask_user waits
// for whoever answers it (the session's client, or an operator).
func (r *Runtime) runBuiltin(ctx context.Context, s models.Session, t offered, input json.RawMessage) (json.RawMessage, error) {
	switch t.Grant + "/" + t.Tool.Tool {
	case tools.BuiltinAskUser + "/" + tools.AskUserTool:
		return nil, errWaitClient
	case tools.BuiltinSession + "/" + tools.SessionTool:
		var in struct {
			Title string `json:"title"`
		}
		_ = json.Unmarshal(input, &in)
		title := strings.TrimSpace(in.Title)
		if err := r.db.WithContext(ctx).Model(&models.Session{}).Where("id = ?", s.ID).Update("title", title).Error; err != nil {
			return nil, err
		}
		r.publish(Event{Kind: "session", ID: s.ID, SessionID: s.ID, State: s.State})
		return json.Marshal(map[string]string{"title": title})
	}
	return nil, fmt.Errorf("no built-in tool %s", t.Name)
}
