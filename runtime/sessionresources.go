package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/runtime/mcpclient"
	"github.com/subako/subako/runtime/tools"
)

// An MCP grant's resources and prompts, offered through the session as its
// tools are, under the grant's name and policy (docs/mcp.md):
//
//   - A grant whose default policy is allow offers its server's resources,
//     resource templates and prompts; ask-first and denied grants offer
//     none (a read is not a call an approver sees, so it is not asked
//     about: a grant that wants a person in the loop keeps its data out).
//   - A resource's URI is the server's own behind the scheme
//     mcp+<grant>: (resourceURIPrefix), so a read reaches the grant that
//     listed it: demo://r/1 of grant "everything" is
//     mcp+everything:demo://r/1. Templates are prefixed alike.
//   - A prompt's name is mcp__<grant>__<prompt>, as a tool's.
//   - Lists are recorded as Session.tools; every read is an Action
//     Resource.read, every get Prompt.get, with the URI or name as target.

// resourceURIPrefix is the scheme prefix of an MCP grant's resources.
func resourceURIPrefix(grant string) string { return "mcp+" + grant + ":" }

// parseResourceURI splits a session's resource URI into grant and the
// server's own URI.
func parseResourceURI(u string) (grant, uri string, ok bool) {
	rest, found := strings.CutPrefix(u, "mcp+")
	if !found {
		return "", "", false
	}
	grant, uri, found = strings.Cut(rest, ":")
	if !found || grant == "" || uri == "" {
		return "", "", false
	}
	return grant, uri, true
}

// resourceGrant is an MCP grant of the session that offers its resources
// and prompts.
type resourceGrant struct {
	tools.MCPServer
	sessionID string
}

// resourceGrants are the session's MCP grants that offer resources and
// prompts; all are its MCP grants, with offers false for those that do not.
func (r *Runtime) resourceGrants(ctx context.Context, p Principal, id string, write bool) ([]tools.MCPServer, []resourceGrant, string, error) {
	s, err := r.loadSession(ctx, p, id)
	if err != nil {
		return nil, nil, "", err
	}
	if write && s.State != SessionActive {
		return nil, nil, "", conflict("session_ended", "the session has ended")
	}
	v, err := r.loadVersion(ctx, s.VersionID)
	if err != nil {
		return nil, nil, "", err
	}
	cfg := versionView(v).Parsed()
	var offering []resourceGrant
	for _, g := range cfg.MCPServers {
		if g.DefaultPolicy == tools.PolicyAllow {
			offering = append(offering, resourceGrant{MCPServer: g, sessionID: s.ID})
		}
	}
	return cfg.MCPServers, offering, s.VersionID, nil
}

// eachResourceGrant runs list on every offering grant of the session with
// the session's credential for it. A server that fails is left out of the
// list (and logged): one broken server does not empty the others'.
func (r *Runtime) eachResourceGrant(ctx context.Context, p Principal, id string, list func(g resourceGrant, key string, attach attachFunc) error) error {
	return r.run(ctx, p, "Session.tools", func(a *act) error {
		_, grants, version, err := r.resourceGrants(ctx, p, id, false)
		if err != nil {
			return err
		}
		a.version = version
		for _, g := range grants {
			credID, attach, err := r.attacherFor(ctx, id, g.URL)
			if err == nil {
				err = list(g, mcpPoolKey(id, credID), attach)
			}
			if err != nil {
				r.opts.Log.Warn("runtime: mcp resources or prompts not listed", "grant", g.Name, "url", redactURL(g.URL), "err", err)
			}
		}
		return nil
	}, id)
}

// SessionResources lists the resources the session's MCP grants offer.
func (r *Runtime) SessionResources(ctx context.Context, p Principal, id string) ([]*mcp.Resource, error) {
	out := []*mcp.Resource{}
	err := r.eachResourceGrant(ctx, p, id, func(g resourceGrant, key string, attach attachFunc) error {
		rs, err := r.mcp.ListResources(ctx, g.URL, key, attach)
		for _, res := range rs {
			c := *res
			c.URI = resourceURIPrefix(g.Name) + res.URI
			out = append(out, &c)
		}
		return err
	})
	return out, err
}

// SessionResourceTemplates lists the resource templates the session's MCP
// grants offer, their URI templates prefixed like resources.
func (r *Runtime) SessionResourceTemplates(ctx context.Context, p Principal, id string) ([]*mcp.ResourceTemplate, error) {
	out := []*mcp.ResourceTemplate{}
	err := r.eachResourceGrant(ctx, p, id, func(g resourceGrant, key string, attach attachFunc) error {
		ts, err := r.mcp.ListResourceTemplates(ctx, g.URL, key, attach)
		for _, t := range ts {
			c := *t
			c.URITemplate = resourceURIPrefix(g.Name) + t.URITemplate
			out = append(out, &c)
		}
		return err
	})
	return out, err
}

// SessionPrompts lists the prompts the session's MCP grants offer, named
// mcp__<grant>__<prompt>.
func (r *Runtime) SessionPrompts(ctx context.Context, p Principal, id string) ([]*mcp.Prompt, error) {
	out := []*mcp.Prompt{}
	err := r.eachResourceGrant(ctx, p, id, func(g resourceGrant, key string, attach attachFunc) error {
		ps, err := r.mcp.ListPrompts(ctx, g.URL, key, attach)
		for _, pr := range ps {
			c := *pr
			c.Name = tools.FullName(tools.KindMCP, g.Name, pr.Name)
			out = append(out, &c)
		}
		return err
	})
	return out, err
}

