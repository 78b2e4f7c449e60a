package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/subako/subako/models"
)

// sandboxSkills is the Manager's Config.Skills: the session's granted skills
// as grant name → host folder, mounted read-only at /skills/<name>.
func (r *Runtime) sandboxSkills(ctx context.Context, sessionID string) (map[string]string, error) {
	set := r.sandboxes()
	if set == nil {
		return nil, errNoSandboxes
	}
	var s models.Session
	if err := r.db.WithContext(ctx).First(&s, "id = ?", sessionID).Error; err != nil {
		return nil, fmt.Errorf("runtime: session %s: %w", sessionID, err)
	}
	v, err := r.loadVersion(ctx, s.VersionID)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, g := range versionView(v).Parsed().Skills {
		rec, err := r.loadSkill(ctx, g.Skill)
		if err != nil {
			return nil, fmt.Errorf("runtime: skill %s of grant %s: %w", g.Skill, g.Name, err)
		}
		if out[g.Name], err = r.unpackSkill(ctx, set, rec); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// unpackSkill writes a skill's files under SkillsDir/<skill id> once: a
// skill's files never change (there is no Skill.update, and a granted skill
// cannot be deleted), so every session granting it shares the folder. Files
// keep their mode, so a skill's scripts run; everything is readable by the
// sandbox uid and owned by the server, and mounted read-only.
func (r *Runtime) unpackSkill(ctx context.Context, set *sandboxSet, rec models.Skill) (string, error) {
	dir := filepath.Join(set.skillsDir, rec.ID)
	set.skillsMu.Lock()
	defer set.skillsMu.Unlock()
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return dir, nil
	}
	var files []models.SkillFile
	if err := r.db.WithContext(ctx).Where("skill_id = ?", rec.ID).Order("path").Find(&files).Error; err != nil {
		return "", fmt.Errorf("runtime: read the files of skill %s: %w", rec.Name, err)
	}
	// Written beside the final folder and renamed, so a machine never sees
	// half a skill, even after a crash mid-way.
	tmp, err := os.MkdirTemp(set.skillsDir, unpackPrefix)
	if err != nil {
		return "", fmt.Errorf("runtime: unpack skill %s: %w", rec.Name, err)
	}
	if err := writeSkillFiles(tmp, files); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("runtime: unpack skill %s: %w", rec.Name, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("runtime: unpack skill %s: %w", rec.Name, err)
	}
	return dir, nil
}

const unpackPrefix = ".unpack-"

func writeSkillFiles(root string, files []models.SkillFile) error {
	if err := os.Chmod(root, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		// Paths were checked when the skill was created; checked again
		// because this writes as the server.
		if !filepath.IsLocal(filepath.FromSlash(f.Path)) {
			return fmt.Errorf("path %q is not inside the skill", f.Path)
		}
		p := filepath.Join(root, filepath.FromSlash(f.Path))
		if err := mkdirAllMode(root, filepath.Dir(p)); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if f.Mode&0o111 != 0 {
			mode = 0o755
		}
		if err := os.WriteFile(p, f.Content, mode); err != nil {
			return err
		}
		if err := os.Chmod(p, mode); err != nil { // WriteFile's mode passes through the umask
			return err
		}
	}
	return nil
}

// mkdirAllMode creates dir's missing folders below root with mode 0755,
// whatever the umask.
func mkdirAllMode(root, dir string) error {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." {
		return err
	}
	p := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, part)
		if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		if err := os.Chmod(p, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// prepareSkillsDir creates SkillsDir and removes unpackings a crash left.
func prepareSkillsDir(dir string) error {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return fmt.Errorf("runtime: create %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("runtime: list %s: %w", dir, err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), unpackPrefix) {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
	return nil
}
