package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/subako/subako/runtime/objstore"
	"github.com/subako/subako/runtime/sandbox/archive"
)

// archiveStoreFlags say where sandbox archives are kept: the data folder
// (the default) or an S3-compatible bucket shared by every replica.
type archiveStoreFlags struct {
	// Store is empty (DATA/archives) or s3://bucket/prefix.
	Store     string
	Endpoint  string
	Region    string
	AccessKey string
	SecretKey secretFlag
	Insecure  bool
}

// secretFlag is a string flag that never shows its value (in -h's
// defaults, in a printed flag set), only whether it is set.
type secretFlag string

func (s *secretFlag) Set(v string) error { *s = secretFlag(v); return nil }
func (s *secretFlag) String() string {
	if s == nil || *s == "" {
		return ""
	}
	return "(set)"
}

func bindArchiveStore(fs *flag.FlagSet, a *archiveStoreFlags) {
	fs.StringVar(&a.Store, "archive-store", "", "where sandbox archives are kept: empty for DATA/archives, or s3://bucket/prefix for an S3-compatible bucket every replica shares")
	fs.StringVar(&a.Endpoint, "s3-endpoint", "", "S3 endpoint, host[:port] or https://host (empty: AWS S3)")
	fs.StringVar(&a.Region, "s3-region", "", "S3 region (empty: AWS_REGION, else "+objstore.DefaultRegion+")")
	fs.StringVar(&a.AccessKey, "s3-access-key", "", "S3 access key id (empty: AWS_ACCESS_KEY_ID)")
	fs.Var(&a.SecretKey, "s3-secret-key", "S3 secret key (empty: AWS_SECRET_ACCESS_KEY); never logged or shown; prefer the environment to the command line, which other users can read")
	fs.BoolVar(&a.Insecure, "s3-insecure", false, "allow a plain http:// --s3-endpoint (archives travel unencrypted): for a store on loopback or a private network")
}

// s3 reports whether archives go to object storage.
func (a *archiveStoreFlags) s3() bool { return a.Store != "" }

// config is the object store's settings, with the AWS environment's
// fallbacks; tempDir holds archives being written before their upload.
func (a *archiveStoreFlags) config(tempDir string) objstore.Config {
	c := objstore.Config{URL: a.Store, Endpoint: a.Endpoint, Region: a.Region, AccessKey: a.AccessKey,
		SecretKey: string(a.SecretKey), Insecure: a.Insecure, TempDir: tempDir}
	if c.AccessKey == "" {
		c.AccessKey = os.Getenv("AWS_ACCESS_KEY_ID")
	}
	if c.SecretKey == "" {
		c.SecretKey = os.Getenv("AWS_SECRET_ACCESS_KEY")
	}
	if c.Region == "" {
		c.Region = os.Getenv("AWS_REGION")
	}
	return c
}

// validate checks the flags at start without contacting the store; each
// error names the flag.
func (a *archiveStoreFlags) validate() error {
	if !a.s3() {
		for name, v := range map[string]string{"--s3-endpoint": a.Endpoint, "--s3-region": a.Region,
			"--s3-access-key": a.AccessKey, "--s3-secret-key": string(a.SecretKey)} {
			if v != "" {
				return fmt.Errorf("%s is set but --archive-store is not: give --archive-store s3://bucket/prefix, or drop %s", name, name)
			}
		}
		return nil
	}
	if !strings.HasPrefix(a.Store, "s3://") {
		return fmt.Errorf("--archive-store %q: must be s3://bucket or s3://bucket/prefix (or empty for the data folder)", a.Store)
	}
	return a.config("unused").Check()
}

// openArchives opens the archive store the flags name. An S3 store that
// does not answer yet is logged, not fatal: the replica serves, /readyz
// says the store is down, and suspensions keep their folders until it is
// back.
func openArchives(ctx context.Context, a *archiveStoreFlags, data string, log *slog.Logger) (archive.Store, error) {
	if !a.s3() {
		return archive.NewLocal(filepath.Join(data, "archives"))
	}
	s, err := objstore.NewS3(a.config(filepath.Join(data, "archives-staging")))
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.Ping(pctx); err != nil {
		log.Warn("archive store not reachable yet: suspended sandboxes keep their folders until it is", "store", s.String(), "err", err)
		if n := countLocalArchives(filepath.Join(data, "archives")); n > 0 {
			return nil, fmt.Errorf("%d archives in %s are not in the store %s yet, and it does not answer: "+
				"start once it does (they are moved then), or without --archive-store", n, filepath.Join(data, "archives"), s)
		}
	} else {
		log.Info("archive store ready", "store", s.String())
		moveLocalArchives(ctx, s, filepath.Join(data, "archives"), log)
	}
	return s, nil
}

// countLocalArchives counts the archives a local store left in dir.
func countLocalArchives(dir string) int {
	m, _ := filepath.Glob(filepath.Join(dir, "*.tar.gz"))
	return len(m)
}

// moveLocalArchives uploads the archives a server without --archive-store
// left in dir (DATA/archives) that the store lacks, and moves each one it
// uploaded (or found there already) to dir/moved-to-store: otherwise a
// suspended sandbox would find no archive and start with an empty
// /workspace. One that fails stays, to be tried at the next start.
func moveLocalArchives(ctx context.Context, s *objstore.S3, dir string, log *slog.Logger) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.tar.gz"))
	moved := 0
	for _, p := range files {
		// <id>.<generation>.tar.gz, or <id>.tar.gz before generations.
		id, gen, _ := strings.Cut(strings.TrimSuffix(filepath.Base(p), ".tar.gz"), ".")
		if err := moveLocalArchive(ctx, s, archive.Ref{ID: id, Gen: gen}, p); err != nil {
			log.Warn("archive not moved to the store; tried again at the next start", "file", p, "store", s.String(), "err", err)
			continue
		}
		moved++
	}
	if moved > 0 {
		log.Info("local archives moved to the store", "count", moved, "store", s.String(), "kept_in", filepath.Join(dir, "moved-to-store"))
	}
}

func moveLocalArchive(ctx context.Context, s *objstore.S3, ref archive.Ref, p string) error {
	_, err := s.Stat(ctx, ref)
	if errors.Is(err, archive.ErrNotExist) {
		err = uploadFile(ctx, s, ref, p)
	}
	if err != nil {
		return err
	}
	done := filepath.Join(filepath.Dir(p), "moved-to-store")
	if err := os.MkdirAll(done, 0o700); err != nil {
		return err
	}
	return os.Rename(p, filepath.Join(done, filepath.Base(p)))
}

func uploadFile(ctx context.Context, s *objstore.S3, ref archive.Ref, p string) error {
	src, err := os.Open(p)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp, err := s.TempFile(ref.ID)
	if err != nil {
		return err
	}
	_, err = io.Copy(tmp, src)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		_, err = s.Put(ctx, ref, tmp.Name())
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
