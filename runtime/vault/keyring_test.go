package vault

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeKeyFile(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func newKeyLine(t *testing.T) string {
	t.Helper()
	line, err := NewKeyLine()
	if err != nil {
		t.Fatal(err)
	}
	return line
}

func TestSealOpen(t *testing.T) {
	k, err := LoadKeyring(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("ghp_example-token")
	keyID, ct, err := k.Seal(secret, []byte("cred-1"))
	if err != nil {
		t.Fatal(err)
	}
	if keyID != k.Current() {
		t.Errorf("sealed with key %q, want the current key %q", keyID, k.Current())
	}
	if bytes.Contains(ct, secret) {
		t.Fatal("ciphertext contains the plaintext")
	}
	_, ct2, _ := k.Seal(secret, []byte("cred-1"))
	if bytes.Equal(ct, ct2) {
		t.Error("two seals of one secret gave the same ciphertext: the nonce is not fresh")
	}
	tampered := bytes.Clone(ct)
	tampered[len(tampered)-1] ^= 1

	tests := []struct {
		name    string
		keyID   string
		ct      []byte
		aad     string
		wantErr error
	}{
		{"round trip", keyID, ct, "cred-1", nil},
		{"wrong key id", "k-gone", ct, "cred-1", ErrUnknownKey},
		{"tampered ciphertext", keyID, tampered, "cred-1", ErrTampered},
		{"truncated ciphertext", keyID, ct[:10], "cred-1", ErrTampered},
		{"swapped onto another credential", keyID, ct, "cred-2", ErrTampered},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := k.Open(tc.keyID, tc.ct, []byte(tc.aad))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Open error = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil && !bytes.Equal(got, secret) {
				t.Fatalf("Open = %q, want %q", got, secret)
			}
			if err != nil && strings.Contains(err.Error(), string(secret)) {
				t.Fatalf("error %q shows the secret", err)
			}
		})
	}
}

func TestRotation(t *testing.T) {
	oldLine, newLine := newKeyLine(t), newKeyLine(t)
	oldID, _, _ := strings.Cut(oldLine, ":")
	newID, _, _ := strings.Cut(newLine, ":")

	before, err := LoadKeyring("", writeKeyFile(t, oldLine))
	if err != nil {
		t.Fatal(err)
	}
	_, ct, err := before.Seal([]byte("s3cret"), []byte("cred-1"))
	if err != nil {
		t.Fatal(err)
	}

	after, err := LoadKeyring("", writeKeyFile(t, "# rotated", newLine, "", oldLine))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := after.Open(oldID, ct, []byte("cred-1")); err != nil || string(got) != "s3cret" {
		t.Fatalf("old key no longer opens its ciphertext: %q, %v", got, err)
	}
	keyID, ct2, _ := after.Seal([]byte("s3cret"), []byte("cred-1"))
	if keyID != newID {
		t.Fatalf("sealed with %q after rotation, want the new key %q", keyID, newID)
	}
	if _, err := before.Open(keyID, ct2, []byte("cred-1")); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("keyring without the new key opened its ciphertext: %v", err)
	}
	if ids := after.KeyIDs(); len(ids) != 2 || ids[0] != newID || ids[1] != oldID {
		t.Fatalf("KeyIDs = %v, want [%s %s]", ids, newID, oldID)
	}
}

func TestGeneratedKeyFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	first, err := LoadKeyring(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, KeyFileName))
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Fatalf("generated key file mode %o, want 600", mode)
	}
	_, ct, _ := first.Seal([]byte("kept"), []byte("c"))
	second, err := LoadKeyring(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := second.Open(first.Current(), ct, []byte("c")); err != nil || string(got) != "kept" {
		t.Fatalf("a restart could not open what the first run sealed: %q, %v", got, err)
	}
	if s := fmt.Sprintf("%v %+v %#v", first, first, first); strings.Contains(s, "0x") || !strings.Contains(s, first.Current()) {
		t.Fatalf("formatting a keyring shows %q; want its ids and no material", s)
	}
}

func TestLoadKeyringErrors(t *testing.T) {
	line := newKeyLine(t)
	tests := []struct {
		name  string
		lines []string
		want  string
	}{
		{"empty file", []string{"# nothing"}, "holds no key"},
		{"no colon", []string{"abc"}, "line 1: want id:base64key"},
		{"short key", []string{"k1:AAAA"}, "line 1: key \"k1\" must be 32 bytes"},
		{"bad base64", []string{"k1:***"}, "not standard base64"},
		{"bad id", []string{"k 1:" + strings.SplitN(line, ":", 2)[1]}, "must be 1-64 characters"},
		{"duplicate id", []string{line, line}, "line 2: key id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadKeyring("", writeKeyFile(t, tc.lines...))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadKeyring error = %v, want one containing %q", err, tc.want)
			}
		})
	}
	t.Run("configured file missing", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := LoadKeyring(dir, filepath.Join(dir, "absent")); err == nil {
			t.Fatal("a missing configured key file was accepted")
		}
		if _, err := os.Stat(filepath.Join(dir, "absent")); err == nil {
			t.Fatal("a missing configured key file was generated")
		}
	})
}
