package proxy

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// A list holding only a range makes no name resolvable: a made-up name is
// answered NXDOMAIN without a lookup (which would carry it to whatever DNS
// server answers for its domain), and a request by name is refused, while the
// range's own address is reached.
func TestRangesNeverMakeANameResolvable(t *testing.T) {
	var lookups atomic.Int32
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		lookups.Add(1)
		return nil, &net.OpError{Op: "dial", Err: net.UnknownNetworkError("test: no DNS")}
	}}
	srv := http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	p, c := startProxy(t, Config{Allow: rules(t, "127.0.0.1/32"), AllowPrivate: true, Resolver: resolver})

	q := dnsmessage.Message{Header: dnsmessage.Header{ID: 7, RecursionDesired: true}, Questions: []dnsmessage.Question{{
		Name: dnsmessage.MustNewName("c2VjcmV0.exfil.example."), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}}}
	msg, err := q.Pack()
	if err != nil {
		t.Fatal(err)
	}
	answer, err := p.answerDNS(context.Background(), msg)
	if err != nil {
		t.Fatal(err)
	}
	var got dnsmessage.Message
	if err := got.Unpack(answer); err != nil {
		t.Fatal(err)
	}
	if got.Header.RCode != dnsmessage.RCodeNameError || len(got.Answers) != 0 {
		t.Fatalf("a name not listed answered %v with %d answers", got.Header.RCode, len(got.Answers))
	}
	if n := lookups.Load(); n != 0 {
		t.Fatalf("the made-up name was looked up %d times", n)
	}

	_, port, _ := net.SplitHostPort(ln.Addr().String())
	resp, err := c.Get("http://localhost:" + port + "/")
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a name not listed, asked by name: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = c.Get("http://127.0.0.1:" + port + "/")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the range's own address: %v %v", resp, err)
	}
	resp.Body.Close()
	if n := lookups.Load(); n != 0 {
		t.Fatalf("names were looked up %d times", n)
	}
}
