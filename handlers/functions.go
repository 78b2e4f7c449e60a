package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

// maxModuleUpload is read from an uploaded file: one byte past the largest
// module a server takes, so the runtime can say the file is too large.
const maxModuleUpload = 64<<20 + 1

// APIFunctionList is Function.list.
func (h *Handlers) APIFunctionList(c echo.Context) error {
	out, err := h.RT.FunctionList(ctx(c), principal(c))
	return answer(c, http.StatusOK, out, err)
}

// APIFunctionInstall is Function.install, from JSON {manifest, wasm_base64}
// or from a multipart form with the files wasm and manifest.
func (h *Handlers) APIFunctionInstall(c echo.Context) error {
	var in runtime.FunctionInstallInput
	var err error
	if strings.HasPrefix(c.Request().Header.Get(echo.HeaderContentType), echo.MIMEMultipartForm) {
		in, err = functionUpload(c)
	} else {
		err = bindJSON(c, &in)
	}
	if err != nil {
		return err
	}
	out, err := h.RT.FunctionInstall(ctx(c), principal(c), in)
	return answer(c, http.StatusCreated, out, err)
}

// APIFunctionGet is Function.get.
func (h *Handlers) APIFunctionGet(c echo.Context) error {
	out, err := h.RT.FunctionGet(ctx(c), principal(c), c.Param("name"), c.Param("version"))
	return answer(c, http.StatusOK, out, err)
}

// functionUpload reads a multipart install: the files wasm and manifest,
// and the optional fields name and version. A missing file is not an error
// here: the runtime names the missing field.
func functionUpload(c echo.Context) (runtime.FunctionInstallInput, error) {
	in := runtime.FunctionInstallInput{Name: c.FormValue("name"), Version: c.FormValue("version")}
	wasm, err := uploadedFile(c, "wasm")
	if err != nil {
		return in, err
	}
	manifest, err := uploadedFile(c, "manifest")
	if err != nil {
		return in, err
	}
	in.Wasm, in.Manifest = wasm, manifest
	return in, nil
}

func uploadedFile(c echo.Context, field string) ([]byte, error) {
	fh, err := c.FormFile(field)
	if err != nil {
		return nil, nil
	}
	f, err := fh.Open()
	if err != nil {
		return nil, fmt.Errorf("handlers: open uploaded %s: %w", field, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxModuleUpload))
	if err != nil {
		return nil, fmt.Errorf("handlers: read uploaded %s: %w", field, err)
	}
	return b, nil
}

// Functions lists installed packages with a form to install one.
func (h *Handlers) Functions(c echo.Context) error {
	return h.functionsPage(c, http.StatusOK, pages.FunctionForm{})
}

func (h *Handlers) functionsPage(c echo.Context, status int, f pages.FunctionForm) error {
	p := principal(c)
	fns, err := h.RT.FunctionList(ctx(c), p)
	if err != nil {
		return err
	}
	rows := make([]pages.FunctionRow, 0, len(fns))
	installed := map[string]string{}
	for _, v := range fns {
		installed[v.Name] = functionHref(v) // listed oldest first: the newest version wins
		row := pages.FunctionRow{Name: v.Name, Version: v.Version, Description: v.Description, Href: functionHref(v), Engine: v.Engine,
			Size: skillSize(v.WasmSize), Compile: fmt.Sprintf("%d ms", v.CompileMS), Created: isoTime(v.CreatedAt), By: v.CreatedBy}
		row.Tools = functionTools(v)
		rows = append(rows, row)
	}
	return render(c, status, pages.FunctionsPage(h.shell(c, "Functions", "functions"), rows, f, p.Can("Function.install"), pages.SeedRows(installed)))
}

// InstallFunction installs a package from the uploaded .wasm and manifest.json.
func (h *Handlers) InstallFunction(c echo.Context) error {
	in, err := functionUpload(c)
	if err != nil {
		return err
	}
	v, err := h.RT.FunctionInstall(ctx(c), principal(c), in)
	if e, ok := formError(err); ok {
		return h.functionsPage(c, statusOf(e.Kind), functionFormErrors(e))
	}
	if err != nil {
		return err
	}
	h.flash(c, "ok", fmt.Sprintf("Installed %s %s.", v.Name, v.Version))
	return redirect(c, functionHref(v))
}

// functionFormErrors shows each problem under the file it is about: the
// module, or the manifest (any field inside it, and a name or version the
// manifest does not match).
func functionFormErrors(e *runtime.Error) pages.FunctionForm {
	f := pages.FunctionForm{Errors: map[string]string{}}
	for _, fe := range e.Fields {
		key := "manifest"
		if fe.Field == "wasm" || fe.Field == "wasm_base64" {
			key = "wasm"
		}
		if prev := f.Errors[key]; prev != "" {
			f.Errors[key] = prev + "; " + fe.Detail
		} else {
			f.Errors[key] = fe.Detail
		}
	}
	if len(f.Errors) == 0 {
		f.Error = e.Error()
	}
	return f
}

// Function shows one package version: its tools with their input schemas.
func (h *Handlers) Function(c echo.Context) error {
	v, err := h.RT.FunctionGet(ctx(c), principal(c), c.Param("name"), c.Param("version"))
	if err != nil {
		return err
	}
	d := pages.FunctionDetail{Name: v.Name, Version: v.Version, Description: v.Description, SHA256: v.SHA256,
		Size: skillSize(v.WasmSize), Compile: fmt.Sprintf("%d ms", v.CompileMS), Created: isoTime(v.CreatedAt), By: v.CreatedBy,
		Timeout: limitText(v.Limits.TimeoutMS, "ms"), Memory: limitText(v.Limits.MemoryMB, "MiB"), Engine: v.Engine}
	d.Tools = functionTools(v)
	return render(c, http.StatusOK, pages.FunctionPage(h.shell(c, v.Name+" "+v.Version, "functions"), d))
}

// functionTools lists a package's tools with their input schemas indented.
func functionTools(v runtime.FunctionView) []pages.FunctionTool {
	out := make([]pages.FunctionTool, 0, len(v.Tools))
	for _, t := range v.Tools {
		var schema bytes.Buffer
		if json.Indent(&schema, t.InputSchema, "", "  ") != nil {
			schema.Reset()
			schema.Write(t.InputSchema)
		}
		ex, made := toolExample(t.InputSchema)
		out = append(out, pages.FunctionTool{Name: t.Name, Description: t.Description, Schema: schema.String(), Example: ex, ExampleFromSchema: made})
	}
	return out
}

func functionHref(v runtime.FunctionView) string {
	return "/functions/" + url.PathEscape(v.Name) + "/" + url.PathEscape(v.Version)
}

func limitText(n int, unit string) string {
	if n == 0 {
		return "server default"
	}
	return fmt.Sprintf("%d %s", n, unit)
}
