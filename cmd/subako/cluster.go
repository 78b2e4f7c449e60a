package main

import (
	"flag"
	"fmt"
	"net/url"
	"time"
)

// clusterFlags let replicas on one PostgreSQL database reach each other
// (issue 19): a sandbox's exec, files and ports are forwarded to the
// replica that runs it, at its --advertise-url, with the shared
// --internal-secret; and a stopping replica drains.
type clusterFlags struct {
	AdvertiseURL   string
	InternalSecret secretFlag
	DrainTimeout   time.Duration
}

// minInternalSecret is the shortest shared secret accepted (bytes).
const minInternalSecret = 16

func bindCluster(fs *flag.FlagSet, c *clusterFlags) {
	fs.StringVar(&c.AdvertiseURL, "advertise-url", "", "this replica's own URL for the other replicas (http://10.0.0.5:8080): they forward a sandbox's exec, files and ports to the replica that runs it; needs --internal-secret")
	fs.Var(&c.InternalSecret, "internal-secret", fmt.Sprintf("the secret every replica shares for /internal/ (at least %d bytes; env SUBAKO_INTERNAL_SECRET, which other users cannot read as they can the command line); never logged", minInternalSecret))
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", 2*time.Minute, "on SIGTERM or SIGINT, how long this replica may take to suspend (archive) its running sandboxes before it exits; /readyz answers 503 meanwhile")
}

// validate checks the flags; postgres: other replicas may share the database.
func (c *clusterFlags) validate(postgres bool) error {
	if c.DrainTimeout <= 0 || c.DrainTimeout > time.Hour {
		return fmt.Errorf("--drain-timeout must be between 1s and 1h, not %s", c.DrainTimeout)
	}
	if s := string(c.InternalSecret); s != "" && len(s) < minInternalSecret {
		return fmt.Errorf("--internal-secret must be at least %d bytes; it has %d", minInternalSecret, len(s))
	}
	if c.AdvertiseURL == "" {
		return nil
	}
	u, err := url.Parse(c.AdvertiseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || len(c.AdvertiseURL) > 2000 {
		return fmt.Errorf("--advertise-url %q must be an http:// or https:// URL with a host and no credentials, at most 2000 bytes", clipFlag(c.AdvertiseURL))
	}
	if postgres && c.InternalSecret == "" {
		return fmt.Errorf("--advertise-url needs --internal-secret (or SUBAKO_INTERNAL_SECRET): the other replicas forward sandbox requests to this one with it")
	}
	return nil
}

func clipFlag(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}
