package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resources, resource templates and prompts of a server, listed and read
// over the same cached session as its tools. Lists follow their pages
// within the discovery limits (at most MaxTools entries and
// MaxResponseBytes of them, maxPages pages); a server that does not declare
// the capability lists none and is not asked.

// ErrNoCapability: the server does not declare resources (or prompts).
var ErrNoCapability = errors.New("mcpclient: the server does not offer this")

// ListResources lists the server's resources.
func (p *Pool) ListResources(ctx context.Context, url, sessionKey string, attach func(*http.Request)) ([]*mcp.Resource, error) {
	return listOf(ctx, p, url, sessionKey, attach, "resources/list", hasResources,
		func(ctx context.Context, cs *mcp.ClientSession, cursor string) ([]*mcp.Resource, string, error) {
			res, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return res.Resources, res.NextCursor, nil
		})
}

// ListResourceTemplates lists the server's resource templates.
func (p *Pool) ListResourceTemplates(ctx context.Context, url, sessionKey string, attach func(*http.Request)) ([]*mcp.ResourceTemplate, error) {
	return listOf(ctx, p, url, sessionKey, attach, "resources/templates/list", hasResources,
		func(ctx context.Context, cs *mcp.ClientSession, cursor string) ([]*mcp.ResourceTemplate, string, error) {
			res, err := cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return res.ResourceTemplates, res.NextCursor, nil
		})
}

// ListPrompts lists the server's prompts.
func (p *Pool) ListPrompts(ctx context.Context, url, sessionKey string, attach func(*http.Request)) ([]*mcp.Prompt, error) {
	return listOf(ctx, p, url, sessionKey, attach, "prompts/list", hasPrompts,
		func(ctx context.Context, cs *mcp.ClientSession, cursor string) ([]*mcp.Prompt, string, error) {
			res, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return res.Prompts, res.NextCursor, nil
		})
}

// listOf lists with page over the cached session, or answers none when the
// server does not declare the capability.
func listOf[T any](ctx context.Context, p *Pool, url, sessionKey string, attach func(*http.Request), method string,
	offers func(*mcp.ClientSession) bool, page func(context.Context, *mcp.ClientSession, string) ([]T, string, error)) ([]T, error) {
	var out []T
	err := p.do(ctx, url, sessionKey, attach, func(ctx context.Context, cs *mcp.ClientSession) error {
		out = nil
		if !offers(cs) {
			return nil
		}
		return listPages(p, method, &out, func(cursor string) ([]T, string, error) { return page(ctx, cs, cursor) })
	})
	return out, err
}

// ReadResource reads one resource; its answer is bounded by MaxResponseBytes
// like a tool's.
func (p *Pool) ReadResource(ctx context.Context, url, sessionKey string, attach func(*http.Request), uri string) (*mcp.ReadResourceResult, error) {
	var out *mcp.ReadResourceResult
	err := p.do(ctx, url, sessionKey, attach, func(ctx context.Context, cs *mcp.ClientSession) error {
		if !hasResources(cs) {
			return ErrNoCapability
		}
		var err error
		out, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		return err
	})
	return out, err
}

// GetPrompt gets one prompt with its arguments.
func (p *Pool) GetPrompt(ctx context.Context, url, sessionKey string, attach func(*http.Request), name string, args map[string]string) (*mcp.GetPromptResult, error) {
	var out *mcp.GetPromptResult
	err := p.do(ctx, url, sessionKey, attach, func(ctx context.Context, cs *mcp.ClientSession) error {
		if !hasPrompts(cs) {
			return ErrNoCapability
		}
		var err error
		out, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
		return err
	})
	return out, err
}

func hasResources(cs *mcp.ClientSession) bool {
	r := cs.InitializeResult()
	return r != nil && r.Capabilities != nil && r.Capabilities.Resources != nil
}

func hasPrompts(cs *mcp.ClientSession) bool {
	r := cs.InitializeResult()
	return r != nil && r.Capabilities != nil && r.Capabilities.Prompts != nil
}

// listPages follows a list's pages into out, within the pool's limits:
// entries past MaxTools, or past MaxResponseBytes of them, are dropped.
func listPages[T any](p *Pool, method string, out *[]T, page func(cursor string) ([]T, string, error)) error {
	cursor := ""
	var kept int64
	for range maxPages {
		items, next, err := page(cursor)
		if err != nil {
			return err
		}
		for _, it := range items {
			b, err := json.Marshal(it)
			if err != nil {
				continue
			}
			if len(*out) >= p.opts.MaxTools || kept+int64(len(b)) > p.opts.MaxResponseBytes {
				return nil
			}
			kept += int64(len(b))
			*out = append(*out, it)
		}
		if next == "" || len(*out) >= p.opts.MaxTools {
			return nil
		}
		if next == cursor {
			return fmt.Errorf("%s returned the cursor %q it was given", method, cut(cursor, maxNameShown))
		}
		cursor = next
	}
	return fmt.Errorf("%s went on for more than %d pages", method, maxPages)
}
