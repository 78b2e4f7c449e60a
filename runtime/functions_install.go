package runtime

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/fn"
)

// FunctionInstallInput is Function.install. The API sends the manifest as a
// JSON object and the module as base64; the console and multipart uploads
// set Wasm instead. Name and Version, when given, must be what the manifest
// says: a guard against uploading the wrong file.
type FunctionInstallInput struct {
	Name       string          `json:"name,omitempty"`
	Version    string          `json:"version,omitempty"`
	Manifest   json.RawMessage `json:"manifest"`
	WasmBase64 string          `json:"wasm_base64,omitempty"`
	Wasm       []byte          `json:"-"`
}

// FunctionInstall is Function.install: check the manifest and the module,
// compile it once, and store both. A name and version installs once; nothing
// is stored, and nothing stays loaded, unless every step succeeds.
func (r *Runtime) FunctionInstall(ctx context.Context, p Principal, in FunctionInstallInput) (FunctionView, error) {
	var out FunctionView
	err := r.run(ctx, p, "Function.install", func(a *act) error {
		e := r.functionEngine()
		if e == nil {
			return errNoEngine
		}
		m, wasm, wasmField, err := in.decode(e.Caps())
		if err != nil {
			return err
		}
		if m.Engine == fn.EngineNative && p.Kind != PrincipalSystem {
			// A native bundle names a host command; the server ships its own
			// (python) and nobody else adds one.
			return invalid("manifest", "native_not_installable",
				`engine "native" packages ship with the server (python); install a WebAssembly package instead`)
		}
		a.target(m.Name + "@" + m.Version)
		if functionInstalled(r.db.WithContext(ctx), m.Name, m.Version) {
			return errVersionExists(m.Name, m.Version)
		}
		pkg, loadedHere, err := compileFunction(ctx, e, wasm, m, wasmField)
		if err != nil {
			return err
		}
		rec, err := r.storeFunction(ctx, p, pkg, wasm)
		if err != nil {
			if loadedHere {
				_ = e.Unload(context.WithoutCancel(ctx), m.Name, m.Version)
			}
			return err
		}
		a.target(rec.ID)
		out = functionView(rec)
		return nil
	})
	return out, err
}

// EnsureFunction installs a package as the server (System) unless its name
// and version are installed already, and returns what is installed. It is
// how the shipped packages arrive on first start; an installed version is
// never replaced, even by different bytes.
func (r *Runtime) EnsureFunction(ctx context.Context, in FunctionInstallInput) (v FunctionView, installed bool, err error) {
	var m fn.Manifest
	if err := json.Unmarshal(in.Manifest, &m); err == nil {
		if fp, err := r.functionPackage(ctx, m.Name, m.Version); err == nil {
			return functionView(fp), false, nil
		}
	}
	v, err = r.FunctionInstall(ctx, System, in)
	return v, err == nil, err
}

// decode checks the input's fields and the manifest; wasmField is the field
// that carried the module, so an error about it names what the caller sent.
func (in FunctionInstallInput) decode(caps fn.Caps) (m fn.Manifest, wasm []byte, wasmField string, err error) {
	wasm, wasmField = in.Wasm, "wasm"
	var missing []FieldError
	if wasm == nil && in.WasmBase64 != "" {
		wasmField = "wasm_base64"
		wasm, err = base64.StdEncoding.DecodeString(strings.Join(strings.Fields(in.WasmBase64), ""))
		if err != nil {
			return m, nil, "", invalid(wasmField, "invalid_base64", "wasm_base64 is not valid base64: "+err.Error())
		}
	}
	if len(wasm) == 0 {
		missing = append(missing, FieldError{Field: wasmField, Code: "wasm_required",
			Detail: "the module is required: a WASI preview1 command (.wasm), as wasm_base64 in JSON or a file named wasm"})
	}
	if raw := bytes.TrimSpace(in.Manifest); len(raw) == 0 || string(raw) == "null" {
		missing = append(missing, FieldError{Field: "manifest", Code: "manifest_required",
			Detail: "the manifest is required: manifest.json with name, version, tools and limits"})
	}
	if len(missing) > 0 {
		return m, nil, "", &Error{Kind: KindInvalid, Code: missing[0].Code, Title: "Invalid input",
			Field: missing[0].Field, Detail: missing[0].Detail, Fields: missing}
	}
	if m, err = fn.ParseManifest(in.Manifest, caps); err != nil {
		return m, nil, "", fnInstallError(err, wasmField)
	}
	name, version := orManifest(in.Name, m.Name), orManifest(in.Version, m.Version)
	var fe *fn.FieldError
	if err := m.Matches(name, version); errors.As(err, &fe) {
		return m, nil, "", invalid(fe.Field, "manifest_mismatch", fe.Detail)
	}
	return m, wasm, wasmField, nil
}

