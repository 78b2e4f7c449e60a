package main

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

type user struct {
	Login string `json:"login"`
}

type label struct {
	Name string `json:"name"`
}

// Repo is the part of GitHub's repository object a model needs.
type Repo struct {
	FullName      string   `json:"full_name"`
	Description   string   `json:"description"`
	Private       bool     `json:"private"`
	DefaultBranch string   `json:"default_branch"`
	Language      string   `json:"language"`
	Topics        []string `json:"topics"`
	Stars         int      `json:"stargazers_count"`
	Forks         int      `json:"forks_count"`
	OpenIssues    int      `json:"open_issues_count"`
	HTMLURL       string   `json:"html_url"`
	PushedAt      string   `json:"pushed_at"`
}

func getRepo(in repoRef) (any, error) {
	var r Repo
	if err := in.get("", nil, &r); err != nil {
		return nil, err
	}
	return r, nil
}

// Issue is an issue or pull request, without GitHub's many URL fields.
type Issue struct {
	Number      int       `json:"number"`
	Title       string    `json:"title"`
	State       string    `json:"state"`
	User        user      `json:"user"`
	Labels      []label   `json:"labels"`
	Comments    int       `json:"comments"`
	CreatedAt   string    `json:"created_at"`
	UpdatedAt   string    `json:"updated_at"`
	HTMLURL     string    `json:"html_url"`
	Body        string    `json:"body,omitempty"`
	PullRequest *struct{} `json:"pull_request,omitempty"`
	Draft       bool      `json:"draft,omitempty"`
	Head        *ref      `json:"head,omitempty"`
	Base        *ref      `json:"base,omitempty"`
}

type ref struct {
	Ref string `json:"ref"`
}

type listInput struct {
	repoRef
	State   string `json:"state"`
	PerPage int    `json:"per_page"`
	Page    int    `json:"page"`
}

// listIssues leaves out pull requests, which GitHub's issues endpoint also lists.
func listIssues(in listInput) (any, error) {
	q, err := page(in.State, in.PerPage, in.Page)
	if err != nil {
		return nil, err
	}
	var all []Issue
	if err := in.get("/issues", q, &all); err != nil {
		return nil, err
	}
	issues := []Issue{}
	for _, is := range all {
		if is.PullRequest == nil {
			is.Body = ""
			issues = append(issues, is)
		}
	}
	return map[string]any{"issues": issues}, nil
}

type issueInput struct {
	repoRef
	Number int `json:"number"`
}

func getIssue(in issueInput) (any, error) {
	if in.Number < 1 {
		return nil, fmt.Errorf("number: must be 1 or more")
	}
	var is Issue
	if err := in.get(fmt.Sprintf("/issues/%d", in.Number), nil, &is); err != nil {
		return nil, err
	}
	return is, nil
}

func listPulls(in listInput) (any, error) {
	q, err := page(in.State, in.PerPage, in.Page)
	if err != nil {
		return nil, err
	}
	pulls := []Issue{}
	if err := in.get("/pulls", q, &pulls); err != nil {
		return nil, err
	}
	for i := range pulls {
		pulls[i].Body = ""
	}
	return map[string]any{"pulls": pulls}, nil
}

type fileInput struct {
	repoRef
	Path string `json:"path"`
	Ref  string `json:"ref"`
}

// File is a file's metadata and content: text when it is UTF-8, else base64.
type File struct {
	Path          string `json:"path"`
	SHA           string `json:"sha"`
	Size          int    `json:"size"`
	Content       string `json:"content"`
	ContentBase64 bool   `json:"content_is_base64,omitempty"`
}

func getFile(in fileInput) (any, error) {
	if in.Path == "" || strings.Contains(in.Path, "..") {
		return nil, fmt.Errorf("path: must be a file path inside the repository")
	}
	segs := strings.Split(strings.Trim(in.Path, "/"), "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	q := url.Values{}
	if in.Ref != "" {
		q.Set("ref", in.Ref)
	}
	var raw struct {
		Type     string `json:"type"`
		Path     string `json:"path"`
		SHA      string `json:"sha"`
		Size     int    `json:"size"`
		Encoding string `json:"encoding"`
		Content  string `json:"content"`
	}
	if err := in.get("/contents/"+strings.Join(segs, "/"), q, &raw); err != nil {
		return nil, err
	}
	if raw.Type != "file" || raw.Encoding != "base64" {
		return nil, fmt.Errorf("path: %s is a %s, not a file GitHub returns inline", in.Path, raw.Type)
	}
	data, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(raw.Content, "\n", ""))
	if err != nil {
		return nil, fmt.Errorf("github: decode content of %s: %w", in.Path, err)
	}
	f := File{Path: raw.Path, SHA: raw.SHA, Size: raw.Size}
	if utf8.Valid(data) {
		f.Content = string(data)
	} else {
		f.Content, f.ContentBase64 = base64.StdEncoding.EncodeToString(data), true
	}
	return f, nil
}
