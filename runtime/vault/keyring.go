package vault

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// KeyFileName is the key file LoadKeyring keeps in the data folder when no
// key file is configured.
const KeyFileName = "vault.key"

// keyIDPattern keeps ids short and printable: they are stored beside every
// ciphertext and shown in errors.
var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Keyring holds the AES-256-GCM keys that seal and open secrets. The first key
// seals; every key opens, so a key file can be rotated by putting a new key on
// its first line and keeping the old ones below until every row is resealed.
type Keyring struct {
	current string
	order   []string
	aeads   map[string]cipher.AEAD
	// raw keeps the current key only to derive other keys from it (Derive).
	raw []byte
}

// Derive returns an n-byte key for another purpose (the console's cookies),
// derived from the current key with HKDF-SHA256, so one key file serves all.
func (k *Keyring) Derive(purpose string, n int) []byte {
	out, err := hkdf.Key(sha256.New, k.raw, nil, "subako "+purpose, n)
	if err != nil {
		panic(err) // only for n beyond HKDF's limit, a programming error
	}
	return out
}

// NewKeyringFromSecret makes a one-key keyring from a secret given as text
// (SUBAKO_SECRET_KEY), at least 32 characters; its key id is "env".
func NewKeyringFromSecret(secret string) (*Keyring, error) {
	if len(secret) < 32 {
		return nil, errors.New("vault: SUBAKO_SECRET_KEY must be at least 32 characters")
	}
	key, err := hkdf.Key(sha256.New, []byte(secret), nil, "subako vault key", 32)
	if err != nil {
		return nil, err
	}
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	return &Keyring{current: "env", order: []string{"env"}, aeads: map[string]cipher.AEAD{"env": aead}, raw: key}, nil
}

// LoadKeyring reads the keys from keyFile (SUBAKO_SECRET_KEY_FILE) when it is
// given, and otherwise from dataDir/vault.key, generating that file with one
// random key on first run.
func LoadKeyring(dataDir, keyFile string) (*Keyring, error) {
	if keyFile != "" {
		// A configured file is never generated: a typo in the path must not
		// silently start a fresh keyring that cannot open existing secrets.
		data, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, fmt.Errorf("vault: read key file: %w", err)
		}
		return parseKeyring(keyFile, data)
	}
	path := filepath.Join(dataDir, KeyFileName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		data, err = generateKeyFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("vault: key file: %w", err)
	}
	return parseKeyring(path, data)
}

// parseKeyring reads lines of "id:base64key"; blank lines and lines starting
// with # are skipped. The first key is the current one.
func parseKeyring(name string, data []byte) (*Keyring, error) {
	k := &Keyring{aeads: map[string]cipher.AEAD{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, aead, raw, err := parseKeyLine(line)
		if err != nil {
			return nil, fmt.Errorf("vault: key file %s line %d: %w", name, n, err)
		}
		if _, dup := k.aeads[id]; dup {
			return nil, fmt.Errorf("vault: key file %s line %d: key id %q appears twice", name, n, id)
		}
		k.aeads[id] = aead
		k.order = append(k.order, id)
		if k.raw == nil {
			k.raw = raw
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("vault: key file %s: %w", name, err)
	}
	if len(k.order) == 0 {
		return nil, fmt.Errorf("vault: key file %s holds no key (want lines of id:base64key)", name)
	}
	k.current = k.order[0]
	return k, nil
}

func parseKeyLine(line string) (string, cipher.AEAD, []byte, error) {
	id, encoded, ok := strings.Cut(line, ":")
	if !ok {
		return "", nil, nil, errors.New("want id:base64key")
	}
	if !keyIDPattern.MatchString(id) {
		return "", nil, nil, fmt.Errorf("key id %q must be 1-64 characters of A-Z, a-z, 0-9, '.', '_' and '-'", id)
	}
	key, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return "", nil, nil, fmt.Errorf("key %q is not standard base64", id)
	}
	if len(key) != 32 {
		return "", nil, nil, fmt.Errorf("key %q must be 32 bytes (AES-256), got %d", id, len(key))
	}
	aead, err := newAEAD(key)
	if err != nil {
		return "", nil, nil, fmt.Errorf("key %q: %w", id, err)
	}
	return id, aead, key, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// NewKeyLine returns a fresh "id:base64key" line with a random 256-bit key,
// for a new key file or for rotation (put it first in the file).
func NewKeyLine() (string, error) {
	key := make([]byte, 32)
	id := make([]byte, 4)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("vault: new key: %w", err)
	}
	if _, err := rand.Read(id); err != nil {
		return "", fmt.Errorf("vault: new key: %w", err)
	}
	return "k" + hex.EncodeToString(id) + ":" + base64.StdEncoding.EncodeToString(key), nil
}

// generateKeyFile writes a one-key file readable only by its owner. It is
// written beside its final name and linked into place, so a concurrent start
// never reads half a file and never overwrites a key another process made.
func generateKeyFile(path string) ([]byte, error) {
	line, err := NewKeyLine()
	if err != nil {
		return nil, err
	}
	data := []byte("# Subako vault keys: id:base64key, the first one seals. Keep this file secret and backed up.\n" + line + "\n")
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(dir, ".vault.key-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if err := writeSynced(tmp, data); err != nil {
		return nil, err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return os.ReadFile(path)
		}
		return nil, err
	}
	return data, nil
}

func writeSynced(f *os.File, data []byte) error {
	// CreateTemp makes files 0600 already; Chmod states it, whatever the umask.
	err := f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Current is the id of the key Seal uses. Rows sealed under another id are
// due for resealing after a rotation.
func (k *Keyring) Current() string { return k.current }

// KeyIDs lists every key id, the current one first.
func (k *Keyring) KeyIDs() []string { return append([]string(nil), k.order...) }

// String names the keys without their material, so a keyring that ends up in
// a log line or an error leaks nothing.
func (k *Keyring) String() string {
	return fmt.Sprintf("vault.Keyring{current: %q, keys: %d}", k.current, len(k.order))
}

// GoString keeps %#v as quiet as %v.
func (k *Keyring) GoString() string { return k.String() }
