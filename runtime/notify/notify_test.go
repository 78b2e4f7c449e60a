package notify_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/runtime/notify"
	"github.com/subako/subako/runtime/notify/notifytest"
)

func TestSignatureIsHMACOfTimestampAndBody(t *testing.T) {
	body := []byte(`{"type":"approval.pending"}`)
	// What a receiver computes, written out: HMAC-SHA256 of "timestamp.body".
	mac := hmac.New(sha256.New, []byte("whsec_test"))
	mac.Write([]byte("1700000000." + string(body)))
	got := notify.Sign("whsec_test", 1700000000, body)
	if want := "v1=" + hex.EncodeToString(mac.Sum(nil)); got != want {
		t.Fatalf("signature %q, want %q", got, want)
	}
	if !notify.Verify("whsec_test", 1700000000, body, got) {
		t.Error("a signature does not verify")
	}
	for name, ok := range map[string]bool{
		"other secret":    notify.Verify("whsec_other", 1700000000, body, got),
		"other timestamp": notify.Verify("whsec_test", 1700000001, body, got),
		"other body":      notify.Verify("whsec_test", 1700000000, append(body, ' '), got),
	} {
		if ok {
			t.Errorf("a signature verifies with %s", name)
		}
	}
}

func TestParseSMTP(t *testing.T) {
	for _, tc := range []struct{ url, from, server, err string }{
		{"smtp://u:secret-pw@mail.example.com", "s@example.com", "smtp://mail.example.com:587", ""},
		{"smtps://u:secret-pw@mail.example.com", "s@example.com", "smtps://mail.example.com:465", ""},
		{"smtp://mail.example.com:2525", "s@example.com", "smtp://mail.example.com:2525", ""},
		{"http://mail.example.com", "s@example.com", "", "scheme"},
		{"smtp://u:secret-pw@mail.example.com", "", "", "--smtp-from"},
		{"smtp://", "s@example.com", "", "needs a host"},
	} {
		s, err := notify.ParseSMTP(tc.url, tc.from)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "secret-pw") {
				t.Errorf("%s: error %v, want one naming %q and not the password", tc.url, err, tc.err)
			}
			continue
		}
		if err != nil || s.Server() != tc.server || strings.Contains(s.String(), "secret-pw") {
			t.Errorf("%s: %v %v", tc.url, s, err)
		}
	}
}

// TestEmailUsesSTARTTLSWhenOffered runs a real SMTP server that offers
// STARTTLS: the password and the message travel only inside TLS.
func TestEmailUsesSTARTTLSWhenOffered(t *testing.T) {
	cert, pool := selfSigned(t)
	mb := notifytest.Start(t, &tls.Config{Certificates: []tls.Certificate{cert}})
	s, err := notify.ParseSMTP(mb.URL, "subako@example.com")
	if err != nil {
		t.Fatal(err)
	}
	s.TLSConfig = &tls.Config{RootCAs: pool, ServerName: "mail.test"}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := s.Send(ctx, "ana@example.com", "Approval needed:\r\nBcc: x@example.com", "Open it."); err != nil {
		t.Fatal(err)
	}
	msgs := mb.Messages()
	if len(msgs) != 1 || !msgs[0].TLS {
		t.Fatalf("%d messages; want one, sent after STARTTLS", len(msgs))
	}
	if data := string(msgs[0].Data); strings.Contains(data, "\r\nBcc:") || !strings.Contains(data, "Subject: ") {
		t.Errorf("the subject broke into a header:\n%s", data)
	}
}

func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mail.test"}, DNSNames: []string{"mail.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}
