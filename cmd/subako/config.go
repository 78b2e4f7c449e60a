package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/subako/subako/handlers"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/notify"
	"github.com/subako/subako/runtime/vault"
)

// Config is every setting of `subako serve`, each a flag with an environment
// fallback (SUBAKO_ + the flag's name in upper case, - as _).
type Config struct {
	Addr               string
	ReplicaID          string // --replica-id (replica.go)
	Data               string
	DatabaseURL        string
	BaseURL            string
	SandboxIdleTimeout time.Duration
	SandboxRetireAfter time.Duration
	// MaxSandboxes bounds the sandboxes running at once; SandboxDisk is the
	// size of each one's /workspace (and so what it can write on disk),
	// SandboxTmp of its /tmp and /dev/shm (memory).
	MaxSandboxes int
	SandboxDisk  byteSize
	SandboxTmp   byteSize
	// MinFreeDisk is the data disk's floor: under it no sandbox starts and
	// no archive is written or uploaded.
	MinFreeDisk     byteSize
	SandboxCeilings sandboxCeilings
	ApprovalTimeout time.Duration
	// PermissionDecay: days a seat's permission may go unused before the
	// nightly decay removes it, for roles without their own (0: off).
	PermissionDecay int
	// RevealFor and RevealMax bound the secrets a console form shows once on
	// the page it redirects to (held in memory until then).
	RevealFor time.Duration
	RevealMax int
	LogLevel  string
	// EgressAllowPrivate lets MCP servers and function origins on loopback,
	// private and link-local addresses be reached, for servers whose tools
	// live on their own network. Off, a version cannot reach inside it.
	EgressAllowPrivate bool
	// AllowedHosts are the host names besides the base URL's that requests
	// may be addressed to, against DNS rebinding.
	AllowedHosts string
	// MetricsToken lets a scraper read /metrics; MetricsAddr serves /metrics
	// on its own address instead of the console's.
	MetricsToken, MetricsAddr string
	// LoginThrottle bounds failed sign-ins per account and per address.
	LoginThrottle runtime.LoginThrottle
	// ReadyWriteTimeout bounds /readyz's write probe.
	ReadyWriteTimeout time.Duration
	// SMTPURL and SMTPFrom send approval emails; Notify bounds deliveries.
	SMTPURL, SMTPFrom string
	Notify            runtime.NotifyOptions
	// Limits bound function instances and what MCP servers may send (limits.go).
	Limits limitFlags
	// Volumes bound each session's volume (volumes.go).
	Volumes volumeFlags
	// Releases: the release images' cache (releases.go).
	Releases releaseFlags
	// ArchiveStore: where sandbox archives are kept (archivestore.go).
	ArchiveStore archiveStoreFlags
	// Cluster: replicas reaching each other, and the drain (cluster.go).
	Cluster clusterFlags
}

// bindDB registers the flags every database-touching command shares.
func bindDB(fs *flag.FlagSet, c *Config) {
	fs.StringVar(&c.Data, "data", "./data", "folder for the SQLite database, keys and archives")
	fs.StringVar(&c.DatabaseURL, "database-url", "", "PostgreSQL URL (postgres://…); empty uses SQLite in the data folder")
}

