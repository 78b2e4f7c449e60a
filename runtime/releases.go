package runtime

// ReleaseInfo describes a sandbox platform release for the console: the
// image's tool versions, whether uv is there and its digest, as the server's
// release cache knows them ("" when the server does not say).
func (r *Runtime) ReleaseInfo(name string) string {
	if r.opts.ReleaseInfo == nil {
		return ""
	}
	return r.opts.ReleaseInfo(name)
}

// ReleaseInfos is ReleaseInfo of every release the server offers.
func (r *Runtime) ReleaseInfos() map[string]string {
	out := map[string]string{}
	for _, name := range r.opts.Releases {
		if info := r.ReleaseInfo(name); info != "" {
			out[name] = info
		}
	}
	return out
}

// SetReleaseInfo sets Options.ReleaseInfo; call it before the runtime
// serves requests (the server does when it wires its sandboxes).
func (r *Runtime) SetReleaseInfo(f func(name string) string) { r.opts.ReleaseInfo = f }
