package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/tools"
)

// Limits of one skill; every error that enforces one names it.
const (
	MaxSkillFiles     = 1000
	MaxSkillFileBytes = 1 << 20  // 1 MiB per file
	MaxSkillBytes     = 10 << 20 // 10 MiB per skill
	MaxSkillPathBytes = 255
	// MaxSkillZipBytes bounds an uploaded .zip: 10 MiB stored plus a generous
	// central directory for 1,000 long names.
	MaxSkillZipBytes    = 16 << 20
	maxSkillDescription = 2000
)

// File modes a skill file may have. The executable bit is kept so a skill's
// scripts run when a sandbox mounts it at /skills/<name>.
const (
	SkillModeFile SkillMode = 0o644
	SkillModeExec SkillMode = 0o755
	badSkillMode  SkillMode = -1
)

// SkillMode is a skill file's mode, 0644 or 0755. JSON writes it as the octal
// string "0755"; it reads that, "755", or the numbers 493 and 755 (420 and 644
// likewise), because a JSON number cannot carry a leading 0 and people type
// the octal digits.
type SkillMode int

// MarshalJSON writes the mode as a person reads it: "0644" or "0755".
func (m SkillMode) MarshalJSON() ([]byte, error) { return json.Marshal(fmt.Sprintf("%04o", int(m))) }

// UnmarshalJSON never fails: an unknown value becomes badSkillMode, so the verb can
// name the file's mode field instead of the decoder failing without a path.
func (m *SkillMode) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "null" || s == "" {
		*m = 0
		return nil
	}
	*m = badSkillMode
	switch strings.TrimPrefix(strings.TrimPrefix(s, "0o"), "0") {
	case "644", "420":
		*m = SkillModeFile
	case "755", "493":
		*m = SkillModeExec
	}
	return nil
}

// SkillView is a skill as interfaces show it; Files is set by Skill.get only.
type SkillView struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	FileCount   int             `json:"file_count"`
	Size        int64           `json:"size"`
	CreatedBy   string          `json:"created_by"`
	CreatedAt   time.Time       `json:"created_at"`
	Files       []SkillFileView `json:"files,omitempty"`
}

// SkillFileView is one file of a skill. Content is filled by SkillReadFile only
// and never goes into JSON: a listing must stay small.
type SkillFileView struct {
	Path    string    `json:"path"`
	Size    int64     `json:"size"`
	Mode    SkillMode `json:"mode"`
	Content []byte    `json:"-"`
}

func skillView(s models.Skill) SkillView {
	return SkillView{ID: s.ID, Name: s.Name, Description: s.Description, FileCount: s.FileCount, Size: s.TotalBytes,
		CreatedBy: s.CreatedBy, CreatedAt: s.CreatedAt}
}

// SkillFileInput is one file of Skill.create. Encoding is "utf-8" (the
// default) or "base64"; Mode is 0644 (the default) or 0755.
type SkillFileInput struct {
	Path     string    `json:"path"`
	Content  string    `json:"content"`
	Encoding string    `json:"encoding,omitempty"`
	Mode     SkillMode `json:"mode,omitempty"`
}

// SkillInput is Skill.create as the API takes it.
type SkillInput struct {
	Name        string           `json:"name"`
	Description string           `json:"description"`
	Files       []SkillFileInput `json:"files"`
}

// SkillZipInput is Skill.create from an uploaded .zip of the skill's folder.
type SkillZipInput struct {
	Name, Description string
	Zip               []byte
}

// SkillCreate is Skill.create from files given one by one (the API).
func (r *Runtime) SkillCreate(ctx context.Context, p Principal, in SkillInput) (SkillView, error) {
	var out SkillView
	err := r.run(ctx, p, "Skill.create", func(a *act) error {
		ps := &skillProblems{}
		name, desc := checkSkillMeta(ps, in.Name, in.Description)
		files := in.apiFiles(ps)
		if err := ps.err(); err != nil {
			return err
		}
		return r.storeSkill(ctx, p, a, name, desc, files, &out)
	})
	return out, err
}

// SkillCreateZip is Skill.create from a .zip of the skill's folder (the console).
func (r *Runtime) SkillCreateZip(ctx context.Context, p Principal, in SkillZipInput) (SkillView, error) {
	var out SkillView
	err := r.run(ctx, p, "Skill.create", func(a *act) error {
		ps := &skillProblems{}
		name, desc := checkSkillMeta(ps, in.Name, in.Description)
		files := skillZipFiles(in.Zip, ps)
		if err := ps.err(); err != nil {
			return err
		}
		return r.storeSkill(ctx, p, a, name, desc, files, &out)
	})
	return out, err
}

func (r *Runtime) skillNameTaken(tx *gorm.DB, name string) bool {
	var n int64
	tx.Model(&models.Skill{}).Where("name = ?", name).Count(&n)
	return n > 0
}

var errSkillNameTaken = &Error{Kind: KindConflict, Code: "name_taken", Title: "Name taken", Field: "name",
	Detail: "another skill already has this name", Fields: []FieldError{{Field: "name", Code: "name_taken",
		Detail: "another skill already has this name"}}}

// storeSkill writes the skill and every file in one transaction, so a failure
// anywhere leaves nothing behind.
func (r *Runtime) storeSkill(ctx context.Context, p Principal, a *act, name, desc string, files []models.SkillFile, out *SkillView) error {
	rec := models.Skill{ID: newID("sk"), Name: name, Description: desc, FileCount: len(files), CreatedBy: p.ID, CreatedAt: r.now()}
	for i := range files {
		files[i].SkillID = rec.ID
		rec.TotalBytes += files[i].Size
	}
	err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if r.skillNameTaken(tx, name) {
			return errSkillNameTaken
		}
		if err := tx.Create(&rec).Error; err != nil {
			return err
		}
		return tx.CreateInBatches(files, 100).Error
	})
	if _, ok := AsError(err); err != nil && !ok {
		// Two creates of one name can race past the check; the UNIQUE
		// constraint stops the second, which should read as the same 409.
		if r.skillNameTaken(r.db.WithContext(ctx), name) {
			return errSkillNameTaken
		}
		return fmt.Errorf("runtime: create skill %s: %w", name, err)
	}
	if err != nil {
		return err
	}
	a.target(rec.ID)
	*out = skillView(rec)
	return nil
}

