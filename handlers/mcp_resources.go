package handlers

import (
	"context"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/runtime"
)

// codeResourceNotFound is MCP's JSON-RPC error for a resource that is not there.
const codeResourceNotFound = -32002

// serveResources answers resources/list, resources/templates/list,
// resources/read, prompts/list and prompts/get from the session's MCP
// grants (runtime/sessionresources.go): each as the principal of the
// message's own HTTP request, each read and get recorded.
func (m *MCP) serveResources(srv *mcp.Server, session string) {
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "resources/list", "resources/templates/list", "resources/read", "prompts/list", "prompts/get":
			default:
				return next(ctx, method, req)
			}
			p, err := messagePrincipal(req)
			if err != nil {
				return nil, err
			}
			rt := m.h.RT
			switch method {
			case "resources/list":
				rs, err := rt.SessionResources(ctx, p, session)
				return listAnswer(&mcp.ListResourcesResult{Resources: rs}, err)
			case "resources/templates/list":
				ts, err := rt.SessionResourceTemplates(ctx, p, session)
				return listAnswer(&mcp.ListResourceTemplatesResult{ResourceTemplates: ts}, err)
			case "prompts/list":
				ps, err := rt.SessionPrompts(ctx, p, session)
				return listAnswer(&mcp.ListPromptsResult{Prompts: ps}, err)
			case "resources/read":
				r := req.(*mcp.ReadResourceRequest)
				res, err := rt.SessionResourceRead(ctx, p, session, r.Params.URI, sessionClient(r.Session))
				return readAnswer(res, err)
			default:
				r := req.(*mcp.GetPromptRequest)
				res, err := rt.SessionPromptGet(ctx, p, session, r.Params.Name, r.Params.Arguments, sessionClient(r.Session))
				return readAnswer(res, err)
			}
		}
	})
}

func listAnswer[R mcp.Result](res R, err error) (mcp.Result, error) {
	if err != nil {
		return nil, err
	}
	return res, nil
}

// readAnswer passes on a read's or a get's answer; an unknown resource or
// prompt is the protocol's error naming it, and what the upstream server
// refused with passes on as it said it.
func readAnswer[R mcp.Result](res R, err error) (mcp.Result, error) {
	if err == nil {
		return res, nil
	}
	if e, ok := runtime.AsError(err); ok && (e.Kind == runtime.KindNotFound || strings.HasSuffix(e.Code, "_not_offered")) {
		code := int64(jsonrpc.CodeInvalidParams)
		if e.Code == "unknown_resource" || e.Code == "resource_not_offered" {
			code = codeResourceNotFound
		}
		return nil, &jsonrpc.Error{Code: code, Message: e.Detail}
	}
	var up *runtime.UpstreamError
	if errors.As(err, &up) {
		if up.RPC != nil {
			return nil, up.RPC
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: up.Error()}
	}
	return nil, err
}
