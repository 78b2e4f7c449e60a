package handlers

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

// APISkillList is Skill.list.
func (h *Handlers) APISkillList(c echo.Context) error {
	out, err := h.RT.SkillList(ctx(c), principal(c))
	return answer(c, http.StatusOK, out, err)
}

// APISkillCreate is Skill.create with the files in the JSON body.
func (h *Handlers) APISkillCreate(c echo.Context) error {
	var in runtime.SkillInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	out, err := h.RT.SkillCreate(ctx(c), principal(c), in)
	return answer(c, http.StatusCreated, out, err)
}

// APISkillGet is Skill.get, by id or name, with the file list.
func (h *Handlers) APISkillGet(c echo.Context) error {
	out, err := h.RT.SkillGet(ctx(c), principal(c), c.Param("skill"))
	return answer(c, http.StatusOK, out, err)
}

// APISkillDelete is Skill.delete.
func (h *Handlers) APISkillDelete(c echo.Context) error {
	return answerEmpty(c, h.RT.SkillDelete(ctx(c), principal(c), c.Param("skill")))
}

func (h *Handlers) skillsPage(c echo.Context, status int, f pages.SkillForm) error {
	p := principal(c)
	skills, err := h.RT.SkillList(ctx(c), p)
	if err != nil {
		return err
	}
	rows := make([]pages.SkillRow, 0, len(skills))
	for _, s := range skills {
		rows = append(rows, pages.SkillRow{ID: s.ID, Name: s.Name, Description: s.Description, Files: s.FileCount,
			Size: skillSize(s.Size), Created: isoTime(s.CreatedAt)})
	}
	return render(c, status, pages.SkillsPage(h.shell(c, "Skills", "skills"), rows, f, p.Can("Skill.create")))
}

// Skills lists skills with a form to upload one.
func (h *Handlers) Skills(c echo.Context) error {
	return h.skillsPage(c, http.StatusOK, pages.SkillForm{})
}

// CreateSkill creates a skill from an uploaded .zip of its folder.
func (h *Handlers) CreateSkill(c echo.Context) error {
	in := runtime.SkillZipInput{Name: c.FormValue("name"), Description: c.FormValue("description")}
	zip, err := uploadedZip(c)
	if err != nil {
		return err
	}
	in.Zip = zip
	s, err := h.RT.SkillCreateZip(ctx(c), principal(c), in)
	if e, ok := formError(err); ok {
		return h.skillsPage(c, statusOf(e.Kind), skillFormErrors(in, e))
	}
	if err != nil {
		return err
	}
	h.flash(c, "ok", fmt.Sprintf("Skill %s created with %d files.", s.Name, s.FileCount))
	return redirect(c, "/skills/"+s.ID)
}

// uploadedZip reads the form's zip file, at most one byte past the runtime's
// cap so the runtime can say by how much it is over. No file is not an error
// here: the runtime names the missing field.
func uploadedZip(c echo.Context) ([]byte, error) {
	fh, err := c.FormFile("zip")
	if err != nil {
		return nil, nil
	}
	f, err := fh.Open()
	if err != nil {
		return nil, fmt.Errorf("handlers: open uploaded zip: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, runtime.MaxSkillZipBytes+1))
	if err != nil {
		return nil, fmt.Errorf("handlers: read uploaded zip: %w", err)
	}
	return b, nil
}

// skillFormErrors puts each problem under its field; a field with several
// (a zip with many bad paths) lists them all.
func skillFormErrors(in runtime.SkillZipInput, e *runtime.Error) pages.SkillForm {
	f := pages.SkillForm{Name: in.Name, Description: in.Description, Errors: map[string]string{}}
	for _, fe := range e.Fields {
		if prev := f.Errors[fe.Field]; prev != "" {
			f.Errors[fe.Field] = prev + "; " + fe.Detail
		} else {
			f.Errors[fe.Field] = fe.Detail
		}
	}
	if len(f.Errors) == 0 {
		f.Error = e.Error()
	}
	return f
}

// Skill shows one skill and its files.
func (h *Handlers) Skill(c echo.Context) error {
	p := principal(c)
	s, err := h.RT.SkillGet(ctx(c), p, c.Param("skill"))
	if err != nil {
		return err
	}
	d := pages.SkillDetail{ID: s.ID, Name: s.Name, Description: s.Description, Size: skillSize(s.Size),
		Created: isoTime(s.CreatedAt), CanDelete: p.Can("Skill.delete"), DeleteRefusal: h.RT.SkillDeleteRefusal(ctx(c), p, s.ID)}
	for _, f := range s.Files {
		d.Files = append(d.Files, pages.SkillFileRow{Path: f.Path, Href: skillFileHref(s.Name, f.Path),
			Size: skillSize(f.Size), Executable: f.Mode == runtime.SkillModeExec})
	}
	return render(c, http.StatusOK, pages.SkillPage(h.shell(c, s.Name, "skills"), d))
}

// skillFileHref names the skill by name, so the file's page can show which
// skill it belongs to without asking the runtime twice.
func skillFileHref(skill, path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "/skills/" + skill + "/files/" + strings.Join(segs, "/")
}

// SkillFile shows one file of a skill: as text when it is UTF-8, else its size.
func (h *Handlers) SkillFile(c echo.Context) error {
	ref := c.Param("skill")
	// The path comes from the decoded URL, not echo's wildcard, which keeps
	// percent-escapes when the request had any.
	path, ok := strings.CutPrefix(c.Request().URL.Path, "/skills/"+ref+"/files/")
	if !ok {
		return echo.NewHTTPError(http.StatusNotFound, "no such file")
	}
	f, err := h.RT.SkillReadFile(ctx(c), principal(c), ref, path)
	if err != nil {
		return err
	}
	v := pages.SkillFilePage{Skill: ref, Path: f.Path, Size: skillSize(f.Size),
		Mode: fmt.Sprintf("%04o", int(f.Mode)), Bytes: f.Size}
	if utf8.Valid(f.Content) {
		v.Text = string(f.Content)
	} else {
		v.Binary = true
	}
	return render(c, http.StatusOK, pages.SkillFileView(h.shell(c, f.Path, "skills"), v))
}

// DeleteSkill deletes a skill; one still granted by a version stays, and the
// refusal is shown on its page.
func (h *Handlers) DeleteSkill(c echo.Context) error {
	ref := c.Param("skill")
	if err := h.RT.SkillDelete(ctx(c), principal(c), ref); err != nil {
		if e, ok := runtime.AsError(err); ok && e.Kind == runtime.KindNotFound {
			return err
		}
		return h.flashError(c, err, "/skills/"+ref)
	}
	h.flash(c, "ok", "Skill deleted.")
	return redirect(c, "/skills")
}

// skillSize writes a byte count the way a person reads it.
func skillSize(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
