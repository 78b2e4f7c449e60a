package sandbox

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
)

// The host and the agent speak length-prefixed JSON frames over the agent's
// stdin and stdout. Every exec carries an id, so several execs can run in one
// machine at once and their results can come back in any order.
const (
	frameHello  = "hello"
	frameExec   = "exec"
	frameCancel = "cancel"
	frameResult = "result"

	// maxFrameBytes leaves room for 1 MiB of stdin escaped as \u00XX.
	maxFrameBytes = 16 << 20
)

type frame struct {
	Type   string       `json:"t"`
	ID     uint64       `json:"id,omitempty"`
	Exec   *ExecRequest `json:"exec,omitempty"`
	Result *ExecResult  `json:"result,omitempty"`
	Error  string       `json:"error,omitempty"`
	// Field is set when Error is a FieldError, so the host can rebuild it.
	Field string `json:"field,omitempty"`
	// Streams, port lists and live output (frame_stream.go).
	streamFields
}

func writeFrame(w io.Writer, f frame) error {
	body, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("sandbox: encode frame: %w", err)
	}
	buf := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(buf, uint32(len(body)))
	copy(buf[4:], body)
	_, err = w.Write(buf)
	return err
}

func readFrame(r *bufio.Reader) (frame, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return frame{}, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > maxFrameBytes {
		return frame{}, fmt.Errorf("sandbox: frame of %d bytes is over the %d limit", n, maxFrameBytes)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return frame{}, fmt.Errorf("sandbox: read frame: %w", err)
	}
	var f frame
	if err := json.Unmarshal(body, &f); err != nil {
		return frame{}, fmt.Errorf("sandbox: decode frame: %w", err)
	}
	return f, nil
}
