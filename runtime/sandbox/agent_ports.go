package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The agent's half of port forwarding: it dials the sandbox's own loopback
// (the host cannot: the sandbox has its own network namespace) and carries
// the connection's bytes in frames; it lists listening ports from
// /proc/net/tcp{,6}, which show the agent's, so the sandbox's, namespace.

// portDialTimeout bounds a dial inside the sandbox.
const portDialTimeout = 5 * time.Second

// maxListedPorts bounds a port list.
const maxListedPorts = 64

// other handles the frames of streams, port lists and anything newer; a
// frame it does not know is ignored.
func (a *agent) other(f frame) {
	switch f.Type {
	case frameDial:
		go a.dial(f)
	case framePorts:
		go func() {
			ports, err := listeningPorts()
			reply := frame{Type: framePorts, ID: f.ID, streamFields: streamFields{Ports: ports}}
			if err != nil {
				reply.Error = err.Error()
			}
			_ = a.send(reply)
		}()
	case frameData, frameAck, frameEOF, frameClose:
		a.streams.handle(f, a.send)
	}
}

func (a *agent) dial(f frame) {
	reply := frame{Type: frameDialed, ID: f.ID}
	conn, err := dialLoopback(f.Port)
	var end *streamEnd
	if err == nil {
		end = newStreamEnd(f.ID, a.send)
		if !a.streams.add(end) {
			conn.Close()
			err = fmt.Errorf("%d connections to the sandbox's ports are open, the limit", MaxPortStreams)
		}
	}
	if err != nil {
		reply.Error = err.Error()
		_ = a.send(reply)
		return
	}
	if err := a.send(reply); err != nil {
		conn.Close()
		end.Close()
		return
	}
	pipeStream(conn, end)
}

// dialLoopback connects to port on the sandbox's loopback, IPv4 then IPv6.
func dialLoopback(port int) (net.Conn, error) {
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("port %d: must be 1 to 65535", port)
	}
	p := strconv.Itoa(port)
	conn, err := net.DialTimeout("tcp", "127.0.0.1:"+p, portDialTimeout)
	if err != nil {
		if c6, err6 := net.DialTimeout("tcp", "[::1]:"+p, portDialTimeout); err6 == nil {
			return c6, nil
		}
		return nil, fmt.Errorf("nothing answers on port %d inside the sandbox", port)
	}
	return conn, nil
}

// pipeStream copies both ways between conn and end until both are done.
func pipeStream(conn net.Conn, end *streamEnd) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := io.Copy(end, conn)
		if err == nil {
			_ = end.CloseWrite()
		} else {
			end.Close()
		}
	}()
	_, err := io.Copy(conn, end)
	if tc, ok := conn.(*net.TCPConn); ok && err == nil {
		_ = tc.CloseWrite()
	} else {
		conn.Close()
	}
	<-done
	conn.Close()
	end.Close()
}

// listeningPorts reads the TCP sockets in LISTEN state.
func listeningPorts() ([]ListenPort, error) {
	var out []ListenPort
	var errs []error
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		ports, err := readProcNetTCP(name)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		for _, lp := range ports {
			if !isOwnPort(lp) {
				out = append(out, lp)
			}
		}
	}
	slices.SortFunc(out, func(a, b ListenPort) int {
		if a.Port != b.Port {
			return a.Port - b.Port
		}
		return strings.Compare(a.Address, b.Address)
	})
	out = slices.Compact(out)
	if len(out) > maxListedPorts {
		out = out[:maxListedPorts]
	}
	if len(out) > 0 {
		return out, nil
	}
	return out, errors.Join(errs...)
}

func readProcNetTCP(name string) ([]ListenPort, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []ListenPort
	sc := bufio.NewScanner(io.LimitReader(f, 4<<20))
	for sc.Scan() && len(out) < 4*maxListedPorts {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || fields[3] != "0A" { // 0A: TCP_LISTEN
			continue
		}
		hexAddr, hexPort, ok := strings.Cut(fields[1], ":")
		if !ok {
			continue
		}
		port, err := strconv.ParseUint(hexPort, 16, 16)
		if err != nil || port == 0 {
			continue
		}
		out = append(out, ListenPort{Port: int(port), Address: procAddr(hexAddr)})
	}
	return out, sc.Err()
}

// procAddr reads /proc/net/tcp's address: little-endian 32-bit words.
func procAddr(h string) string {
	if len(h) != 8 && len(h) != 32 {
		return "?"
	}
	b := make(net.IP, len(h)/2)
	for w := 0; w < len(h)/8; w++ {
		word, err := strconv.ParseUint(h[w*8:w*8+8], 16, 32)
		if err != nil {
			return "?"
		}
		b[w*4], b[w*4+1], b[w*4+2], b[w*4+3] = byte(word), byte(word>>8), byte(word>>16), byte(word>>24)
	}
	return b.String()
}