// orManifest is what the caller asked for when given, else what the manifest says.
func orManifest(asked, manifest string) string {
	if asked != "" {
		return asked
	}
	return manifest
}

// compileFunction validates and compiles a new package. An engine holding
// the same bytes already (an install whose database write lost a race, or an
// engine shared by tests) reuses them instead of refusing a version the
// database does not have; loadedHere says whether this call loaded it.
func compileFunction(ctx context.Context, e *fn.Engine, wasm []byte, m fn.Manifest, wasmField string) (*fn.Package, bool, error) {
	sum := sha256.Sum256(wasm)
	if p, ok := e.Get(m.Name, m.Version); ok && p.SHA256 == hex.EncodeToString(sum[:]) {
		return p, false, nil
	}
	p, err := e.Install(ctx, wasm, m)
	if err != nil {
		return nil, false, fnInstallError(err, wasmField)
	}
	return p, true, nil
}

// fnInstallError names the field of the request a package error is about:
// the module's field, the manifest, or a path inside the manifest.
func fnInstallError(err error, wasmField string) error {
	var fe *fn.FieldError
	switch {
	case errors.As(err, &fe) && fe.Field == "wasm":
		return invalid(wasmField, "invalid_wasm", "the module "+fe.Detail)
	case errors.As(err, &fe) && fe.Field == "manifest":
		return invalid("manifest", "invalid_manifest", "manifest "+fe.Detail)
	case errors.As(err, &fe):
		return invalid("manifest."+fe.Field, "invalid_manifest", "manifest."+fe.Field+" "+fe.Detail)
	}
	var dup *fn.DuplicateVersionError
	if errors.As(err, &dup) {
		return errVersionExists(dup.Name, dup.Version)
	}
	return fmt.Errorf("runtime: install function: %w", err)
}

func errVersionExists(name, version string) *Error {
	detail := fmt.Sprintf("%s %s is already installed, and an installed version never changes; publish the change as a new version", name, version)
	return &Error{Kind: KindConflict, Code: "version_exists", Title: "Version already installed", Field: "manifest.version",
		Detail: detail, Fields: []FieldError{{Field: "manifest.version", Code: "version_exists", Detail: detail}}}
}

func functionInstalled(tx *gorm.DB, name, version string) bool {
	var n int64
	tx.Model(&models.FunctionPackage{}).Where("name = ? AND version = ?", name, version).Count(&n)
	return n > 0
}

// storeFunction writes the package and its module in one transaction.
func (r *Runtime) storeFunction(ctx context.Context, p Principal, pkg *fn.Package, wasm []byte) (models.FunctionPackage, error) {
	m := pkg.Manifest
	// Stored as written, not HTML-escaped: schemas are shown to people, and
	// "price \u003e 10" reads worse than "price > 10".
	var manifest bytes.Buffer
	enc := json.NewEncoder(&manifest)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return models.FunctionPackage{}, fmt.Errorf("runtime: encode manifest: %w", err)
	}
	rec := models.FunctionPackage{ID: newID("fp"), Name: m.Name, Version: m.Version, Description: m.Description,
		Manifest: strings.TrimSpace(manifest.String()), WasmSHA256: pkg.SHA256, WasmSize: int64(pkg.Size),
		CompileMS: pkg.CompileTime.Milliseconds(), CreatedBy: p.Label, CreatedAt: r.now()}
	err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&rec).Error; err != nil {
			return err
		}
		return tx.Create(&models.FunctionModule{PackageID: rec.ID, Wasm: wasm}).Error
	})
	if err != nil {
		// Two installs of one version can race past the first check; the
		// UNIQUE constraint stops the second, which reads as the same 409.
		if functionInstalled(r.db.WithContext(ctx), m.Name, m.Version) {
			return rec, errVersionExists(m.Name, m.Version)
		}
		return rec, fmt.Errorf("runtime: store function %s@%s: %w", m.Name, m.Version, err)
	}
	return rec, nil
}