// SessionResourceRead is Resource.read: one resource of an offering grant,
// its contents' URIs prefixed as the session lists them. client is the MCP
// client that asked ("name/version"), recorded on the Action.
func (r *Runtime) SessionResourceRead(ctx context.Context, p Principal, id, uri, client string) (*mcp.ReadResourceResult, error) {
	var out *mcp.ReadResourceResult
	err := r.run(ctx, p, "Resource.read", func(a *act) error {
		a.client = client
		grant, own, ok := parseResourceURI(uri)
		if !ok {
			return &Error{Kind: KindNotFound, Code: "unknown_resource", Title: "Unknown resource", Field: "uri",
				Detail: fmt.Sprintf("this session has no resource %q: its resources are mcp+<grant>:<the server's URI>, as resources/list shows them", truncate(uri, 200))}
		}
		g, key, attach, err := r.offeringGrant(ctx, p, id, grant, "resource", uri, a)
		if err != nil {
			return err
		}
		out, err = r.mcp.ReadResource(ctx, g.URL, key, attach, own)
		if err != nil {
			return upstreamError(ctx, g.Name, err, attach)
		}
		for _, c := range out.Contents {
			if c != nil && c.URI != "" {
				c.URI = resourceURIPrefix(g.Name) + c.URI
			}
		}
		return nil
	}, id, truncate(uri, 500))
	return out, err
}

// SessionPromptGet is Prompt.get: one prompt of an offering grant; client
// as for SessionResourceRead.
func (r *Runtime) SessionPromptGet(ctx context.Context, p Principal, id, name string, args map[string]string, client string) (*mcp.GetPromptResult, error) {
	var out *mcp.GetPromptResult
	err := r.run(ctx, p, "Prompt.get", func(a *act) error {
		a.client = client
		kind, grant, own, err := tools.ParseFullName(name)
		if err != nil || kind != tools.KindMCP {
			return &Error{Kind: KindNotFound, Code: "unknown_prompt", Title: "Unknown prompt", Field: "name",
				Detail: fmt.Sprintf("this session has no prompt %q: its prompts are mcp__<grant>__<prompt>, as prompts/list shows them", truncate(name, 200))}
		}
		g, key, attach, err := r.offeringGrant(ctx, p, id, grant, "prompt", name, a)
		if err != nil {
			return err
		}
		out, err = r.mcp.GetPrompt(ctx, g.URL, key, attach, own, args)
		if err != nil {
			return upstreamError(ctx, g.Name, err, attach)
		}
		return nil
	}, id, truncate(name, 200))
	return out, err
}

// attachFunc adds a session's credential to a request to an MCP server.
type attachFunc = func(*http.Request)

// offeringGrant is the session's grant of that name when it offers its
// resources and prompts, with the session's credential for it.
func (r *Runtime) offeringGrant(ctx context.Context, p Principal, id, grant, what, asked string, a *act) (resourceGrant, string, attachFunc, error) {
	all, offering, version, err := r.resourceGrants(ctx, p, id, true)
	if err != nil {
		return resourceGrant{}, "", nil, err
	}
	a.version = version
	code, field := "unknown_"+what, "uri"
	if what == "prompt" {
		field = "name"
	}
	for _, g := range offering {
		if g.Name == grant {
			credID, attach, err := r.attacherFor(ctx, id, g.URL)
			if err != nil {
				return g, "", nil, err
			}
			return g, mcpPoolKey(id, credID), attach, nil
		}
	}
	for _, g := range all {
		if g.Name == grant {
			// Refused by policy, and recorded so: Action.list {"verdict":"refused"} finds it.
			return resourceGrant{}, "", nil, &Error{Kind: KindForbidden, Code: what + "_not_offered", Title: "Not offered", Field: field,
				Detail: fmt.Sprintf("MCP grant %q offers no resources or prompts: its default policy is %s, and only a grant whose default policy is allow offers them", grant, g.DefaultPolicy)}
		}
	}
	return resourceGrant{}, "", nil, &Error{Kind: KindNotFound, Code: code, Title: "Unknown " + what, Field: field,
		Detail: fmt.Sprintf("this session has no MCP grant %q; %s %q names it", grant, what, truncate(asked, 200))}
}

// UpstreamError is what an MCP server answered to a read or a get that it
// refused: its JSON-RPC error, passed on by the session's endpoint.
type UpstreamError struct {
	Grant string
	Err   error // its text without the session's credential for the server
	// RPC is the server's JSON-RPC error as the agent gets it: its code, its
	// message cut at maxUpstreamMessage bytes and its data kept only up to
	// maxUpstreamData, the credential cut out of both. nil when the server
	// answered no JSON-RPC error.
	RPC *jsonrpc.Error
}

// Bounds of a server's JSON-RPC error passed on to the agent.
const (
	maxUpstreamMessage = 512
	maxUpstreamData    = 1024
)

func (e *UpstreamError) Error() string { return fmt.Sprintf("MCP server %q: %v", e.Grant, e.Err) }
func (e *UpstreamError) Unwrap() error { return e.Err }

func upstreamError(ctx context.Context, grant string, err error, attach attachFunc) error {
	if errors.Is(err, mcpclient.ErrNoCapability) {
		return &Error{Kind: KindNotFound, Code: "unknown_resource", Title: "Not offered",
			Detail: fmt.Sprintf("MCP server %q does not offer resources or prompts", grant)}
	}
	secrets := credentialValues(ctx, attach)
	up := &UpstreamError{Grant: grant, Err: hideCredentialIn(ctx, err, attach)}
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		up.RPC = &jsonrpc.Error{Code: rpc.Code, Message: truncate(hideCredentials(rpc.Message, secrets), maxUpstreamMessage)}
		if data := hideCredentials(string(rpc.Data), secrets); len(data) <= maxUpstreamData && json.Valid([]byte(data)) {
			up.RPC.Data = json.RawMessage(data)
		}
	}
	return up
}
