package notify

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/smtp"
	"net/url"
	"strings"
	"time"
)

// SMTP is the mail server approvals are emailed through (--smtp-url).
type SMTP struct {
	Host     string // host name, also the name TLS verifies
	Port     string
	Username string
	password string
	// ImplicitTLS is smtps://: TLS from the first byte. Otherwise STARTTLS
	// is used whenever the server offers it.
	ImplicitTLS bool
	From        string
	// TLSConfig is for tests with their own certificate authority.
	TLSConfig *tls.Config
}

// ParseSMTP reads smtp://user:pass@host:port or smtps://… . The password
// stays inside: Server and String name the server without it.
func ParseSMTP(raw, from string) (*SMTP, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("notify: --smtp-url is not a URL (smtp://user:pass@host:port)")
	}
	s := &SMTP{Host: u.Hostname(), Port: u.Port(), From: from}
	switch u.Scheme {
	case "smtp":
		if s.Port == "" {
			s.Port = "587"
		}
	case "smtps":
		s.ImplicitTLS = true
		if s.Port == "" {
			s.Port = "465"
		}
	default:
		return nil, fmt.Errorf("notify: --smtp-url scheme %q: must be smtp or smtps", u.Scheme)
	}
	if s.Host == "" {
		return nil, errors.New("notify: --smtp-url needs a host (smtp://user:pass@host:port)")
	}
	if u.User != nil {
		s.Username = u.User.Username()
		s.password, _ = u.User.Password()
	}
	if _, err := mailAddress(from); err != nil {
		return nil, fmt.Errorf("notify: --smtp-from %q: %w", from, err)
	}
	return s, nil
}

// Server names the server for pages and logs: scheme, host and port, never
// the credentials.
func (s *SMTP) Server() string {
	scheme := "smtp"
	if s.ImplicitTLS {
		scheme = "smtps"
	}
	return scheme + "://" + net.JoinHostPort(s.Host, s.Port)
}

// String is Server, so printing an SMTP never prints its password.
func (s *SMTP) String() string { return s.Server() }

func mailAddress(a string) (string, error) {
	if a == "" || strings.ContainsAny(a, "\r\n<>\" ,") || !strings.Contains(a, "@") {
		return "", errors.New("must be one email address such as subako@example.com")
	}
	return a, nil
}

// Send delivers one plain-text email, within ctx's deadline. Errors name
// the SMTP step and the server's answer, never the password.
func (s *SMTP) Send(ctx context.Context, to, subject, text string) error {
	if _, err := mailAddress(to); err != nil {
		return fmt.Errorf("notify: recipient %q: %w", to, err)
	}
	addr := net.JoinHostPort(s.Host, s.Port)
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("notify: smtp connect %s: %w", addr, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl) // net/smtp has no context: the deadline bounds every step
	}
	tlsConf := s.TLSConfig
	if tlsConf == nil {
		tlsConf = &tls.Config{ServerName: s.Host, MinVersion: tls.VersionTLS12}
	}
	if s.ImplicitTLS {
		conn = tls.Client(conn, tlsConf)
	}
	c, err := smtp.NewClient(conn, s.Host)
	if err != nil {
		return fmt.Errorf("notify: smtp greeting: %w", err)
	}
	defer c.Close()
	if ok, _ := c.Extension("STARTTLS"); ok && !s.ImplicitTLS {
		if err := c.StartTLS(tlsConf); err != nil {
			return fmt.Errorf("notify: smtp starttls: %w", err)
		}
	}
	if s.Username != "" {
		// PlainAuth refuses to send the password unencrypted except to localhost.
		if err := c.Auth(smtp.PlainAuth("", s.Username, s.password, s.Host)); err != nil {
			return fmt.Errorf("notify: smtp auth as %s: %w", s.Username, err)
		}
	}
	if err := c.Mail(s.From); err != nil {
		return fmt.Errorf("notify: smtp MAIL FROM: %w", err)
	}
	if err := c.Rcpt(to); err != nil {
		return fmt.Errorf("notify: smtp RCPT TO: %w", err)
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("notify: smtp DATA: %w", err)
	}
	if _, err := w.Write(message(s.From, to, subject, text, time.Now())); err != nil {
		return fmt.Errorf("notify: smtp write: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("notify: smtp end of data: %w", err)
	}
	return c.Quit()
}

// message is an RFC 5322 text message; the subject is MIME-encoded, so any
// tool or agent name fits in a header without breaking it.
func message(from, to, subject, text string, now time.Time) []byte {
	var b strings.Builder
	b.WriteString("From: " + from + "\r\n")
	b.WriteString("To: " + to + "\r\n")
	b.WriteString("Subject: " + mime.QEncoding.Encode("utf-8", oneLine(subject)) + "\r\n")
	b.WriteString("Date: " + now.Format(time.RFC1123Z) + "\r\n")
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n")
	b.WriteString(strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\n", "\r\n"))
	return []byte(b.String())
}
