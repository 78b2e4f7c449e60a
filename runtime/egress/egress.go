// Package egress guards the connections the server itself opens on a
// version's behalf (MCP servers, functions' http_fetch): a URL written in a
// version must not become a way into the networks around the server, its own
// loopback services or a cloud's metadata endpoint.
//
// The check runs at dial time on the address actually connected to, after
// DNS, so a name that resolves to a public address when it is checked and to
// a private one when it is used (DNS rebinding) gains nothing. This package
// must never resolve names itself, nor make any exception other than the
// operator's --egress-allow-private.
package egress

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// blocked are the ranges no version may reach unless the operator allows
// private egress: loopback, private, shared (CGNAT), link-local (cloud
// metadata at 169.254.169.254), "this network", IETF and benchmark ranges,
// multicast, reserved and broadcast, and their IPv6 counterparts.
var blocked = prefixes(
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
	"192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
	"192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "192.88.99.0/24",
	"::/128", "::1/128", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
	// IPv6 forms that embed or translate IPv4, or are not routed: a translator
	// on the network could carry them inside. 6to4 is judged by its embedded
	// address below; these are refused whole.
	"::/96", "::ffff:0:0/96", "64:ff9b:1::/48", "100::/64", "2001:db8::/32",
)

// PrivateIPv4 are the blocked IPv4 ranges other than loopback: what a
// sandbox's Internet mode refuses by route (its own lo stays its own).
func PrivateIPv4() []netip.Prefix {
	var out []netip.Prefix
	for _, p := range blocked {
		if p.Addr().Is4() && !p.Addr().IsLoopback() {
			out = append(out, p)
		}
	}
	return out
}

// sixToFour is 6to4: bits 16-47 are an IPv4 address, judged as that address.
var sixToFour = netip.MustParsePrefix("2002::/16")

// nat64 is the well-known NAT64 prefix: its last 32 bits are an IPv4
// address, judged as that address.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

func prefixes(list ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(list))
	for i, s := range list {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// ErrRefused is what every refused dial matches with errors.Is.
var ErrRefused = errors.New("egress refused")

// RefusedError is a dial the guard stopped. Its message says how to allow it.
type RefusedError struct {
	Addr netip.Addr
	Own  bool // one of this machine's own addresses, not a private range
}

func (e *RefusedError) Error() string {
	if e.Own {
		return fmt.Sprintf("egress to %s is refused: it is this server's own address; start the server with --egress-allow-private to allow it", e.Addr)
	}
	return fmt.Sprintf("egress to %s is refused: private and loopback addresses are blocked; start the server with --egress-allow-private to allow them", e.Addr)
}

func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Check refuses an address in a blocked range or assigned to this machine.
func Check(addr netip.Addr) error {
	addr = addr.Unmap().WithZone("")
	if nat64.Contains(addr) {
		b := addr.As16()
		addr = netip.AddrFrom4([4]byte(b[12:]))
	} else if sixToFour.Contains(addr) {
		b := addr.As16()
		if v4 := netip.AddrFrom4([4]byte(b[2:6])); Check(v4) != nil {
			return &RefusedError{Addr: addr}
		}
	}
	for _, p := range blocked {
		if p.Contains(addr) {
			return &RefusedError{Addr: addr}
		}
	}
	if own(addr) {
		return &RefusedError{Addr: addr, Own: true}
	}
	return nil
}

// own reports whether addr is on one of this machine's interfaces: the
// server reached through its public address is still the server. Interfaces
// are read at each dial (a few microseconds, rarer than handshakes) so an
// address gained later is covered too.
func own(addr netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == addr {
				return true
			}
		}
	}
	return false
}

// control is a net.Dialer Control: it sees the resolved address of every
// connection attempt, each one Happy Eyeballs tries included.
func control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("egress: dial %q: not an IP address and port", address)
	}
	return Check(ap.Addr())
}

// Dialer returns the dialer for the server's egress. allowPrivate turns the
// guard off, for servers whose MCP servers and APIs live on their own network.
func Dialer(allowPrivate bool) *net.Dialer {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = control
	}
	return d
}

// Transport returns an HTTP transport that dials through Dialer. Guarded, it
// ignores the environment's proxy settings: through a proxy the guard would
// judge the proxy's address, not the destination's.
func Transport(allowPrivate bool) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = Dialer(allowPrivate).DialContext
	if !allowPrivate {
		t.Proxy = nil
	}
	return t
}
