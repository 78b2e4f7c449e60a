package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/subako/subako/runtime"
)

// replicaIDFile keeps a replica's id in its data folder, so a restart is
// the same replica: its start then interrupts the calls its earlier run left
// running at once, instead of after ReplicaDeadAfter.
const replicaIDFile = "replica-id"

func bindReplica(fs *flag.FlagSet, id *string) {
	fs.StringVar(id, "replica-id", "", "this replica's name among those sharing a PostgreSQL database (default: a random one, kept in DATA/replica-id); a restart under the same id interrupts the calls its earlier run left running")
}

// replicaID is --replica-id, else the id kept in the data folder, made on
// the first start.
func replicaID(flagID, data string) (string, error) {
	if flagID != "" {
		return flagID, runtime.CheckReplicaID(flagID)
	}
	path := filepath.Join(data, replicaIDFile)
	b, err := os.ReadFile(path)
	if err == nil {
		id := strings.TrimSpace(string(b))
		if err := runtime.CheckReplicaID(id); err != nil || id == "" {
			return "", fmt.Errorf("%s holds no usable replica id (remove it to make a new one): %v", path, err)
		}
		return id, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	r := make([]byte, 8)
	_, _ = rand.Read(r)
	id := "rep-" + hex.EncodeToString(r)
	if err := os.MkdirAll(data, 0o700); err != nil {
		return "", fmt.Errorf("data folder: %w", err)
	}
	if err := os.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return id, nil
}
