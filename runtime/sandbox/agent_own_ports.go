package sandbox

import (
	"strconv"
	"sync"
)

// ownPorts are the TCP ports the agent itself listens on inside the sandbox
// (the exit's proxy relay, 127.0.0.1:EgressProxyPort): they are the
// sandbox's plumbing, not a server of the agent's, and are left out of the
// listening ports (a Preview of 3128 opened the exit's proxy).
var ownPorts sync.Map // "address:port" → struct{}

func ownPort(address string, port int) {
	ownPorts.Store(address+":"+strconv.Itoa(port), struct{}{})
}

func isOwnPort(p ListenPort) bool {
	_, ok := ownPorts.Load(p.Address + ":" + strconv.Itoa(p.Port))
	return ok
}
