package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/tools"
)

// FetchToolsInput is Version.fetchTools: the MCP server to list, and the
// vault whose credential for that URL is attached ("" for none).
type FetchToolsInput struct {
	URL   string `json:"url" form:"url"`
	Vault string `json:"vault" form:"vault"`
	// Grant is the grant's name, to name the tools as a session would ("" is fine).
	Grant string `json:"grant" form:"grant"`
}

// FetchedTools is what Version.fetchTools found.
type FetchedTools struct {
	URL       string        `json:"url"`
	Tools     []PinnedTool  `json:"tools"`
	Skipped   []SkippedTool `json:"skipped,omitempty"`
	FetchedAt time.Time     `json:"fetched_at"`
	// Kept says the list is now the draft's, to be pinned at publish; a
	// published version keeps its pins, and the list only shows its drift.
	Kept bool `json:"kept"`
}

// maxFetchURL bounds the URL Version.fetchTools takes.
const maxFetchURL = 2048

// maxFetchedURLs bounds the servers a draft keeps fetched lists for.
const maxFetchedURLs = 64

// boundFetched makes room for one more fetched list on draft v: lists of
// URLs its config no longer grants go first; past the limit it refuses.
func boundFetched(tx *gorm.DB, v models.Version, url string) error {
	count := func() int64 {
		var n int64
		tx.Model(&models.VersionToolPins{}).Where("version_id = ? AND url <> ?", v.ID, url).Count(&n)
		return n
	}
	if count() < maxFetchedURLs {
		return nil
	}
	if err := prunePins(tx, v.ID, versionView(v).Parsed()); err != nil {
		return err
	}
	if count() >= maxFetchedURLs {
		return invalid("url", "too_many_fetched", fmt.Sprintf(
			"a draft keeps the fetched tools of at most %d MCP server URLs, and this one holds %d; remove grants, or save the grant first", maxFetchedURLs, maxFetchedURLs))
	}
	return nil
}

// VersionFetchTools is Version.fetchTools: list an MCP server's tools now,
// with a chosen vault's credential for its URL or none. On a draft the list
// is kept for the URL: tool rules are checked against it and publishing pins
// it. On a published version it only refreshes what the drift compares with.
func (r *Runtime) VersionFetchTools(ctx context.Context, p Principal, id string, in FetchToolsInput) (FetchedTools, error) {
	var out FetchedTools
	err := r.run(ctx, p, "Version.fetchTools", func(a *act) error {
		v, err := r.loadVersion(ctx, id)
		if err != nil {
			return err
		}
		in.URL = strings.TrimSpace(in.URL)
		switch {
		case in.URL == "":
			return invalid("url", "url_required", "url is required: the MCP server's Streamable HTTP endpoint")
		case len(in.URL) > maxFetchURL:
			return invalid("url", "url_too_long", fmt.Sprintf("url must be at most %d bytes; this one has %d", maxFetchURL, len(in.URL)))
		case !strings.HasPrefix(in.URL, "https://") && !strings.HasPrefix(in.URL, "http://"):
			return invalid("url", "invalid_url", "url must start with https:// (or http://)")
		}
		var recs []models.Credential
		if in.Vault != "" {
			vlt, err := r.loadVault(ctx, in.Vault)
			if err != nil {
				return err
			}
			// Fetching with a vault's credentials uses it (check.go).
			if err := r.require(ctx, p, "Vault.use", vlt.ID); err != nil {
				return err
			}
			if err := r.db.WithContext(ctx).Where("vault_id = ?", vlt.ID).Order("prefix").Find(&recs).Error; err != nil {
				return err
			}
		}
		credID, attach, err := r.attacherFrom(recs, in.URL)
		if err != nil {
			return err
		}
		found, err := r.mcp.Discover(ctx, in.URL, "fetch/"+id+"/"+credID, attach)
		if err = hideCredentialIn(ctx, err, attach); err != nil {
			return invalid("url", "fetch_failed", fmt.Sprintf("the MCP server at %s could not list its tools: %s", redactURL(in.URL), truncate(err.Error(), 500)))
		}
		listed := hideCredentialsInTools(storedTools(found), credentialValues(ctx, attach))
		grant := in.Grant
		if grant == "" {
			grant = "server"
		}
		defs, skipped := offerable(grant, listed)
		out = FetchedTools{URL: in.URL, Tools: []PinnedTool{}, Skipped: skipped, FetchedAt: r.now()}
		for _, d := range defs {
			out.Tools = append(out.Tools, pinOf(d))
		}
		b, _ := json.Marshal(listed)
		// What the editor saw is what sessions with that credential see next.
		d := models.MCPDiscovery{URL: in.URL, CredentialID: credID, Tools: string(b), DiscoveredAt: out.FetchedAt}
		if err := r.db.WithContext(ctx).Save(&d).Error; err != nil {
			return err
		}
		if v.State != StateDraft {
			return nil
		}
		out.Kept = true
		return r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := boundFetched(tx, v, in.URL); err != nil {
				return err
			}
			return keepPins(tx, id, in.URL, out.Tools, out.FetchedAt)
		})
	}, id)
	return out, err
}

