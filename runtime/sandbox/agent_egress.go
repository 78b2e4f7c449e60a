package sandbox

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// The sandbox's network exit (runtime/egress/proxy runs its host side). The
// driver binds a folder of the server's at EgressDir holding the proxy's
// unix socket and the certificates to trust, and sets EgressEnv to the
// grant's mode. The agent then listens on 127.0.0.1:EgressProxyPort, and in
// allowlist mode on 127.0.0.1:53 (UDP) as the resolver, relaying both to
// the socket; every exec's environment names the proxy and the bundle.
const (
	EgressEnv       = "SUBAKO_EGRESS"
	EgressDir       = "/.subako/egress"
	EgressSocket    = "proxy.sock"
	EgressCA        = "ca.pem"        // the sandbox's own certificate authority
	EgressBundle    = "ca-bundle.pem" // the system's authorities and that one
	EgressProxyPort = 3128
)

// NetworkAllowlist is a grant's third network mode: no network but the
// sandbox's own loopback, and the exit's proxy and DNS for the names and
// ranges the grant lists.
const NetworkAllowlist = "allowlist"

// Egress modes (EgressEnv's values).
const (
	EgressInternet  = "internet"  // proxy for credential hosts; the network stays open
	EgressAllowlist = "allowlist" // proxy and DNS are the only way out
)

// maxRelays bounds the connections and DNS questions relayed at once.
const maxRelays = 256

// startEgress starts the relays when the driver asked for them and returns
// the environment commands start from.
func startEgress(env []string) []string {
	mode := os.Getenv(EgressEnv)
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, EgressEnv+"=") {
			out = append(out, kv)
		}
	}
	if mode != EgressInternet && mode != EgressAllowlist {
		return out
	}
	sock := EgressDir + "/" + EgressSocket
	addr := "127.0.0.1:" + strconv.Itoa(EgressProxyPort)
	if err := relayTCP(addr, sock); err != nil {
		fmt.Fprintln(os.Stderr, "subako sandbox agent: egress proxy:", err)
		return out
	}
	ownPort("127.0.0.1", EgressProxyPort)
	if mode == EgressAllowlist {
		if err := relayDNS("127.0.0.1:53", sock); err != nil {
			fmt.Fprintln(os.Stderr, "subako sandbox agent: egress DNS:", err)
		}
	}
	proxy := "http://" + addr
	bundle := EgressDir + "/" + EgressBundle
	noProxy := "localhost,127.0.0.1,::1"
	return append(out,
		"HTTP_PROXY="+proxy, "HTTPS_PROXY="+proxy, "http_proxy="+proxy, "https_proxy="+proxy,
		"NO_PROXY="+noProxy, "no_proxy="+noProxy,
		"SSL_CERT_FILE="+bundle, "CURL_CA_BUNDLE="+bundle, "REQUESTS_CA_BUNDLE="+bundle, "GIT_SSL_CAINFO="+bundle,
		"NODE_EXTRA_CA_CERTS="+EgressDir+"/"+EgressCA,
	)
}

// relayTCP copies each connection to addr onto a new connection to sock.
func relayTCP(addr, sock string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	slots := make(chan struct{}, maxRelays)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					continue
				}
				time.Sleep(10 * time.Millisecond)
				continue
			}
			select {
			case slots <- struct{}{}:
			default:
				c.Close()
				continue
			}
			go func() {
				defer func() { <-slots }()
				defer c.Close()
				up, err := net.DialTimeout("unix", sock, 5*time.Second)
				if err != nil {
					return
				}
				defer up.Close()
				done := make(chan struct{})
				go func() {
					io.Copy(up, c)
					up.(*net.UnixConn).CloseWrite()
					close(done)
				}()
				io.Copy(c, up)
				c.(*net.TCPConn).CloseWrite()
				<-done
			}()
		}
	}()
	return nil
}

// relayDNS sends each UDP question to the host as POST /dns-query.
func relayDNS(addr, sock string) error {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	slots := make(chan struct{}, maxRelays)
	go func() {
		for {
			buf := make([]byte, 4096)
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			select {
			case slots <- struct{}{}:
			default:
				continue // dropped: the resolver asks again
			}
			go func() {
				defer func() { <-slots }()
				if answer, err := askDNS(sock, buf[:n]); err == nil {
					pc.WriteTo(answer, from)
				}
			}()
		}
	}()
	return nil
}

// askDNS is one HTTP/1.1 exchange on the socket, without net/http: the
// agent stays small.
func askDNS(sock string, q []byte) ([]byte, error) {
	c, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(15 * time.Second))
	req := fmt.Sprintf("POST /dns-query HTTP/1.1\r\nHost: egress\r\nContent-Type: application/dns-message\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", len(q))
	if _, err := c.Write(append([]byte(req), q...)); err != nil {
		return nil, err
	}
	resp, err := io.ReadAll(io.LimitReader(c, 8192))
	if err != nil {
		return nil, err
	}
	head, body, ok := bytes.Cut(resp, []byte("\r\n\r\n"))
	if !ok || !bytes.HasPrefix(head, []byte("HTTP/1.1 200 ")) {
		return nil, fmt.Errorf("egress DNS: %q", firstLine(head))
	}
	return body, nil
}

func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(b, []byte("\r\n"))
	return string(line)
}
