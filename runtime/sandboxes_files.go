package runtime

import (
	"context"
	"errors"

	"io"
	"strings"

	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/volume"
)

// SandboxFilesLimits are what the files verbs answer with, so a client
// knows the caps before it hits them.
type SandboxFilesLimits struct {
	MaxReadBytes   int64 `json:"max_read_bytes"`
	MaxWriteBytes  int64 `json:"max_write_bytes"`
	MaxListEntries int   `json:"max_list_entries"`
	TimeoutSecs    int   `json:"timeout_secs"`
}

// SandboxListing is Sandbox.files: one folder of /workspace.
type SandboxListing struct {
	Sandbox string `json:"sandbox"`
	sandbox.Listing
	Limits SandboxFilesLimits `json:"limits"`
}

// SandboxFile is Sandbox.readFile: one file's bytes (at most the read cap).
type SandboxFile struct {
	sandbox.FileEntry
	Data   []byte `json:"-"`
	Source string `json:"source"`
}

var sandboxFilesLimits = SandboxFilesLimits{MaxReadBytes: sandbox.MaxFileReadBytes, MaxWriteBytes: sandbox.MaxFileWriteBytes,
	MaxListEntries: sandbox.MaxListEntries, TimeoutSecs: int(sandbox.FilesTimeout.Seconds())}

// sandboxPath checks a path below /workspace with the volume's rules (no
// leading /, no "..", no backslash, no control characters, 1024 bytes, 16
// names); folder allows "" for /workspace itself.
func sandboxPath(p string, folder bool) (string, error) {
	if folder {
		p = strings.TrimSuffix(p, "/")
		if p == "" {
			return "", nil
		}
	}
	var pe *volume.PathError
	if errors.As(volume.CheckPath(p), &pe) {
		detail := strings.ReplaceAll(pe.Detail, "a file's path in the volume", "a path below /workspace")
		detail = strings.ReplaceAll(detail, "the volume", "/workspace")
		return "", invalid("path", pe.Code, detail)
	}
	return p, nil
}

// filesError turns the sandbox package's refusals into answers.
func filesError(id string, err error) error {
	var fe *sandbox.FileError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sandbox.ErrNotFound):
		return notFound("sandbox", id)
	case !errors.As(err, &fe):
		return err
	}
	switch fe.Code {
	case "file_not_found":
		return &Error{Kind: KindNotFound, Code: fe.Code, Title: "Not found", Detail: fe.Detail}
	case "sandbox_not_running":
		return conflict(fe.Code, fe.Detail)
	case "file_too_large":
		return invalid("body", fe.Code, fe.Detail)
	case "workspace_full":
		return &Error{Kind: KindInvalid, Code: fe.Code, Title: "Workspace full", Detail: fe.Detail, Field: "body",
			Fields: []FieldError{{Field: "body", Code: fe.Code, Detail: fe.Detail}}}
	}
	return invalid("path", fe.Code, fe.Detail)
}

// filesVerb runs one files verb on sandbox id: the path checked (folder:
// "" is /workspace), the sandbox known, fn given the manager and the path,
// or remote given the replica that runs the sandbox (sandboxes_forward.go).
func (r *Runtime) filesVerb(ctx context.Context, p Principal, verb, id, path string, folder bool,
	fn func(mgr *sandbox.Manager, path string) error, remote func(peer SandboxPeer, url, path string) error) error {
	return r.run(ctx, p, verb, func(a *act) error {
		set := r.sandboxes()
		if set == nil {
			return errNoSandboxes
		}
		path, err := sandboxPath(path, folder)
		if err != nil {
			return err
		}
		m, err := r.loadSandbox(ctx, id)
		if err != nil {
			return err
		}
		if url, peer, err := r.sandboxElsewhere(ctx, m); err != nil {
			return err
		} else if url != "" {
			return remote(peer, url, path)
		}
		return filesError(id, fn(set.mgr, path))
	}, id)
}

// SandboxFiles is Sandbox.files: the entries of one folder of a sandbox's
// /workspace ("" is /workspace), from the running machine or, when it is
// suspended or retired, from its archive, read where it lies (nothing is
// restored).
func (r *Runtime) SandboxFiles(ctx context.Context, p Principal, id, dir string) (SandboxListing, error) {
	var out SandboxListing
	err := r.filesVerb(ctx, p, "Sandbox.files", id, dir, true, func(mgr *sandbox.Manager, dir string) error {
		l, err := mgr.ListFiles(ctx, id, dir)
		out = SandboxListing{Sandbox: id, Listing: l, Limits: sandboxFilesLimits}
		return err
	}, func(peer SandboxPeer, url, dir string) error {
		l, err := peer.Files(ctx, url, "Sandbox.files", id, dir)
		out = SandboxListing{Sandbox: id, Listing: l, Limits: sandboxFilesLimits}
		return err
	})
	return out, err
}

// SandboxReadFile is Sandbox.readFile: one file of /workspace, at most
// sandbox.MaxFileReadBytes, from the machine or the archive as Sandbox.files.
func (r *Runtime) SandboxReadFile(ctx context.Context, p Principal, id, path string) (SandboxFile, error) {
	var out SandboxFile
	err := r.filesVerb(ctx, p, "Sandbox.readFile", id, path, false, func(mgr *sandbox.Manager, path string) error {
		data, e, err := mgr.ReadFile(ctx, id, path)
		out = SandboxFile{FileEntry: e, Data: data}
		return err
	}, func(peer SandboxPeer, url, path string) error {
		data, e, err := peer.ReadFile(ctx, url, "Sandbox.readFile", id, path)
		out = SandboxFile{FileEntry: e, Data: data}
		return err
	})
	return out, err
}

// SandboxWriteFile is Sandbox.writeFile: body (at most
// sandbox.MaxFileWriteBytes) becomes the file at path in a running
// sandbox's /workspace, whole or not at all; a sandbox that is not running
// answers 409 sandbox_not_running.
func (r *Runtime) SandboxWriteFile(ctx context.Context, p Principal, id, path string, body io.Reader) (sandbox.FileEntry, error) {
	var out sandbox.FileEntry
	err := r.filesVerb(ctx, p, "Sandbox.writeFile", id, path, false, func(mgr *sandbox.Manager, path string) error {
		var err error
		out, err = mgr.WriteFile(ctx, id, path, body)
		if err == nil {
			r.opts.Log.Info("sandbox file written", "sandbox", id, "path", path, "bytes", out.Size, "by", p.Label)
		}
		return err
	}, func(peer SandboxPeer, url, path string) error {
		var err error
		out, err = peer.WriteFile(ctx, url, "Sandbox.writeFile", id, path, body)
		if err == nil {
			r.opts.Log.Info("sandbox file written", "sandbox", id, "path", path, "bytes", out.Size, "by", p.Label, "replica", url)
		}
		return err
	})
	return out, err
}
