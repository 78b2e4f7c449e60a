package handlers

import (
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
)

// The Caller of every request (issue 14, "Every call records by, model and
// version"): what the Action records as its client and model. A request that
// already carries one (a code-mode $ call served through the router) keeps it.

// ConsoleCaller marks the console's requests: the client is "console".
func ConsoleCaller(next echo.HandlerFunc) echo.HandlerFunc {
	return withCaller(next, func(echo.Context) string { return "console" })
}

// APICaller marks the API's requests: "subako do" when the CLI's
// User-Agent (subako-cli/…) says so, else "API (<User-Agent>)"; the model
// from the header X-Subako-Model (at most 200 bytes).
func APICaller(next echo.HandlerFunc) echo.HandlerFunc {
	return withCaller(next, func(c echo.Context) string {
		ua := c.Request().UserAgent()
		switch {
		case strings.HasPrefix(ua, "subako-cli/"):
			return "subako do"
		case ua == "":
			return "API"
		}
		return "API (" + runtime.ClientLabel(ua, 120) + ")"
	})
}

func withCaller(next echo.HandlerFunc, client func(echo.Context) string) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if runtime.CallerFrom(req.Context()).Client != "" {
			return next(c)
		}
		field, model := "X-Subako-Model", req.Header.Get("X-Subako-Model")
		if model == "" { // the older name, which ToolCall.create took first
			field, model = "Subako-Model", req.Header.Get("Subako-Model")
		}
		if err := runtime.CheckModel(field, model); err != nil {
			return err
		}
		c.SetRequest(req.WithContext(runtime.WithCaller(req.Context(), runtime.Caller{Client: client(c), Model: model})))
		return next(c)
	}
}
