// Package notifytest runs real SMTP servers on loopback for tests: mailpit
// (StartMailpit), the mail catcher people run, built from the module proxy
// and read through its HTTP API; and an embedded go-smtp server (Start) that
// can offer STARTTLS with a test certificate and tells whether each message
// came over TLS. Both require AUTH PLAIN with User and Password. Tests only.
package notifytest

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// The credentials the server accepts.
const (
	User     = "subako"
	Password = "mail-pass-never-logged"
)

// Message is one accepted message, with whether it travelled inside TLS.
type Message struct {
	From string
	To   []string
	Data []byte
	TLS  bool
}

// Mailbox is a running server.
type Mailbox struct {
	// URL is the server as --smtp-url takes it, credentials included.
	URL  string
	mu   sync.Mutex
	msgs []Message
}

// Start runs a server until the test ends. With tlsConf it offers STARTTLS.
func Start(t testing.TB, tlsConf *tls.Config) *Mailbox {
	t.Helper()
	mb := &Mailbox{}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) { return &session{mb: mb, conn: c}, nil }))
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true // loopback, where net/smtp also allows PLAIN
	srv.TLSConfig = tlsConf
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	mb.URL = "smtp://" + User + ":" + Password + "@" + ln.Addr().String()
	return mb
}

// Messages returns what was accepted so far.
func (mb *Mailbox) Messages() []Message {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return slices.Clone(mb.msgs)
}

type session struct {
	mb     *Mailbox
	conn   *smtp.Conn
	authed bool
	cur    Message
}

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != User || pass != Password {
			return errors.New("bad credentials")
		}
		s.authed = true
		return nil
	}), nil
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if !s.authed {
		return smtp.ErrAuthRequired
	}
	_, tlsOn := s.conn.TLSConnectionState()
	s.cur = Message{From: from, TLS: tlsOn}
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.cur.To = append(s.cur.To, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.cur.Data = b
	s.mb.mu.Lock()
	s.mb.msgs = append(s.mb.msgs, s.cur)
	s.mb.mu.Unlock()
	return nil
}

func (s *session) Reset()        { s.cur = Message{} }
func (s *session) Logout() error { return nil }
