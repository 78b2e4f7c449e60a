package tools

import (
	"fmt"
	"slices"
)

// Volume access levels of a function grant.
const (
	VolumeNone  = "none"
	VolumeRead  = "read"
	VolumeWrite = "write"
)

// volumeAccess reads a function grant's "volume": none (or absent), read or
// write. "none" is stored as "", so a grant that never names the volume and
// one that says none read alike.
func (v *validator) volumeAccess(o obj) string {
	return v.volumeSetting(o, "what the package's calls may do in the session's /volume")
}

// volumeSetting reads a grant's "volume" setting; what says what it grants.
func (v *validator) volumeSetting(o obj, what string) string {
	n, ok := o.fs["volume"]
	if !ok || n.kind == nullNode {
		return ""
	}
	if n.kind != stringNode {
		v.add(n.off, wrongType(o.at("volume"), "a string", n))
		return ""
	}
	if !slices.Contains([]string{VolumeNone, VolumeRead, VolumeWrite}, n.str) {
		v.add(n.off, fieldError(o.at("volume"), "invalid_volume", fmt.Sprintf(
			"volume must be none, read or write (%s); found %s", what, quoteShort(n.str))))
		return ""
	}
	if n.str == VolumeNone {
		return ""
	}
	return n.str
}
