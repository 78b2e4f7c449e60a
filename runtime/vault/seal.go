package vault

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
)

// ErrUnknownKey means a ciphertext names a key the keyring no longer holds:
// the key was removed from the key file before its rows were resealed.
var ErrUnknownKey = errors.New("unknown key id")

// ErrTampered means a ciphertext does not open under its key with this
// additional data: it was altered, or it was sealed for another credential.
var ErrTampered = errors.New("ciphertext was altered or belongs to another credential")

// Seal encrypts plaintext under the current key and returns that key's id
// beside the ciphertext (nonce followed by the GCM output). Pass the
// credential's id as aad, so the ciphertext opens for that row only.
func (k *Keyring) Seal(plaintext, aad []byte) (keyID string, ciphertext []byte, err error) {
	aead := k.aeads[k.current]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", nil, fmt.Errorf("vault: seal: %w", err)
	}
	return k.current, aead.Seal(nonce, nonce, plaintext, aad), nil
}

// Open decrypts a ciphertext that Seal made under keyID with the same aad.
func (k *Keyring) Open(keyID string, ciphertext, aad []byte) ([]byte, error) {
	aead, ok := k.aeads[keyID]
	if !ok {
		return nil, fmt.Errorf("vault: open with key %q (the keyring holds %s): %w",
			keyID, strings.Join(k.order, ", "), ErrUnknownKey)
	}
	n := aead.NonceSize()
	if len(ciphertext) < n+aead.Overhead() {
		return nil, fmt.Errorf("vault: open with key %q: ciphertext of %d bytes is shorter than the %d-byte minimum: %w",
			keyID, len(ciphertext), n+aead.Overhead(), ErrTampered)
	}
	plain, err := aead.Open(nil, ciphertext[:n], ciphertext[n:], aad)
	if err != nil {
		return nil, fmt.Errorf("vault: open with key %q: %w", keyID, ErrTampered)
	}
	return plain, nil
}
