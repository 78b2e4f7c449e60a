package web_test

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime"
)

// skillJSON is a skill as Skill.get and Skill.list answer.
type skillJSON struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	FileCount   int    `json:"file_count"`
	Size        int64  `json:"size"`
	Files       []struct {
		Path string `json:"path"`
		Size int64  `json:"size"`
		Mode string `json:"mode"`
	} `json:"files"`
}

func (s skillJSON) modes() map[string]string {
	out := map[string]string{}
	for _, f := range s.Files {
		out[f.Path] = f.Mode
	}
	return out
}

// skillEntry is one entry of a zip a test builds; a name ending in / is a folder.
type skillEntry struct {
	name string
	body string
	mode fs.FileMode
}

func skillZip(t *testing.T, entries ...skillEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, en := range entries {
		h := &zip.FileHeader{Name: en.name, Method: zip.Deflate}
		switch {
		case strings.HasSuffix(en.name, "/"):
			h.SetMode(fs.ModeDir | 0o755)
		case en.mode == 0:
			h.SetMode(0o644)
		default:
			h.SetMode(en.mode)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatalf("zip %s: %v", en.name, err)
		}
		io.WriteString(w, en.body)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// uploadSkill posts the console's create form as a browser does: multipart,
// with the zip as a file.
func (c *client) uploadSkill(name, desc string, zipData []byte) (*http.Response, string) {
	c.e.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("name", name)
	mw.WriteField("description", desc)
	if zipData != nil {
		fw, _ := mw.CreateFormFile("zip", "skill.zip")
		fw.Write(zipData)
	}
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, c.e.srv.URL+"/skills", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := c.http.Do(req)
	if err != nil {
		c.e.t.Fatalf("upload skill: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (e *env) skillCount(tok string) int {
	e.t.Helper()
	var list []skillJSON
	if status := e.api(tok, "GET", "/skills", nil, &list); status != 200 {
		e.t.Fatalf("Skill.list answered %d", status)
	}
	return len(list)
}

func TestSkillCreateGetReadList(t *testing.T) {
	e := newEnv(t)
	tok := e.owner().token()
	binary := []byte{0x89, 'P', 'N', 'G', 0, 0xff, 0xfe, '\n'}
	text, script := "# Refunds\nUp to $100 <without> asking.\n", "#!/bin/sh\necho ok\n"
	in := map[string]any{"name": "refund-policy", "description": "How refunds work", "files": []map[string]any{
		{"path": "SKILL.md", "content": text},
		{"path": "scripts/check.sh", "content": script, "mode": "0755"},
		{"path": "assets/logo.png", "content": base64.StdEncoding.EncodeToString(binary), "encoding": "base64"},
	}}
	var created skillJSON
	if status := e.api(tok, "POST", "/skills", in, &created); status != http.StatusCreated {
		t.Fatalf("Skill.create answered %d %+v", status, created)
	}
	if !strings.HasPrefix(created.ID, "sk_") || created.FileCount != 3 || created.Size != int64(len(text)+len(script)+len(binary)) {
		t.Fatalf("created %+v", created)
	}
	for _, ref := range []string{created.ID, "refund-policy"} {
		var got skillJSON
		if status := e.api(tok, "GET", "/skills/"+ref, nil, &got); status != 200 || len(got.Files) != 3 {
			t.Fatalf("Skill.get %s: %d %+v", ref, status, got)
		}
		want := map[string]string{"SKILL.md": "0644", "scripts/check.sh": "0755", "assets/logo.png": "0644"}
		for p, m := range want {
			if got.modes()[p] != m {
				t.Errorf("Skill.get %s: %s has mode %q, want %s", ref, p, got.modes()[p], m)
			}
		}
	}
	f, err := e.rt.SkillReadFile(t.Context(), runtime.System, "refund-policy", "assets/logo.png")
	if err != nil || !bytes.Equal(f.Content, binary) || f.Size != int64(len(binary)) {
		t.Fatalf("SkillReadFile: %v %q", err, f.Content)
	}
	if _, err := e.rt.SkillReadFile(t.Context(), runtime.System, "refund-policy", "nope.md"); err == nil {
		t.Fatal("reading a missing file succeeded")
	}
	var list []skillJSON
	e.api(tok, "GET", "/skills", nil, &list)
	if len(list) != 1 || list[0].Name != "refund-policy" || list[0].FileCount != 3 || list[0].Files != nil {
		t.Fatalf("Skill.list: %+v", list)
	}
}

func TestSkillZipUploadThroughConsole(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	if _, page := owner.get("/skills"); !strings.Contains(page, `data-testid="empty"`) || !strings.Contains(page, `data-testid="skill-zip"`) {
		t.Fatal("the empty Skills page lacks its empty state or the upload form")
	}
	data := skillZip(t,
		skillEntry{name: "refund-policy/"},
		skillEntry{name: "refund-policy/SKILL.md", body: "# Refunds\nUse <b>care</b>.\n"},
		skillEntry{name: "refund-policy/scripts/"},
		skillEntry{name: "refund-policy/scripts/run.sh", body: "#!/bin/sh\necho refund\n", mode: 0o755},
		skillEntry{name: "refund-policy/data.bin", body: "\xff\xfe\x00\x01"},
	)
	resp, _ := owner.uploadSkill("refund-policy", "Refunds", data)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/skills/sk_") {
		t.Fatalf("upload answered %d %q", resp.StatusCode, loc)
	}
	_, page := owner.get(loc)
	if !strings.Contains(page, "Skill refund-policy created with 3 files.") || strings.Count(page, `data-testid="skill-file-row"`) != 3 {
		t.Fatalf("the skill page does not list its files:\n%s", page)
	}
	var got skillJSON
	e.api(owner.token(), "GET", "/skills/refund-policy", nil, &got)
	want := map[string]string{"SKILL.md": "0644", "scripts/run.sh": "0755", "data.bin": "0644"}
	if len(got.Files) != len(want) {
		t.Fatalf("the wrapping folder was not stripped or folders were kept: %+v", got.Files)
	}
	for p, m := range want {
		if got.modes()[p] != m {
			t.Errorf("%s: mode %q, want %s", p, got.modes()[p], m)
		}
	}
	if !strings.Contains(page, `href="/skills/refund-policy/files/scripts/run.sh"`) || !strings.Contains(page, "data-confirm=") {
		t.Fatal("the skill page lacks file links or a confirmed delete")
	}
	_, page = owner.get("/skills/refund-policy/files/SKILL.md")
	if !strings.Contains(page, "# Refunds\nUse &lt;b&gt;care&lt;/b&gt;.") {
		t.Fatalf("a text file is not shown as escaped text:\n%s", page)
	}
	_, page = owner.get("/skills/refund-policy/files/data.bin")
	if !strings.Contains(page, "binary, 4 bytes") || strings.Contains(page, "skill-file-text") {
		t.Fatal("a binary file is not shown as binary")
	}
	if resp, _ := owner.get("/skills/refund-policy/files/missing.md"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a missing file answered %d", resp.StatusCode)
	}
}

func TestSkillPathRulesAPI(t *testing.T) {
	e := newEnv(t)
	tok := e.owner().token()
	file := func(path string) map[string]any { return map[string]any{"path": path, "content": "x"} }
	big := strings.Repeat("a", runtime.MaxSkillFileBytes)
	var many, heavy []map[string]any
	for i := range runtime.MaxSkillFiles + 1 {
		many = append(many, file("f"+strings.Repeat("x", i%7)+"/"+string(rune('a'+i%26))+strconv.Itoa(i)))
	}
	for i := range 11 {
		heavy = append(heavy, map[string]any{"path": "big" + strconv.Itoa(i), "content": big})
	}
	cases := []struct {
		name        string
		files       []map[string]any
		code, field string
		detail      string
	}{
		{"dotdot", []map[string]any{file("ok.md"), file("a/../../etc/passwd")}, "path_dotdot", "files[1].path", `"a/../../etc/passwd"`},
		{"absolute", []map[string]any{file("/etc/passwd")}, "path_absolute", "files[0].path", `"/etc/passwd"`},
		{"backslash", []map[string]any{file(`scripts\run.sh`)}, "path_backslash", "files[0].path", `scripts\\run.sh`},
		// Refused with every body's NUL before Skill.create reads it.
		{"nul", []map[string]any{file("a\x00b")}, "invalid_text", "files[0].path", "NUL"},
		{"empty segment", []map[string]any{file("a//b")}, "path_empty_segment", "files[0].path", `"a//b"`},
		{"trailing slash", []map[string]any{file("a/")}, "path_empty_segment", "files[0].path", `"a/"`},
		{"empty", []map[string]any{file("")}, "path_required", "files[0].path", "required"},
		{"too long", []map[string]any{file(strings.Repeat("p", 256))}, "path_too_long", "files[0].path", "at most 255 bytes"},
		{"duplicate", []map[string]any{file("a.md"), file("a.md")}, "path_duplicate", "files[1].path", `"a.md" is given twice`},
		{"file and folder", []map[string]any{file("a"), file("a/b")}, "path_conflict", "files[1]", `"a" is a file and also the folder`},
		{"file over 1 MiB", []map[string]any{{"path": "big.txt", "content": big + "!"}}, "file_too_large", "files[0]", "at most 1 MiB"},
		{"skill over 10 MiB", heavy, "skill_too_large", "files", "at most 10 MiB"},
		{"over 1000 files", many, "too_many_files", "files", "at most 1000 files"},
		{"no files", nil, "files_required", "files", "at least one file"},
		{"bad mode", []map[string]any{{"path": "a", "content": "x", "mode": "0777"}}, "mode_invalid", "files[0].mode", "0644 or 0755"},
		{"bad encoding", []map[string]any{{"path": "a", "content": "x", "encoding": "latin1"}}, "encoding_invalid", "files[0].encoding", "utf-8 or base64"},
		{"bad base64", []map[string]any{{"path": "a", "content": "!!", "encoding": "base64"}}, "content_invalid_base64", "files[0].content", "not valid base64"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p problem
			status := e.api(tok, "POST", "/skills", map[string]any{"name": "s", "files": c.files}, &p)
			if status != 422 || p.Code != c.code || p.Field != c.field || !strings.Contains(p.Detail, c.detail) {
				t.Fatalf("%d %+v; want 422 %s %s %q", status, p, c.code, c.field, c.detail)
			}
		})
	}
	if n := e.skillCount(tok); n != 0 {
		t.Fatalf("rejected creates left %d skills behind", n)
	}
	var rows int64
	e.rt.DB().Model(&models.SkillFile{}).Count(&rows)
	if rows != 0 {
		t.Fatalf("rejected creates left %d files behind", rows)
	}
}

func TestSkillZipRulesThroughConsole(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	ok := skillEntry{name: "SKILL.md", body: "hi"}
	var over []skillEntry
	for i := range 11 {
		over = append(over, skillEntry{name: "f" + strconv.Itoa(i), body: strings.Repeat("\x00", runtime.MaxSkillFileBytes)})
	}
	cases := []struct {
		name string
		zip  []byte
		want string
	}{
		{"symlink", skillZip(t, ok, skillEntry{name: "escape", body: "/etc/passwd", mode: fs.ModeSymlink | 0o777}), `links are not allowed: path &#34;escape&#34;`},
		{"dotdot", skillZip(t, ok, skillEntry{name: "../evil.sh", body: "x"}), `path &#34;../evil.sh&#34; has a .. segment`},
		{"absolute", skillZip(t, ok, skillEntry{name: "/etc/cron.d/x", body: "x"}), `path &#34;/etc/cron.d/x&#34; is absolute`},
		{"backslash", skillZip(t, ok, skillEntry{name: `a\b.txt`, body: "x"}), `contains a backslash`},
		{"duplicate", skillZip(t, ok, skillEntry{name: "SKILL.md", body: "again"}), `path &#34;SKILL.md&#34; appears twice`},
		{"named pipe", skillZip(t, ok, skillEntry{name: "fifo", mode: fs.ModeNamedPipe | 0o644}), `only regular files are allowed: path &#34;fifo&#34;`},
		{"not UTF-8", skillZip(t, ok, skillEntry{name: "caf\xe9.txt", body: "x"}), `is not valid UTF-8`},
		{"file and folder", skillZip(t, ok, skillEntry{name: "SKILL.md/x", body: "x"}), `path &#34;SKILL.md&#34; is a file and also the folder`},
		{"file over 1 MiB", skillZip(t, ok, skillEntry{name: "big", body: strings.Repeat("a", runtime.MaxSkillFileBytes+1)}), "at most 1 MiB"},
		{"skill over 10 MiB", skillZip(t, over...), "at most 10 MiB"},
		{"only folders", skillZip(t, skillEntry{name: "a/"}), "holds no files"},
		{"not a zip", []byte("plain text"), "not a readable .zip"},
		{"no file chosen", nil, "choose a .zip file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, page := owner.uploadSkill("my-skill", "", c.zip)
			if resp.StatusCode != 422 || !strings.Contains(page, `data-testid="skill-zip-error"`) || !strings.Contains(page, c.want) {
				t.Fatalf("answered %d; want the zip field to say %q:\n%s", resp.StatusCode, c.want, page)
			}
			if !strings.Contains(page, `value="my-skill"`) {
				t.Fatal("the form lost what was typed")
			}
		})
	}
	if n := e.skillCount(owner.token()); n != 0 {
		t.Fatalf("rejected uploads left %d skills behind", n)
	}
}

func TestSkillNameRules(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	files := []map[string]any{{"path": "SKILL.md", "content": "x"}}
	cases := []struct{ name, code string }{
		{"", "name_required"},
		{"Refunds", "name_invalid"},
		{"refund_policy", "name_invalid"},
		{strings.Repeat("a", 33), "name_too_long"},
		{"parent", "name_reserved"},
	}
	for _, c := range cases {
		t.Run(c.code+" "+c.name, func(t *testing.T) {
			var p problem
			if status := e.api(tok, "POST", "/skills", map[string]any{"name": c.name, "files": files}, &p); status != 422 || p.Code != c.code || p.Field != "name" {
				t.Fatalf("%d %+v", status, p)
			}
		})
	}
	if status := e.api(tok, "POST", "/skills", map[string]any{"name": "taken", "files": files}, nil); status != 201 {
		t.Fatalf("first create answered %d", status)
	}
	var p problem
	if status := e.api(tok, "POST", "/skills", map[string]any{"name": "taken", "files": files}, &p); status != 409 || p.Code != "name_taken" || p.Field != "name" {
		t.Fatalf("duplicate name: %d %+v", status, p)
	}
	resp, page := owner.uploadSkill("taken", "", skillZip(t, skillEntry{name: "a.md", body: "x"}))
	if resp.StatusCode != 409 || !strings.Contains(page, `data-testid="skill-name-error"`) || !strings.Contains(page, "another skill already has this name") {
		t.Fatalf("console duplicate name answered %d", resp.StatusCode)
	}
	if n := e.skillCount(tok); n != 1 {
		t.Fatalf("%d skills after one good create", n)
	}
}

func TestViewerCannotCreateOrDeleteSkills(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	viewer := e.person(owner, "viewer@example.com", "viewer")
	vtok := viewer.token()
	files := []map[string]any{{"path": "SKILL.md", "content": "x"}}
	var p problem
	if status := e.api(vtok, "POST", "/skills", map[string]any{"name": "nope", "files": files}, &p); status != 403 ||
		p.Code != "permission_denied" || p.MissingPermission != "Skill.create" {
		t.Fatalf("viewer Skill.create: %d %+v", status, p)
	}
	if resp, _ := viewer.uploadSkill("nope", "", skillZip(t, skillEntry{name: "a", body: "x"})); resp.StatusCode != 403 {
		t.Fatalf("viewer console upload answered %d", resp.StatusCode)
	}
	if _, page := viewer.get("/skills"); strings.Contains(page, `data-testid="skill-zip"`) {
		t.Fatal("the viewer is shown the upload form")
	}
	e.api(owner.token(), "POST", "/skills", map[string]any{"name": "kept", "files": files}, nil)
	if status := e.api(vtok, "DELETE", "/skills/kept", nil, &p); status != 403 || p.MissingPermission != "Skill.delete" {
		t.Fatalf("viewer Skill.delete: %d %+v", status, p)
	}
	if _, page := viewer.get("/skills/kept"); strings.Contains(page, `data-testid="skill-delete"`) {
		t.Fatal("the viewer is shown the delete button")
	}
	if n := e.skillCount(vtok); n != 1 {
		t.Fatalf("viewer sees %d skills, want 1", n)
	}
}

func TestSkillDeleteRefusedWhileGranted(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	files := []map[string]any{{"path": "SKILL.md", "content": "x"}}
	for _, name := range []string{"policy", "refund-policy"} {
		if status := e.api(tok, "POST", "/skills", map[string]any{"name": name, "files": files}, nil); status != 201 {
			t.Fatalf("create %s answered %d", name, status)
		}
	}
	var agent struct{ ID string }
	e.api(tok, "POST", "/agents", map[string]any{"name": "Support"}, &agent)
	now := time.Now().UTC()
	v := models.Version{ID: "ver_skilltest", AgentID: agent.ID, Number: 1, State: "published", CreatedAt: now, UpdatedAt: now,
		Config: `{"skills":[{"name":"refunds","skill":"refund-policy"}]}`}
	if err := e.rt.DB().Create(&v).Error; err != nil {
		t.Fatal(err)
	}
	var p problem
	if status := e.api(tok, "DELETE", "/skills/refund-policy", nil, &p); status != 409 || p.Code != "skill_in_use" ||
		!strings.Contains(p.Detail, "Support version 1") {
		t.Fatalf("deleting a granted skill: %d %+v", status, p)
	}
	resp, _ := owner.post("/skills/refund-policy/delete", url.Values{})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("console delete of a granted skill answered %d", resp.StatusCode)
	}
	if _, page := owner.get(resp.Header.Get("Location")); !strings.Contains(page, "is granted by Support version 1") {
		t.Fatal("the skill page does not say why it was not deleted")
	}
	// "policy" is inside "refund-policy" as text but granted by no version.
	if status := e.api(tok, "DELETE", "/skills/policy", nil, &p); status != http.StatusNoContent {
		t.Fatalf("deleting an unused skill: %d %+v", status, p)
	}
	if status := e.api(tok, "GET", "/skills/policy", nil, &p); status != 404 {
		t.Fatalf("a deleted skill answered %d", status)
	}
	e.rt.DB().Delete(&models.Version{}, "id = ?", v.ID)
	resp, _ = owner.post("/skills/refund-policy/delete", url.Values{})
	if _, page := owner.get(resp.Header.Get("Location")); resp.Header.Get("Location") != "/skills" || !strings.Contains(page, "Skill deleted.") {
		t.Fatalf("console delete went to %q", resp.Header.Get("Location"))
	}
	var rows int64
	e.rt.DB().Model(&models.SkillFile{}).Count(&rows)
	if n := e.skillCount(tok); n != 0 || rows != 0 {
		t.Fatalf("after deleting both: %d skills, %d files", n, rows)
	}
}