func bindServe(fs *flag.FlagSet, c *Config) {
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:8080", "address to listen on")
	bindDB(fs, c)
	bindReplica(fs, &c.ReplicaID)
	fs.StringVar(&c.BaseURL, "base-url", "", "public URL of the console, for links (default http://ADDR)")
	fs.DurationVar(&c.SandboxIdleTimeout, "sandbox-idle-timeout", 5*time.Minute, "idle time before a sandbox is suspended")
	fs.DurationVar(&c.SandboxRetireAfter, "sandbox-retire-after", 5*time.Hour, "suspended time before a sandbox is retired")
	fs.IntVar(&c.MaxSandboxes, "max-sandboxes", 20, "sandboxes running at once; an exec that would start one more is refused (429 capacity)")
	c.SandboxDisk = 2 << 30
	fs.Var(&c.SandboxDisk, "sandbox-disk", "size of each sandbox's /workspace (e.g. 2GiB); writing past it fails inside with ENOSPC")
	c.SandboxTmp = 512 << 20
	fs.Var(&c.SandboxTmp, "sandbox-tmp", "size of each sandbox's /tmp and of its /dev/shm (tmpfs, in memory, charged to its memory limit)")
	bindSandboxCeilings(fs, &c.SandboxCeilings)
	c.MinFreeDisk = 1 << 30
	fs.Var(&c.MinFreeDisk, "min-free-disk", "free space the data disk keeps (e.g. 1GiB): under it no sandbox starts, no archive is written or uploaded, and no file is written to a volume")
	fs.DurationVar(&c.ApprovalTimeout, "approval-timeout", 24*time.Hour, "time before a pending approval expires")
	fs.IntVar(&c.PermissionDecay, "permission-decay", 0, "days a seat's permission may go unused before the nightly decay removes it (undoably), for roles that set no decay of their own; 0 is off")
	fs.DurationVar(&c.RevealFor, "reveal-for", handlers.DefaultRevealFor,
		"how long a secret a console form made (session token, invitation link, API token) waits in memory for the page that shows it once")
	fs.IntVar(&c.RevealMax, "reveal-max", handlers.DefaultRevealMax, "secrets waiting to be shown once, at most, all browsers together (the oldest are dropped)")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.BoolVar(&c.EgressAllowPrivate, "egress-allow-private", false,
		"let MCP servers and function origins reach loopback, private and link-local addresses (cloud metadata included)")
	fs.StringVar(&c.AllowedHosts, "allowed-hosts", "",
		"comma-separated host names requests may be addressed to besides the base URL's (loopback names always may)")
	fs.StringVar(&c.MetricsToken, "metrics-token", "", "bearer token that may read /metrics (owners' and admins' API tokens always may)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "serve /metrics on this address (host:port), without a token, instead of on --addr")
	d := runtime.DefaultLoginThrottle
	fs.IntVar(&c.LoginThrottle.PerAccount, "login-attempts-per-account", d.PerAccount, "failed sign-ins allowed per account in --login-throttle-window")
	fs.IntVar(&c.LoginThrottle.PerAddress, "login-attempts-per-address", d.PerAddress, "failed sign-ins allowed per client address in --login-throttle-window")
	fs.DurationVar(&c.LoginThrottle.Window, "login-throttle-window", d.Window, "window of the sign-in limits")
	fs.StringVar(&c.SMTPURL, "smtp-url", "", "mail server for approval emails: smtp://user:pass@host:port (STARTTLS when offered) or smtps://…")
	fs.StringVar(&c.SMTPFrom, "smtp-from", "", "sender address of approval emails (required with --smtp-url)")
	fs.DurationVar(&c.Notify.Timeout, "notify-timeout", 10*time.Second, "time one notification attempt (webhook or email) may take")
	fs.IntVar(&c.Notify.Attempts, "notify-attempts", 8, "attempts per notification before it is marked failed")
	fs.DurationVar(&c.Notify.Backoff, "notify-backoff", 10*time.Second, "wait before the first retry of a notification, doubled after each failure (at most 30m)")
	fs.IntVar(&c.Notify.Workers, "notify-workers", 4, "notifications delivered at once")
	fs.DurationVar(&c.Notify.Retention, "notify-retention", 30*24*time.Hour, "how long delivered, failed and cancelled notifications and their attempts are kept")
	fs.DurationVar(&c.ReadyWriteTimeout, "readyz-write-timeout", runtime.DefaultReadyWriteTimeout,
		"longest /readyz's database write may take before the server reports not ready")
	fs.IntVar(&c.LoginThrottle.MaxKeys, "login-throttle-keys", d.MaxKeys, "accounts and addresses the sign-in throttle remembers at once (in memory, per replica)")
	bindLimits(fs, &c.Limits)
	bindVolumes(fs, &c.Volumes)
	bindReleases(fs, &c.Releases)
	bindArchiveStore(fs, &c.ArchiveStore)
	bindCluster(fs, &c.Cluster)
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
		"--sandbox-retire-after": c.SandboxRetireAfter, "--approval-timeout": c.ApprovalTimeout, "--reveal-for": c.RevealFor} {
		if d <= 0 {
			return fmt.Errorf("%s must be positive, not %s", name, d)
		}
	}
	if _, err := logLevel(c.LogLevel); err != nil {
		return err
	}
	if c.PermissionDecay < 0 || c.PermissionDecay > runtime.MaxDecayDays {
		return fmt.Errorf("--permission-decay must be from 0 (off) to %d days, not %d", runtime.MaxDecayDays, c.PermissionDecay)
	}
	if err := c.SandboxCeilings.validate(); err != nil {
		return err
	}
	if err := c.Limits.validate(); err != nil {
		return err
	}
	if err := c.Releases.validate(); err != nil {
		return err
	}
	if err := c.ArchiveStore.validate(); err != nil {
		return err
	}
	if err := c.Cluster.validate(c.DatabaseURL != ""); err != nil {
		return err
	}
	if c.RevealMax < 1 || c.RevealMax > 1_000_000 {
		return fmt.Errorf("--reveal-max must be between 1 and 1000000, not %d", c.RevealMax)
	}
	if c.MaxSandboxes < 1 {
		return fmt.Errorf("--max-sandboxes must be 1 or more, not %d", c.MaxSandboxes)
	}
	if c.SandboxDisk < 64<<20 {
		return fmt.Errorf("--sandbox-disk must be at least 64MiB, not %s", c.SandboxDisk.String())
	}
	if c.SandboxTmp < 1<<20 {
		return fmt.Errorf("--sandbox-tmp must be at least 1MiB, not %s", c.SandboxTmp.String())
	}
	if c.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			return fmt.Errorf("--metrics-addr %q: must be host:port", c.MetricsAddr)
		}
	}
	if c.Notify.Timeout <= 0 || c.Notify.Attempts <= 0 || c.Notify.Backoff <= 0 || c.Notify.Workers <= 0 || c.Notify.Retention <= 0 {
		return fmt.Errorf("--notify-timeout, --notify-attempts, --notify-backoff, --notify-workers and --notify-retention must be positive")
	}
	if c.Notify.Attempts > 50 || c.Notify.Workers > 64 || c.Notify.Timeout > 5*time.Minute {
		return fmt.Errorf("--notify-attempts is at most 50, --notify-workers at most 64, --notify-timeout at most 5m")
	}
	if c.SMTPURL != "" {
		s, err := notify.ParseSMTP(c.SMTPURL, c.SMTPFrom)
		if err != nil {
			return err
		}
		c.Notify.SMTP = s
	}
	if c.ReadyWriteTimeout <= 0 {
		return fmt.Errorf("--readyz-write-timeout must be positive, not %s", c.ReadyWriteTimeout)
	}
	for _, h := range c.allowedHosts() {
		// A URL or a path here would be taken as the host "http" and never
		// match, so the console would answer 421 to its own name.
		if strings.ContainsAny(h, "/@ ") {
			return fmt.Errorf("--allowed-hosts %q: give host names, like console.example.com, without a scheme or path", h)
		}
	}
	lt := c.LoginThrottle
	if lt.PerAccount <= 0 || lt.PerAddress <= 0 || lt.Window <= 0 || lt.MaxKeys <= 0 {
		return fmt.Errorf("--login-attempts-per-account, --login-attempts-per-address, --login-throttle-window and --login-throttle-keys must be positive")
	}
	return nil
}

// allowedHosts splits --allowed-hosts.
func (c *Config) allowedHosts() []string {
	var out []string
	for _, h := range strings.Split(c.AllowedHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

func logLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return l, fmt.Errorf("--log-level %q: must be debug, info, warn or error", s)
	}
	return l, nil
}

// keyring returns the server's keys: from SUBAKO_SECRET_KEY (one secret as
// text), from SUBAKO_SECRET_KEY_FILE (lines of id:base64key, the first current),
// or from DATA/vault.key, generated on first run with mode 0600. The keys seal
// vault secrets; the console's cookie keys are derived from the current one.
func keyring(dataDir string) (*vault.Keyring, error) {
	if v := os.Getenv("SUBAKO_SECRET_KEY"); v != "" {
		return vault.NewKeyringFromSecret(v)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	return vault.LoadKeyring(dataDir, os.Getenv("SUBAKO_SECRET_KEY_FILE"))
}

// notifyOptions are the notifier's settings with the console's base URL,
// which a notification's link starts with.
func (c *Config) notifyOptions() runtime.NotifyOptions {
	o := c.Notify
	o.BaseURL = c.BaseURL
	return o
}
