package main

import (
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Config is every setting of `subako serve`, each a flag with an environment
// fallback (SUBAKO_ + the flag's name in upper case, - as _).
type Config struct {
	Addr               string
	Data               string
	DatabaseURL        string
	BaseURL            string
	SandboxIdleTimeout time.Duration
	SandboxRetireAfter time.Duration
	ApprovalTimeout    time.Duration
	LogLevel           string
}

// bindDB registers the flags every database-touching command shares.
func bindDB(fs *flag.FlagSet, c *Config) {
	fs.StringVar(&c.Data, "data", "./data", "folder for the SQLite database, keys and archives")
	fs.StringVar(&c.DatabaseURL, "database-url", "", "PostgreSQL URL (postgres://…); empty uses SQLite in the data folder")
}

func bindServe(fs *flag.FlagSet, c *Config) {
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:8080", "address to listen on")
	bindDB(fs, c)
	fs.StringVar(&c.BaseURL, "base-url", "", "public URL of the console, for links (default http://ADDR)")
	fs.DurationVar(&c.SandboxIdleTimeout, "sandbox-idle-timeout", 5*time.Minute, "idle time before a sandbox is suspended")
	fs.DurationVar(&c.SandboxRetireAfter, "sandbox-retire-after", 5*time.Hour, "suspended time before a sandbox is retired")
	fs.DurationVar(&c.ApprovalTimeout, "approval-timeout", 24*time.Hour, "time before a pending approval expires")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
}

// parseFlags applies environment fallbacks for flags not given on the command line.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		env := "SUBAKO_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok && !set[f.Name] {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", env, v, err))
			}
		}
	})
	return errors.Join(errs...)
}

// validate checks the settings at start, so a typo fails loudly, not later.
func (c *Config) validate() error {
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("--addr %q: must be host:port", c.Addr)
	}
	if c.BaseURL == "" {
		c.BaseURL = "http://" + c.Addr
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	for name, d := range map[string]time.Duration{"--sandbox-idle-timeout": c.SandboxIdleTimeout,
		"--sandbox-retire-after": c.SandboxRetireAfter, "--approval-timeout": c.ApprovalTimeout} {
		if d <= 0 {
			return fmt.Errorf("%s must be positive, not %s", name, d)
		}
	}
	if _, err := logLevel(c.LogLevel); err != nil {
		return err
	}
	return nil
}

func logLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return l, fmt.Errorf("--log-level %q: must be debug, info, warn or error", s)
	}
	return l, nil
}

// secretKey returns the server's master secret: SUBAKO_SECRET_KEY,
// SUBAKO_SECRET_KEY_FILE, or a key generated on first run into the data folder
// (mode 0600). Cookie and vault keys are derived from it.
func secretKey(dataDir string) ([]byte, error) {
	if v := os.Getenv("SUBAKO_SECRET_KEY"); v != "" {
		return checkKey([]byte(v), "SUBAKO_SECRET_KEY")
	}
	if path := os.Getenv("SUBAKO_SECRET_KEY_FILE"); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("SUBAKO_SECRET_KEY_FILE: %w", err)
		}
		return checkKey([]byte(strings.TrimSpace(string(b))), "SUBAKO_SECRET_KEY_FILE")
	}
	path := filepath.Join(dataDir, "secret.key")
	if b, err := os.ReadFile(path); err == nil {
		return checkKey([]byte(strings.TrimSpace(string(b))), path)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	key := hex.EncodeToString(raw)
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return []byte(key), nil
}

func checkKey(k []byte, from string) ([]byte, error) {
	if len(k) < 32 {
		return nil, fmt.Errorf("%s: the secret key must be at least 32 characters", from)
	}
	return k, nil
}

// deriveKey gives each use of the master secret its own key.
func deriveKey(master []byte, purpose string, n int) []byte {
	k, err := hkdf.Key(sha256.New, master, nil, "subako "+purpose, n)
	if err != nil {
		panic(err) // only for n beyond HKDF's limit, a programming error
	}
	return k
}
