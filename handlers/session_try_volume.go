package handlers

import (
	"github.com/labstack/echo/v4"
)

// maxTryVolumePaths bounds the "Insert a volume path" picker.
const maxTryVolumePaths = 500

// tryVolumePaths lists the session volume's file paths for the "Try a tool"
// picker: none when volumes are off or the person may not list them.
func (h *Handlers) tryVolumePaths(c echo.Context, session string) []string {
	l, err := h.RT.VolumeList(ctx(c), principal(c), session, "")
	if err != nil {
		return nil
	}
	out := make([]string, 0, min(len(l.Files), maxTryVolumePaths))
	for _, f := range l.Files {
		if len(out) == maxTryVolumePaths {
			break
		}
		out = append(out, f.Path)
	}
	return out
}
