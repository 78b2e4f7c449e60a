package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// maxDNSMessage bounds a question (a UDP answer fits 512 bytes without EDNS).
const maxDNSMessage = 4096

// dnsTTL is what answers say; short, so a changed list is seen soon.
const dnsTTL = 30

// dnsOverHTTP answers one DNS question sent as POST /dns-query with the
// wire message as its body (the agent's 127.0.0.1:53 relays here). Names
// not on the list get NXDOMAIN, and are logged; names on it get the
// addresses the sandbox may reach. False when the connection should end.
func (p *Proxy) dnsOverHTTP(w io.Writer, req *http.Request) bool {
	body, err := io.ReadAll(io.LimitReader(req.Body, maxDNSMessage+1))
	if err != nil || len(body) > maxDNSMessage {
		writeError(w, http.StatusRequestEntityTooLarge, "subako egress: a DNS message is at most 4096 bytes")
		return false
	}
	answer, err := p.answerDNS(req.Context(), body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "subako egress: DNS: "+err.Error())
		return false
	}
	resp := &http.Response{StatusCode: 200, ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{"Content-Type": {"application/dns-message"}},
		ContentLength: int64(len(answer)), Body: io.NopCloser(strings.NewReader(string(answer))), Close: req.Close}
	if err := resp.Write(w); err != nil {
		return false
	}
	return !req.Close
}

// answerDNS builds the answer to one wire-format question.
func (p *Proxy) answerDNS(ctx context.Context, msg []byte) ([]byte, error) {
	var parser dnsmessage.Parser
	h, err := parser.Start(msg)
	if err != nil {
		return nil, err
	}
	q, err := parser.Question()
	if err != nil {
		return nil, err
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	name := strings.ToLower(strings.TrimSuffix(q.Name.String(), "."))
	var addrs []netip.Addr
	switch {
	case q.Class != dnsmessage.ClassINET:
		rh.RCode = dnsmessage.RCodeNotImplemented
	case !p.nameAllowed(name):
		rh.RCode = dnsmessage.RCodeNameError
		p.log(Event{Kind: EventDNSRefused, Host: name, Detail: notListed})
	case q.Type == dnsmessage.TypeA || q.Type == dnsmessage.TypeAAAA:
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		found, err := p.addresses(ctx, name)
		cancel()
		if err != nil {
			var dnsErr *net.DNSError
			if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
				rh.RCode = dnsmessage.RCodeNameError
			} else if err == errNotListed {
				rh.RCode = dnsmessage.RCodeNameError
				p.log(Event{Kind: EventDNSRefused, Host: name, Detail: notListed})
			} else if dnsErr != nil {
				rh.RCode = dnsmessage.RCodeServerFailure
			} else {
				// Every address refused by the guard: as if the name had none.
				rh.RCode = dnsmessage.RCodeNameError
				p.log(Event{Kind: EventDNSRefused, Host: name, Detail: err.Error()})
			}
		}
		for _, a := range found {
			if a.Is4() == (q.Type == dnsmessage.TypeA) {
				addrs = append(addrs, a)
			}
		}
	}
	b := dnsmessage.NewBuilder(make([]byte, 0, 512), rh)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	for i, a := range addrs {
		if i == 8 {
			break
		}
		rr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: dnsTTL}
		if a.Is4() {
			err = b.AResource(rr, dnsmessage.AResource{A: a.As4()})
		} else {
			err = b.AAAAResource(rr, dnsmessage.AAAAResource{AAAA: a.As16()})
		}
		if err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

// nameAllowed: a name the list has by its domain rules, or any name when
// there is no list; ranges never make a name resolvable.
func (p *Proxy) nameAllowed(name string) bool {
	if a, err := netip.ParseAddr(name); err == nil {
		return p.cfg.Allow == nil || p.cfg.Allow.AllowsAddr(a)
	}
	return p.allowed(name)
}
