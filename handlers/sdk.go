package handlers

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/tsgen"
	"github.com/subako/subako/runtime/verbs"
)

// The typed client `$` (issue 14): GET /api/v1/$.d.ts declares it and GET
// /api/v1/$.js is it, both cut to the verbs the caller holds (in some scope:
// Principal.Can), so a viewer's file names only a viewer's verbs. Holding a
// verb is not being allowed every call of it: each call still passes the one
// check, and a refusal is thrown as SubakoError with missing_permission.

// HeldVerbs is the verbs of the registry p may call in some scope.
func HeldVerbs(p runtime.Principal) []verbs.Verb {
	var out []verbs.Verb
	for _, v := range verbs.All() {
		if p.Can(permissionOf(v)) {
			out = append(out, v)
		}
	}
	return out
}

func permissionOf(v verbs.Verb) string {
	if v.Permission != "" {
		return v.Permission
	}
	return v.Name
}

// VerbFuncs is each verb as a function of `$` for tsgen: $.Noun.verb, its doc
// line, its schemas; a raw upload takes its bytes as input.body, and a verb
// without an output schema answers nothing (void) or, for a GET, bytes. A
// Blob is a body too: typed by its shape, so the file needs no DOM library.
func VerbFuncs(vs []verbs.Verb) []tsgen.Func {
	out := make([]tsgen.Func, 0, len(vs))
	for _, v := range vs {
		f := tsgen.Func{Path: []string{v.Noun(), v.Short()}, Doc: v.Doc, Input: v.Input, Output: v.Output}
		if v.Body == verbs.BodyRaw {
			f.InputType = tsgen.Type(withoutBody(v.Input)) + " & {\n  /** The bytes sent as the body. */\n  body: Uint8Array | ArrayBuffer | string | { arrayBuffer(): Promise<ArrayBuffer> };\n}"
		}
		if v.Output == nil {
			f.OutputType = "void"
			if v.Method == http.MethodGet {
				f.OutputType = "Uint8Array"
			}
		}
		out = append(out, f)
	}
	return out
}

// withoutBody is an input schema without its "body" field (declared apart).
func withoutBody(s *jsonschema.Schema) *jsonschema.Schema {
	if s == nil {
		return &jsonschema.Schema{Type: "object"}
	}
	c := *s
	c.Properties = map[string]*jsonschema.Schema{}
	for k, p := range s.Properties {
		if k != "body" {
			c.Properties[k] = p
		}
	}
	c.Required = nil
	for _, r := range s.Required {
		if r != "body" {
			c.Required = append(c.Required, r)
		}
	}
	return &c
}

// ClientTypes is the $.d.ts for p, and its ETag.
func (h *Handlers) ClientTypes(p runtime.Principal) ([]byte, string) {
	return clientFiles.get("d.ts", HeldVerbs(p), func(vs []verbs.Verb) []byte {
		return []byte(tsgen.Client(VerbFuncs(vs)))
	})
}

// ClientTypesFile answers GET /api/v1/$.d.ts.
func (h *Handlers) ClientTypesFile(c echo.Context) error {
	body, etag := h.ClientTypes(principal(c))
	return serveClientFile(c, "application/typescript; charset=utf-8", body, etag)
}

// ClientScriptFile answers GET /api/v1/$.js.
func (h *Handlers) ClientScriptFile(c echo.Context) error {
	body, etag := clientFiles.get("js", HeldVerbs(principal(c)), clientScript)
	return serveClientFile(c, "text/javascript; charset=utf-8", body, etag)
}

func serveClientFile(c echo.Context, ctype string, body []byte, etag string) error {
	hdr := c.Response().Header()
	// Cut to the caller: never shared, always asked again (answered 304 when
	// the caller's verbs did not change).
	hdr.Set("Cache-Control", "private, no-cache")
	hdr.Set("Vary", "Authorization, Cookie")
	hdr.Set("ETag", etag)
	hdr.Set("X-Content-Type-Options", "nosniff")
	if match := c.Request().Header.Get("If-None-Match"); match != "" && strings.Contains(match, etag) {
		return c.NoContent(http.StatusNotModified)
	}
	return c.Blob(http.StatusOK, ctype, body)
}

// clientFiles remembers the files made for each set of verbs: there are as
// many sets as roles and narrowed tokens, not callers, and making one walks
// every schema. Bounded by count; the least recently used goes first.
var clientFiles = &fileCache{max: 64, items: map[string]*list.Element{}, order: list.New()}

type fileCache struct {
	mu    sync.Mutex
	max   int
	items map[string]*list.Element
	order *list.List // front: most recently used
}

type cachedFile struct {
	key  string
	body []byte
	etag string
}

func (fc *fileCache) get(kind string, vs []verbs.Verb, build func([]verbs.Verb) []byte) ([]byte, string) {
	hash := sha256.New()
	hash.Write([]byte(kind))
	for _, v := range vs {
		hash.Write([]byte{0})
		hash.Write([]byte(v.Name))
	}
	sum := hash.Sum(nil)
	key := hex.EncodeToString(sum)
	fc.mu.Lock()
	if el, ok := fc.items[key]; ok {
		fc.order.MoveToFront(el)
		f := el.Value.(*cachedFile)
		fc.mu.Unlock()
		return f.body, f.etag
	}
	fc.mu.Unlock()
	// Made outside the lock: two callers with a new set may both make it.
	body := build(vs)
	f := &cachedFile{key: key, body: body, etag: `"` + key[:32] + `"`}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if el, ok := fc.items[key]; ok {
		return el.Value.(*cachedFile).body, f.etag
	}
	fc.items[key] = fc.order.PushFront(f)
	for fc.order.Len() > fc.max {
		old := fc.order.Back()
		fc.order.Remove(old)
		delete(fc.items, old.Value.(*cachedFile).key)
	}
	return body, f.etag
}

// clientScript is $.js for a set of verbs: the fixed client (sdk_script.go) and
// a table of each verb's [method, path, body kind, raw body's content type],
// in registry order so the file reads like API.md.
func clientScript(vs []verbs.Verb) []byte {
	var b strings.Builder
	b.WriteString("{")
	for i, v := range vs {
		ctype := ""
		if v.Body == verbs.BodyRaw {
			ctype = "application/octet-stream"
			if v.Name == "Archive.upload" {
				ctype = "application/gzip"
			}
		}
		if i > 0 {
			b.WriteString(",")
		}
		k, _ := json.Marshal(v.Name)
		val, _ := json.Marshal([]any{v.Method, v.Path, int(v.Body), ctype})
		b.WriteString("\n  " + string(k) + ": " + string(val))
	}
	b.WriteString("\n}")
	return []byte(strings.Replace(clientJS, "/*VERBS*/{}", b.String(), 1))
}

// RequireBearerOrUser identifies the caller by a bearer token, or without
// one by the console's cookie: a signed-in page's script may fetch $.d.ts
// and $.js too. Only for reads of the caller's own files.
func (h *Handlers) RequireBearerOrUser(next echo.HandlerFunc) echo.HandlerFunc {
	bearer, user := h.RequireBearer(next), h.RequireUser(next)
	return func(c echo.Context) error {
		if c.Request().Header.Get(echo.HeaderAuthorization) != "" {
			return bearer(c)
		}
		return user(c)
	}
}
