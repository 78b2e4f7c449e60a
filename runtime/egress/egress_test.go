package egress_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/egress"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		addr    string
		refused bool
	}{
		{"127.0.0.1", true},
		{"127.8.9.10", true},
		{"::1", true},
		{"10.1.2.3", true},
		{"172.16.0.1", true},
		{"172.31.255.255", true},
		{"192.168.1.1", true},
		{"169.254.169.254", true}, // cloud metadata
		{"100.64.0.1", true},      // CGNAT
		{"0.0.0.0", true},
		{"::", true},
		{"fd00::1", true},
		{"fe80::1", true},
		{"224.0.0.1", true},
		{"ff02::1", true},
		{"255.255.255.255", true},
		{"::ffff:127.0.0.1", true},   // IPv4-mapped
		{"::ffff:10.0.0.1", true},    // IPv4-mapped
		{"64:ff9b::a9fe:a9fe", true}, // NAT64 of 169.254.169.254
		{"2002:a9fe:a9fe::1", true},  // 6to4 embedding 169.254.169.254
		{"2002:0808:0808::1", false}, // 6to4 embedding 8.8.8.8
		{"64:ff9b:1::a00:1", true},   // local-use NAT64
		{"::a00:1", true},            // IPv4-compatible 10.0.0.1
		{"100::1", true},             // discard-only
		{"2001:db8::1", true},        // documentation
		{"192.0.2.10", true},         // TEST-NET-1
		{"198.51.100.7", true},       // TEST-NET-2
		{"203.0.113.9", true},        // TEST-NET-3
		{"192.88.99.1", true},        // 6to4 relay anycast
		{"172.32.0.1", false},
		{"8.8.8.8", false},
		{"140.82.112.3", false},
		{"2606:4700:4700::1111", false},
		{"64:ff9b::808:808", false}, // NAT64 of 8.8.8.8
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			err := egress.Check(netip.MustParseAddr(tc.addr))
			if tc.refused != (err != nil) || (err != nil && !errors.Is(err, egress.ErrRefused)) {
				t.Fatalf("Check(%s) = %v, want refused=%v", tc.addr, err, tc.refused)
			}
			if err != nil && !strings.Contains(err.Error(), "--egress-allow-private") {
				t.Fatalf("Check(%s) = %q; the message does not say how to allow it", tc.addr, err)
			}
		})
	}
}

// Every address this machine answers on is the server itself.
func TestCheckRefusesOwnAddresses(t *testing.T) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skip("no interface list here:", err)
	}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, _ := netip.AddrFromSlice(n.IP)
		if err := egress.Check(ip.Unmap()); err == nil {
			t.Errorf("Check(%s), an address of this machine, was allowed", ip)
		}
	}
}

func TestTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "inside")
	}))
	t.Cleanup(srv.Close)

	_, err := (&http.Client{Transport: egress.Transport(false)}).Get(srv.URL)
	want := "egress to 127.0.0.1 is refused: private and loopback addresses are blocked; start the server with --egress-allow-private to allow them"
	if !errors.Is(err, egress.ErrRefused) || !strings.Contains(err.Error(), want) {
		t.Fatalf("GET a loopback server through the guarded transport = %v; want %q", err, want)
	}

	resp, err := (&http.Client{Transport: egress.Transport(true)}).Get(srv.URL)
	if err != nil {
		t.Fatalf("GET with private egress allowed: %v", err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "inside" {
		t.Fatalf("GET with private egress allowed answered %q", b)
	}
}

// A name that resolves to loopback is judged by the address it resolved to.
func TestTransportJudgesResolvedAddress(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	_, err := (&http.Client{Transport: egress.Transport(false)}).Get("http://localhost:" + port)
	if !errors.Is(err, egress.ErrRefused) {
		t.Fatalf("GET http://localhost through the guarded transport = %v; want refused", err)
	}
}

// BenchmarkCheck is the guard's cost per new connection (not per request:
// kept-alive connections are not checked again).
func BenchmarkCheck(b *testing.B) {
	public := netip.MustParseAddr("140.82.112.3")
	for b.Loop() {
		if err := egress.Check(public); err != nil {
			b.Fatal(err)
		}
	}
}
