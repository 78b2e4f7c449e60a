package runtime

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/tools"
)

// skillProblems collects every broken rule of one input, so a person fixes them
// all at once instead of one per try; the first one leads the error.
type skillProblems struct{ list []FieldError }

func (ps *skillProblems) add(field, code, detail string) {
	if len(ps.list) < 50 {
		ps.list = append(ps.list, FieldError{Field: field, Code: code, Detail: detail})
	}
}

func (ps *skillProblems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	first := ps.list[0]
	return &Error{Kind: KindInvalid, Code: first.Code, Title: "Invalid skill", Detail: first.Detail, Field: first.Field,
		Fields: ps.list}
}

func checkSkillMeta(ps *skillProblems, name, desc string) (string, string) {
	name, desc = strings.TrimSpace(name), strings.TrimSpace(desc)
	for _, fe := range tools.CheckName(tools.KindSkill, name, nil) {
		ps.add(fe.Field, fe.Code, fe.Detail)
	}
	switch n := utf8.RuneCountInString(desc); {
	case !utf8.ValidString(desc) || strings.ContainsRune(desc, 0):
		ps.add("description", "description_invalid", "description must be UTF-8 text without NUL bytes")
	case n > maxSkillDescription:
		ps.add("description", "description_too_long", fmt.Sprintf(
			"description must be at most %d characters; it has %d", maxSkillDescription, n))
	}
	return name, desc
}

// quotePath keeps an error message readable when a path is absurdly long.
func quotePath(p string) string {
	if len(p) > 80 {
		p = p[:80] + "…"
	}
	return strconv.Quote(p)
}