// SkillList is Skill.list, by name.
func (r *Runtime) SkillList(ctx context.Context, p Principal) ([]SkillView, error) {
	out := []SkillView{}
	err := r.run(ctx, p, "Skill.list", func(a *act) error {
		var recs []models.Skill
		if err := r.db.WithContext(ctx).Order("name").Find(&recs).Error; err != nil {
			return fmt.Errorf("runtime: list skills: %w", err)
		}
		for _, rec := range recs {
			out = append(out, skillView(rec))
		}
		return nil
	})
	return out, err
}

// loadSkill finds a skill by id or by name: ids carry "_" and names cannot.
func (r *Runtime) loadSkill(ctx context.Context, ref string) (models.Skill, error) {
	var rec models.Skill
	err := r.db.WithContext(ctx).Where("id = ? OR name = ?", ref, ref).First(&rec).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return rec, notFound("skill", ref)
	}
	if err != nil {
		return rec, fmt.Errorf("runtime: load skill %s: %w", ref, err)
	}
	return rec, nil
}

func (r *Runtime) skillFiles(ctx context.Context, skillID string) ([]SkillFileView, error) {
	var recs []models.SkillFile
	err := r.db.WithContext(ctx).Select("path", "size", "mode").Where("skill_id = ?", skillID).Order("path").Find(&recs).Error
	if err != nil {
		return nil, fmt.Errorf("runtime: list skill files: %w", err)
	}
	out := make([]SkillFileView, 0, len(recs))
	for _, f := range recs {
		out = append(out, SkillFileView{Path: f.Path, Size: f.Size, Mode: SkillMode(f.Mode)})
	}
	return out, nil
}

// SkillGet is Skill.get, by id or name, with the file list (not the contents).
func (r *Runtime) SkillGet(ctx context.Context, p Principal, ref string) (SkillView, error) {
	var out SkillView
	err := r.run(ctx, p, "Skill.get", func(a *act) error {
		rec, err := r.loadSkill(ctx, ref)
		if err != nil {
			return err
		}
		a.target(rec.ID)
		out = skillView(rec)
		out.Files, err = r.skillFiles(ctx, rec.ID)
		return err
	})
	return out, err
}

// SkillFiles lists a skill's files by path, checked under Skill.get.
func (r *Runtime) SkillFiles(ctx context.Context, p Principal, ref string) ([]SkillFileView, error) {
	v, err := r.SkillGet(ctx, p, ref)
	return v.Files, err
}

// SkillReadFile returns one file of a skill with its content, checked under
// Skill.get: what a skill__<name>__read tool answers with.
func (r *Runtime) SkillReadFile(ctx context.Context, p Principal, ref, path string) (SkillFileView, error) {
	var out SkillFileView
	err := r.run(ctx, p, "Skill.get", func(a *act) error {
		rec, err := r.loadSkill(ctx, ref)
		if err != nil {
			return err
		}
		a.target(rec.ID)
		var f models.SkillFile
		err = r.db.WithContext(ctx).Where("skill_id = ? AND path = ?", rec.ID, path).First(&f).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return notFound("file in skill "+rec.Name, path)
		}
		if err != nil {
			return fmt.Errorf("runtime: read skill file: %w", err)
		}
		out = SkillFileView{Path: f.Path, Size: f.Size, Mode: SkillMode(f.Mode), Content: f.Content}
		return nil
	})
	return out, err
}

// SkillDelete is Skill.delete. A skill that any version grants, draft or
// published, stays: deleting it would break that version's sessions.
func (r *Runtime) SkillDelete(ctx context.Context, p Principal, ref string) error {
	return r.run(ctx, p, "Skill.delete", func(a *act) error {
		rec, err := r.loadSkill(ctx, ref)
		if err != nil {
			return err
		}
		a.target(rec.ID)
		return r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := skillInUse(tx, rec.Name); err != nil {
				return err
			}
			if err := tx.Where("skill_id = ?", rec.ID).Delete(&models.SkillFile{}).Error; err != nil {
				return fmt.Errorf("runtime: delete skill files: %w", err)
			}
			return tx.Delete(&models.Skill{}, "id = ?", rec.ID).Error
		})
	}, ref)
}

// skillUsers names the agent versions whose config grants the skill. LIKE only
// narrows the rows (names hold no LIKE wildcards); decoding the config decides.
func skillUsers(tx *gorm.DB, name string) ([]string, error) {
	var rows []struct {
		Agent  string
		Number int
		Config string
	}
	err := tx.Table("versions").Select("agents.name AS agent, versions.number, versions.config").
		Joins("JOIN agents ON agents.id = versions.agent_id").Where("versions.config LIKE ?", "%"+name+"%").
		Order("agents.name, versions.number").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("runtime: find versions granting skill %s: %w", name, err)
	}
	var out []string
	for _, row := range rows {
		var cfg tools.Config
		if json.Unmarshal([]byte(row.Config), &cfg) != nil {
			continue
		}
		for _, g := range cfg.Skills {
			if g.Skill == name {
				out = append(out, fmt.Sprintf("%s version %d", row.Agent, row.Number))
				break
			}
		}
	}
	return out, nil
}
