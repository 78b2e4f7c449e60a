package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/subako/subako/runtime/fn/guest"
)

const defaultAPI = "https://api.github.com"

// namePattern keeps owner and repo from smuggling extra path segments or a query.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)

// repoRef is the part every tool's input shares.
type repoRef struct {
	Owner  string `json:"owner"`
	Repo   string `json:"repo"`
	APIURL string `json:"api_url"`
}

func (r repoRef) check() error {
	if !namePattern.MatchString(r.Owner) {
		return fmt.Errorf("owner: must be 1-100 characters of A-Z, a-z, 0-9, _, . and -")
	}
	if !namePattern.MatchString(r.Repo) {
		return fmt.Errorf("repo: must be 1-100 characters of A-Z, a-z, 0-9, _, . and -")
	}
	return nil
}

func (r repoRef) base() (string, error) {
	if r.APIURL == "" {
		return defaultAPI, nil
	}
	u, err := url.Parse(r.APIURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" {
		return "", fmt.Errorf("api_url: must be an absolute http(s) URL without a query")
	}
	return strings.TrimSuffix(r.APIURL, "/"), nil
}

// get fetches path (relative to the API base, starting with /repos/owner/repo)
// and decodes the JSON answer into v.
func (r repoRef) get(path string, query url.Values, v any) error {
	if err := r.check(); err != nil {
		return err
	}
	base, err := r.base()
	if err != nil {
		return err
	}
	full := base + "/repos/" + r.Owner + "/" + r.Repo + path
	if len(query) > 0 {
		full += "?" + query.Encode()
	}
	resp, err := guest.Fetch(guest.Request{
		URL: full,
		Headers: map[string]string{
			"Accept":               "application/vnd.github+json",
			"X-GitHub-Api-Version": "2022-11-28",
			"User-Agent":           "subako-fn-github/1.0",
		},
	})
	if err != nil {
		return err
	}
	if resp.Status/100 != 2 {
		return apiError(resp, "/repos/"+r.Owner+"/"+r.Repo+path)
	}
	if err := json.Unmarshal(resp.Body, v); err != nil {
		return fmt.Errorf("github: GET %s: decode answer: %w", path, err)
	}
	return nil
}

func apiError(resp guest.Response, path string) error {
	var body struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(resp.Body, &body)
	if body.Message == "" {
		body.Message = "no message"
	}
	return fmt.Errorf("github: GET %s: HTTP %d: %s", path, resp.Status, body.Message)
}

// page turns optional paging input into the API's query, refusing values GitHub
// would silently clamp.
func page(state string, perPage, pageNo int) (url.Values, error) {
	q := url.Values{}
	switch state {
	case "":
	case "open", "closed", "all":
		q.Set("state", state)
	default:
		return nil, fmt.Errorf("state: must be open, closed or all")
	}
	if perPage < 0 || perPage > 100 {
		return nil, fmt.Errorf("per_page: must be 1-100")
	}
	if perPage > 0 {
		q.Set("per_page", fmt.Sprint(perPage))
	}
	if pageNo < 0 {
		return nil, fmt.Errorf("page: must be 1 or more")
	}
	if pageNo > 0 {
		q.Set("page", fmt.Sprint(pageNo))
	}
	return q, nil
}