// skillPathProblem returns the first rule a path inside a skill breaks. The rules
// make every path land inside /skills/<name> on any file system, once.
func skillPathProblem(p string, checkLength bool) (code, detail string) {
	switch {
	case p == "":
		return "path_required", "path is required"
	case !utf8.ValidString(p):
		return "path_invalid", fmt.Sprintf("path %s is not valid UTF-8", quotePath(p))
	case strings.ContainsRune(p, 0):
		return "path_nul", fmt.Sprintf("path %s contains a NUL byte", quotePath(p))
	case strings.Contains(p, `\`):
		return "path_backslash", fmt.Sprintf("path %s contains a backslash; separate folders with /", quotePath(p))
	case strings.HasPrefix(p, "/"):
		return "path_absolute", fmt.Sprintf("path %s is absolute; paths are relative to the skill's folder", quotePath(p))
	case checkLength && len(p) > MaxSkillPathBytes:
		return "path_too_long", fmt.Sprintf("path %s is %d bytes; a path may be at most %d bytes",
			quotePath(p), len(p), MaxSkillPathBytes)
	}
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "":
			return "path_empty_segment", fmt.Sprintf("path %s has an empty segment (// or a / at its end)", quotePath(p))
		case "..":
			return "path_dotdot", fmt.Sprintf("path %s has a .. segment; a skill may not reach outside its folder", quotePath(p))
		case ".":
			return "path_dot", fmt.Sprintf("path %s has a . segment; write the path without it", quotePath(p))
		}
	}
	return "", ""
}

func decodeSkillContent(f SkillFileInput) ([]byte, string, string) {
	switch strings.ToLower(f.Encoding) {
	case "", "utf-8", "utf8":
		return []byte(f.Content), "", ""
	case "base64":
		b, err := base64.StdEncoding.DecodeString(f.Content)
		if err != nil {
			return nil, "content_invalid_base64", fmt.Sprintf("content of %s is not valid base64: %v", quotePath(f.Path), err)
		}
		return b, "", ""
	}
	return nil, "encoding_invalid", fmt.Sprintf("encoding must be utf-8 or base64; found %q", f.Encoding)
}

// apiFiles checks and decodes the files of Skill.create, naming each by its
// index: files[3].path, files[3].content.
func (in SkillInput) apiFiles(ps *skillProblems) []models.SkillFile {
	switch {
	case len(in.Files) == 0:
		ps.add("files", "files_required", "a skill needs at least one file")
		return nil
	case len(in.Files) > MaxSkillFiles:
		ps.add("files", "too_many_files", fmt.Sprintf("a skill may have at most %d files; this has %d",
			MaxSkillFiles, len(in.Files)))
		return nil
	}
	seen := map[string]int{}
	var out []models.SkillFile
	for i, f := range in.Files {
		field := fmt.Sprintf("files[%d]", i)
		if code, detail := skillPathProblem(f.Path, true); code != "" {
			ps.add(field+".path", code, detail)
			continue
		}
		if j, dup := seen[f.Path]; dup {
			ps.add(field+".path", "path_duplicate", fmt.Sprintf("path %s is given twice: files[%d] and files[%d]", quotePath(f.Path), j, i))
			continue
		}
		seen[f.Path] = i
		content, code, detail := decodeSkillContent(f)
		if code == "encoding_invalid" {
			ps.add(field+".encoding", code, detail)
		} else if code != "" {
			ps.add(field+".content", code, detail)
		}
		mode := f.Mode
		if mode == 0 {
			mode = SkillModeFile
		}
		if mode != SkillModeFile && mode != SkillModeExec {
			ps.add(field+".mode", "mode_invalid", fmt.Sprintf("mode of %s must be 0644 or 0755", quotePath(f.Path)))
		}
		out = append(out, models.SkillFile{Path: f.Path, Content: content, Size: int64(len(content)), Mode: int(mode)})
	}
	checkSkillFiles(ps, out, func(i int) string {
		if i < 0 {
			return "files"
		}
		return fmt.Sprintf("files[%d]", i)
	})
	return out
}

func skillFileTooLarge(path string, size int64) string {
	return fmt.Sprintf("file %s is %d bytes; a file may be at most 1 MiB (%d bytes)", quotePath(path), size, MaxSkillFileBytes)
}

// checkSkillFiles enforces what holds for a whole skill, however it arrived:
// the size caps, and no path that is both file and folder. field names the
// i-th file's field, or the whole list's when i is -1.
func checkSkillFiles(ps *skillProblems, files []models.SkillFile, field func(i int) string) {
	var total int64
	set := make(map[string]bool, len(files))
	for _, f := range files {
		set[f.Path] = true
	}
	for i, f := range files {
		total += f.Size
		if f.Size > MaxSkillFileBytes {
			ps.add(field(i), "file_too_large", skillFileTooLarge(f.Path, f.Size))
		}
		for dir := f.Path; strings.Contains(dir, "/"); {
			dir = dir[:strings.LastIndex(dir, "/")]
			if set[dir] {
				ps.add(field(i), "path_conflict", fmt.Sprintf("path %s is a file and also the folder of %s", quotePath(dir), quotePath(f.Path)))
			}
		}
	}
	if total > MaxSkillBytes {
		ps.add(field(-1), "skill_too_large", fmt.Sprintf("the files total %d bytes; a skill may be at most 10 MiB (%d bytes)",
			total, MaxSkillBytes))
	}
}

// skillZipFiles reads a .zip of a skill's folder. Its rules are the API's, plus:
// links and other non-regular entries are refused, folders are skipped, and a
// folder wrapping every entry (a zipped folder) is stripped. Every problem is
// reported under the field "zip", naming the path as it is in the zip.
func skillZipFiles(data []byte, ps *skillProblems) []models.SkillFile {
	switch {
	case len(data) == 0:
		ps.add("zip", "zip_required", "choose a .zip file of the skill's folder")
		return nil
	case len(data) > MaxSkillZipBytes:
		ps.add("zip", "zip_too_large", fmt.Sprintf("the .zip is %d bytes; it may be at most 16 MiB (%d bytes)",
			len(data), MaxSkillZipBytes))
		return nil
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		ps.add("zip", "zip_invalid", "the file is not a readable .zip: "+err.Error())
		return nil
	}
	entries := skillZipEntries(zr, ps)
	var declared uint64
	for _, f := range entries {
		declared += f.UncompressedSize64
	}
	switch {
	case len(entries) == 0:
		ps.add("zip", "files_required", "the zip holds no files; a skill needs at least one (folders and links do not count)")
		return nil
	case len(entries) > MaxSkillFiles:
		ps.add("zip", "too_many_files", fmt.Sprintf("a skill may have at most %d files; the zip has %d", MaxSkillFiles, len(entries)))
		return nil
	case declared > MaxSkillBytes: // checked before reading: a small zip can inflate to gigabytes
		ps.add("zip", "skill_too_large", fmt.Sprintf("the files total %d bytes; a skill may be at most 10 MiB (%d bytes)",
			declared, MaxSkillBytes))
		return nil
	}
	out := readSkillZip(entries, zipCommonTop(entries), ps)
	checkSkillFiles(ps, out, func(int) string { return "zip" })
	return out
}

// readSkillZip reads the checked entries, stripping top from each name.
func readSkillZip(entries []*zip.File, top string, ps *skillProblems) []models.SkillFile {
	seen := map[string]bool{}
	var out []models.SkillFile
	for _, f := range entries {
		path := strings.TrimPrefix(f.Name, top)
		if code, detail := skillPathProblem(path, true); code != "" {
			ps.add("zip", code, detail)
			continue
		}
		if seen[path] {
			ps.add("zip", "path_duplicate", fmt.Sprintf("path %s appears twice in the zip", quotePath(f.Name)))
			continue
		}
		seen[path] = true
		if f.UncompressedSize64 > MaxSkillFileBytes {
			ps.add("zip", "file_too_large", skillFileTooLarge(f.Name, int64(f.UncompressedSize64)))
			continue
		}
		content, err := readSkillZipFile(f)
		if err != nil {
			ps.add("zip", "zip_invalid", fmt.Sprintf("cannot read path %s from the zip: %v", quotePath(f.Name), err))
			continue
		}
		mode := SkillModeFile
		if f.Mode()&0o111 != 0 {
			mode = SkillModeExec
		}
		out = append(out, models.SkillFile{Path: path, Content: content, Size: int64(len(content)), Mode: int(mode)})
	}
	return out
}

func skillZipEntries(zr *zip.Reader, ps *skillProblems) []*zip.File {
	var out []*zip.File
	for _, f := range zr.File {
		mode := f.Mode()
		switch {
		case strings.HasPrefix(f.Name, "__MACOSX/"): // Finder's resource forks: not part of the folder
		case mode&fs.ModeSymlink != 0:
			ps.add("zip", "link_not_allowed", "links are not allowed: path "+quotePath(f.Name))
		case mode.IsDir():
		case !mode.IsRegular():
			ps.add("zip", "not_regular_file", fmt.Sprintf("only regular files are allowed: path %s is a %v entry",
				quotePath(f.Name), mode.Type()))
		default:
			if code, detail := skillPathProblem(f.Name, false); code != "" {
				ps.add("zip", code, detail)
				continue
			}
			out = append(out, f)
		}
	}
	return out
}

// zipCommonTop is the folder every entry sits in ("skill/"), or "" when the
// entries do not share one. The names have passed skillPathProblem, so the folder
// is a real segment, never "", "." or "..".
func zipCommonTop(files []*zip.File) string {
	if len(files) == 0 {
		return ""
	}
	top, _, ok := strings.Cut(files[0].Name, "/")
	if !ok {
		return ""
	}
	for _, f := range files[1:] {
		if !strings.HasPrefix(f.Name, top+"/") {
			return ""
		}
	}
	return top + "/"
}

// readSkillZipFile reads one entry. archive/zip refuses an entry longer than its
// declared size, and the declared sizes were capped, so this stays bounded.
func readSkillZipFile(f *zip.File) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, MaxSkillFileBytes+1))
}
