package sandbox

// Frames of port forwarding and live exec output (issue 16 items 5 and 8).
// A preview of a server listening inside the sandbox is a byte stream the
// host multiplexes over the agent connection, with credit-based flow
// control so a slow reader on either side never stalls the connection's
// other streams or the execs' answers.
const (
	frameDial   = "dial"   // host → agent: open 127.0.0.1:Port (ID is the stream's)
	frameDialed = "dialed" // agent → host: the dial's answer (Error when refused)
	frameData   = "data"   // both ways: Data of a stream
	frameAck    = "ack"    // both ways: N bytes of the stream were consumed
	frameEOF    = "eof"    // both ways: the sender writes no more
	frameClose  = "close"  // both ways: the stream is gone
	framePorts  = "ports"  // host → agent: list listening ports; agent → host: Ports
	frameOutput = "output" // agent → host: a chunk (Data) of exec ID's Stream
)

// streamFields are the frame fields of streams, port lists and live output;
// they are embedded in frame.
type streamFields struct {
	Port   int          `json:"port,omitempty"`
	Data   []byte       `json:"data,omitempty"`
	N      int          `json:"n,omitempty"`
	Stream string       `json:"stream,omitempty"`
	Live   bool         `json:"live,omitempty"` // on an exec frame: send output frames
	Ports  []ListenPort `json:"ports,omitempty"`
}

// ListenPort is a TCP port something listens on inside a sandbox.
type ListenPort struct {
	Port int `json:"port"`
	// Address is where it listens: 0.0.0.0, 127.0.0.1, ::, ::1 or another.
	Address string `json:"address"`
}