// GrantDrift is how an MCP grant's pinned tools compare with what its server
// lists now, as last discovered by a session or a fetch.
type GrantDrift struct {
	Grant     string       `json:"grant"`
	URL       string       `json:"url"`
	Pinned    int          `json:"pinned"`
	CheckedAt *time.Time   `json:"checked_at,omitempty"`
	Changes   []ToolChange `json:"changes"`
}

// VersionDrift is Version.drift: for each pinned MCP grant of a version, the
// tools its server added, removed or changed since (empty for a version
// without pins).
func (r *Runtime) VersionDrift(ctx context.Context, p Principal, id string) ([]GrantDrift, error) {
	out := []GrantDrift{}
	err := r.run(ctx, p, "Version.drift", func(a *act) error {
		v, err := r.loadVersion(ctx, id)
		if err != nil {
			return err
		}
		out, err = r.drift(ctx, v)
		return err
	}, id)
	return out, err
}

func (r *Runtime) drift(ctx context.Context, v models.Version) ([]GrantDrift, error) {
	out := []GrantDrift{}
	pins, err := r.versionPins(ctx, v.ID)
	if err != nil {
		return nil, err
	}
	for _, g := range versionView(v).Parsed().MCPServers {
		pinned, ok := pins[g.URL]
		if !ok {
			continue
		}
		gd := GrantDrift{Grant: g.Name, URL: g.URL, Pinned: len(pinned), Changes: []ToolChange{}}
		if live, at, ok := r.latestTools(ctx, g); ok {
			gd.CheckedAt = &at
			gd.Changes = diffPins(g.Name, pinned, live)
		}
		out = append(out, gd)
	}
	return out, nil
}

// latestTools is the newest list any session or fetch discovered at the
// grant's URL, as a session would offer it.
func (r *Runtime) latestTools(ctx context.Context, g tools.MCPServer) ([]tools.ToolDef, time.Time, bool) {
	var d models.MCPDiscovery
	if r.db.WithContext(ctx).Where("url = ? AND error = ''", g.URL).Order("discovered_at DESC").First(&d).Error != nil {
		return nil, time.Time{}, false
	}
	var listed []storedTool
	if json.Unmarshal([]byte(d.Tools), &listed) != nil {
		return nil, time.Time{}, false
	}
	defs, _ := offerable(g.Name, listed)
	return defs, d.DiscoveredAt, true
}

// VersionDraftWithTools is "New draft with these tools": a draft copied from
// version id whose drifted MCP grants carry the tools their servers list
// now, so publishing it pins the new definitions.
func (r *Runtime) VersionDraftWithTools(ctx context.Context, p Principal, id string) (VersionView, error) {
	v, err := r.VersionGet(ctx, p, id)
	if err != nil {
		return v, err
	}
	draft, err := r.VersionCreate(ctx, p, VersionCreateInput{Agent: v.Agent, From: id})
	if err != nil {
		return draft, err
	}
	err = r.run(ctx, p, "Version.fetchTools", func(a *act) error {
		return r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			for _, g := range draft.Parsed().MCPServers {
				live, at, ok := r.latestTools(ctx, g)
				if !ok {
					continue
				}
				ts := make([]PinnedTool, len(live))
				for i, d := range live {
					ts[i] = pinOf(d)
				}
				if err := keepPins(tx, draft.ID, g.URL, ts, at); err != nil {
					return err
				}
			}
			return nil
		})
	}, draft.ID)
	return draft, err
}

// publishedPins is the pins a session of v goes by: none for a draft.
func (r *Runtime) publishedPins(ctx context.Context, v models.Version) (map[string][]PinnedTool, error) {
	if v.State != StatePublished {
		return nil, nil
	}
	return r.versionPins(ctx, v.ID)
}

// PinnedList is the tools kept for one MCP server URL of a version.
type PinnedList struct {
	URL       string       `json:"url"`
	Tools     []PinnedTool `json:"tools"`
	FetchedAt time.Time    `json:"fetched_at"`
}

// VersionPinned is a version's fetched (draft) or pinned (published) tool
// lists by URL, for the grant form. It is part of the pages Version.get
// covers, so it is not recorded itself.
func (r *Runtime) VersionPinned(ctx context.Context, p Principal, id string) (map[string]PinnedList, error) {
	if !p.Can("Version.get") {
		return nil, denied(p, "Version.get", "")
	}
	return r.pinnedLists(ctx, id)
}

func (r *Runtime) pinnedLists(ctx context.Context, id string) (map[string]PinnedList, error) {
	var rows []models.VersionToolPins
	if err := r.db.WithContext(ctx).Where("version_id = ?", id).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("runtime: pinned tools of %s: %w", id, err)
	}
	out := map[string]PinnedList{}
	for _, row := range rows {
		l := PinnedList{URL: row.URL, FetchedAt: row.FetchedAt}
		if json.Unmarshal([]byte(row.Tools), &l.Tools) == nil {
			out[row.URL] = l
		}
	}
	return out, nil
}
