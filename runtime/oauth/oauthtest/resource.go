package oauthtest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type echoOut struct {
	Text string `json:"text"`
}

type whoamiOut struct {
	Subject string `json:"subject"`
	Client  string `json:"client"`
	Scope   string `json:"scope"`
}

// verifier checks an access token with the authorization server's manager (the
// same process: a resource server sharing the AS's token store) and the
// test's expiry control. grant is "user", "client" or "" (either).
func (s *Server) verifier(grant string) auth.TokenVerifier {
	return func(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
		fail := func(why string) (*auth.TokenInfo, error) {
			s.count(func(st *Stats) { st.Unauthorized++ })
			return nil, fmt.Errorf("%w: %s", auth.ErrInvalidToken, why)
		}
		ti, err := s.manager.LoadAccessToken(ctx, token)
		if err != nil || ti == nil {
			return fail("the access token is invalid, expired or revoked")
		}
		s.mu.Lock()
		expired := !s.expiredAt.IsZero() && !ti.GetAccessCreateAt().After(s.expiredAt)
		kind := s.accessOf[token]
		s.mu.Unlock()
		if expired {
			return fail("the access token expired")
		}
		if grant != "" && kind != grant {
			return fail("this endpoint needs a " + grant + " token")
		}
		exp := ti.GetAccessCreateAt().Add(ti.GetAccessExpiresIn())
		if ti.GetAccessExpiresIn() == 0 {
			exp = time.Now().Add(time.Hour)
		}
		return &auth.TokenInfo{
			Scopes:     strings.Fields(ti.GetScope()),
			Expiration: exp,
			UserID:     ti.GetUserID(),
			Extra:      map[string]any{"client_id": ti.GetClientID(), "scope": ti.GetScope()},
		}, nil
	}
}

func (s *Server) rsHandler() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "oauthtest", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echoes the text back."},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			s.count(func(st *Stats) { st.ToolCalls++ })
			return nil, echoOut{Text: in.Text}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "Says whose token called it."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, whoamiOut, error) {
			s.count(func(st *Stats) { st.ToolCalls++ })
			var out whoamiOut
			if ti := req.Extra.TokenInfo; ti != nil {
				out.Subject = ti.UserID
				out.Client, _ = ti.Extra["client_id"].(string)
				out.Scope, _ = ti.Extra["scope"].(string)
			}
			return nil, out, nil
		})
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)

	mux := http.NewServeMux()
	meta := auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               s.MCPURL,
		AuthorizationServers:   []string{s.Issuer},
		ScopesSupported:        s.opts.Scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "oauthtest MCP server",
	})
	mux.Handle("/.well-known/oauth-protected-resource", meta)
	mux.Handle("/.well-known/oauth-protected-resource/mcp", meta)
	mux.Handle("/mcp", auth.RequireBearerToken(s.verifier(""), &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: s.ResourceMeta,
	})(mcpHandler))
	mux.Handle("GET /api/whoami", auth.RequireBearerToken(s.verifier("client"), &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: s.ResourceURL + "/.well-known/oauth-protected-resource",
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.count(func(st *Stats) { st.APICalls++ })
		ti := auth.TokenInfoFromContext(r.Context())
		client, _ := ti.Extra["client_id"].(string)
		scope, _ := ti.Extra["scope"].(string)
		writeJSON(w, 200, map[string]string{"client": client, "scope": scope, "message": "hello " + client})
	})))
	return mux
}
