package handlers

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/tools"
)

// CheckInput refuses, before any handler runs, input that cannot be stored:
// a NUL or broken UTF-8 in a path parameter, a query parameter, a form field
// or a JSON body (where it also refuses repeated keys and trailing data).
// PostgreSQL refuses such text with an error that would surface as a 500
// and take the verb's Action with it; SQLite would keep it. Both answer a 422
// naming the field instead. Multipart uploads and raw bodies are checked by
// their handlers: some stream them, and reading them here would buffer them.
func (h *Handlers) CheckInput(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		for i, name := range c.ParamNames() {
			if i >= len(c.ParamValues()) {
				break
			}
			v := c.ParamValues()[i]
			// echo routes on the escaped path when there is one (a %ff
			// has no canonical escape), leaving its parameters escaped.
			if c.Request().URL.RawPath != "" {
				if u, err := url.PathUnescape(v); err == nil {
					v = u
				}
			}
			if name == "*" { // a volume file's path
				name = "path"
			}
			if why := tools.BadText(v); why != "" {
				return textError(name, "the path parameter "+name+" "+why)
			}
		}
		for name, vals := range c.QueryParams() {
			if err := checkValues(name, "query parameter", vals); err != nil {
				return err
			}
		}
		r := c.Request()
		if r.Body == nil || r.Body == http.NoBody || r.Method == http.MethodGet || r.Method == http.MethodHead || VolumeUpload(r) || SandboxFileUpload(r) {
			return next(c)
		}
		media, _, _ := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
		api := strings.HasPrefix(r.URL.Path, "/api/") || strings.HasPrefix(r.URL.Path, "/mcp/")
		switch {
		// The API takes no forms: an upload sent as one (curl --data-binary
		// says so by default) is a raw body its handler streams, left unread.
		case media == echo.MIMEApplicationForm && !api:
			form, err := c.FormParams()
			if err != nil {
				return &runtime.Error{Kind: runtime.KindInvalid, Code: "body_unreadable", Title: "Invalid body", Detail: err.Error()}
			}
			for name, vals := range form {
				if err := checkValues(name, "field", vals); err != nil {
					return err
				}
			}
		// A body without a type is left to its handler: the API's decode it
		// strictly themselves (bindJSON, the agent config's Parse).
		case media == echo.MIMEApplicationJSON || strings.HasSuffix(media, "+json"):
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return err // over the size limit: the body limit's own 413
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if len(bytes.TrimSpace(body)) > 0 {
				if err := checkJSONBody(body); err != nil {
					return err
				}
			}
		}
		return next(c)
	}
}

func checkValues(name, what string, vals []string) error {
	if why := tools.BadText(name); why != "" {
		return textError(tools.JoinPath("", name), "the name of a "+what+" "+why)
	}
	for _, v := range vals {
		if why := tools.BadText(v); why != "" {
			return textError(name, "the "+what+" "+name+" "+why)
		}
	}
	return nil
}

func textError(field, detail string) *runtime.Error {
	return &runtime.Error{Kind: runtime.KindInvalid, Code: "invalid_text", Title: "Text that cannot be stored", Detail: detail,
		Field: field, Fields: []runtime.FieldError{{Field: field, Code: "invalid_text", Detail: detail}}}
}
