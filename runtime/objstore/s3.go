// Package objstore keeps sandbox archives in S3-compatible object storage
// (AWS S3, SeaweedFS, Ceph, R2 …) through minio-go, so that every replica
// of a Subako sees the same archives and a replica that never ran a sandbox
// can restore it.
//
// It streams both ways: an archive is written to a local temporary file
// first (archive.Save needs a finished file to checksum) and uploaded from
// it in parts of a bounded size; a download reads the object as it comes.
// It never logs, and never puts in an error, the secret key.
package objstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/s3utils"

	"github.com/subako/subako/runtime/sandbox/archive"
)

// Defaults and bounds of an S3 store.
const (
	// DefaultPartSize is the multipart part size: an upload holds at most
	// PartThreads parts' worth of buffers (minio-go reads parts from the
	// file with section readers, so in practice far less).
	DefaultPartSize = 16 << 20
	// PartThreads is how many parts upload at once.
	PartThreads = 2
	// DefaultRegion is used when none is given (what SeaweedFS, MinIO and
	// AWS's default region answer to).
	DefaultRegion = "us-east-1"
	// opTimeout bounds a Stat, a Delete and the opening of a download
	// (until the first byte); pingTimeout bounds a Ping.
	opTimeout   = 30 * time.Second
	pingTimeout = 5 * time.Second
	// Metadata kept with each archive, checked when it is read.
	metaSHA256 = "Subako-Sha256"
	metaBytes  = "Subako-Bytes"
)

// Config names a bucket and how to reach it. Every field but the secret key
// may be shown to people (String does).
type Config struct {
	// URL is s3://bucket or s3://bucket/prefix; archives are kept as
	// <prefix>/archives/<id>.<generation>.tar.gz (<id>.tar.gz before
	// generations).
	URL string
	// Endpoint is host[:port] or a URL with http:// or https://; empty is
	// AWS S3 (s3.amazonaws.com).
	Endpoint string
	// Region: empty is DefaultRegion.
	Region    string
	AccessKey string
	SecretKey string
	// Insecure allows a plain http:// endpoint (archives then travel
	// unencrypted); without it a bare host is reached over https.
	Insecure bool
	// TempDir holds archives being written before they are uploaded; it is
	// created, and leftovers of a crash are removed, by NewS3.
	TempDir string
	// PartSize: 0 is DefaultPartSize; at least 5 MiB (S3's minimum).
	PartSize int64
}

// S3 is an archive.Store in an S3 bucket, plus Ping for readiness.
type S3 struct {
	client   *minio.Client
	bucket   string
	prefix   string // "" or ending in "/"
	name     string // s3://bucket/prefix (endpoint), for people
	tempDir  string
	partSize uint64
}

var _ archive.Store = (*S3)(nil)

// ParseURL splits s3://bucket/prefix. The prefix is returned without
// leading or trailing slashes ("" for none).
func ParseURL(raw string) (bucket, prefix string, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" || u.Opaque != "" {
		return "", "", fmt.Errorf("must be s3://bucket or s3://bucket/prefix, not %q", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Port() != "" {
		return "", "", fmt.Errorf("must be s3://bucket/prefix without user, port, query or fragment (credentials go in --s3-access-key and --s3-secret-key), not %q", redactURL(u))
	}
	bucket = u.Host
	if err := s3utils.CheckValidBucketNameStrict(bucket); err != nil {
		return "", "", fmt.Errorf("bucket %q: %v (3-63 of a-z, 0-9, '.' and '-')", bucket, err)
	}
	prefix = strings.Trim(u.Path, "/")
	if len(prefix) > 512 {
		return "", "", fmt.Errorf("prefix is %d bytes, over the 512 allowed", len(prefix))
	}
	for _, part := range strings.Split(prefix, "/") {
		if prefix != "" && (part == "" || part == "." || part == "..") {
			return "", "", fmt.Errorf("prefix %q: empty, '.' and '..' path parts are refused", prefix)
		}
	}
	return bucket, prefix, nil
}

// redactURL shows u without a password someone put in it by mistake.
func redactURL(u *url.URL) string {
	if u.User == nil {
		return u.String()
	}
	c := *u
	c.User = url.User(u.User.Username())
	return c.String()
}

// endpoint turns --s3-endpoint into minio-go's host[:port] and whether to
// use TLS.
func endpoint(raw string, insecure bool) (host string, secure bool, err error) {
	if raw == "" {
		return "s3.amazonaws.com", true, nil
	}
	if !strings.Contains(raw, "://") {
		if strings.ContainsAny(raw, "/?#@ ") {
			return "", false, fmt.Errorf("must be host[:port] or an http(s):// URL without a path, not %q", raw)
		}
		return raw, !insecure, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
		return "", false, fmt.Errorf("must be host[:port] or an http(s):// URL without a path or credentials, not %q", raw)
	}
	switch u.Scheme {
	case "https":
		return u.Host, true, nil
	case "http":
		if !insecure {
			return "", false, fmt.Errorf("%q is plain http: archives would travel unencrypted; add --s3-insecure to allow it", raw)
		}
		return u.Host, false, nil
	}
	return "", false, fmt.Errorf("scheme %q: must be http or https", u.Scheme)
}

// Check validates cfg without contacting the store; each error names the
// flag to fix.
func (cfg Config) Check() error {
	_, err := cfg.parse()
	return err
}

type parsed struct {
	bucket, prefix, host string
	secure               bool
}

func (cfg Config) parse() (parsed, error) {
	var p parsed
	var err error
	if p.bucket, p.prefix, err = ParseURL(cfg.URL); err != nil {
		return p, fmt.Errorf("--archive-store: %w", err)
	}
	if p.host, p.secure, err = endpoint(cfg.Endpoint, cfg.Insecure); err != nil {
		return p, fmt.Errorf("--s3-endpoint: %w", err)
	}
	if cfg.AccessKey == "" || cfg.SecretKey == "" {
		return p, errors.New("--archive-store s3://… needs --s3-access-key and --s3-secret-key " +
			"(or SUBAKO_S3_ACCESS_KEY and SUBAKO_S3_SECRET_KEY, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
	}
	if len(cfg.Region) > 64 || strings.ContainsAny(cfg.Region, "/ ") {
		return p, fmt.Errorf("--s3-region %q: must be a region name like us-east-1", cfg.Region)
	}
	if cfg.PartSize != 0 && (cfg.PartSize < 5<<20 || cfg.PartSize > 1<<30) {
		return p, fmt.Errorf("part size %d: must be from 5 MiB to 1 GiB", cfg.PartSize)
	}
	return p, nil
}

// NewS3 builds the store; it does not contact the server (Ping does), so a
// replica starts while its store is down and /readyz says so.
func NewS3(cfg Config) (*S3, error) {
	p, err := cfg.parse()
	if err != nil {
		return nil, err
	}
	if cfg.TempDir == "" {
		return nil, errors.New("objstore: TempDir is required")
	}
	if err := cleanTempDir(cfg.TempDir); err != nil {
		return nil, err
	}
	region := cfg.Region
	if region == "" {
		region = DefaultRegion
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 2 * time.Minute, // a large part's answer comes after it is stored
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
	}
	client, err := minio.New(p.host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure:       p.secure,
		Region:       region,
		Transport:    tr,
		BucketLookup: minio.BucketLookupAuto,
		MaxRetries:   2,
	})
	if err != nil {
		return nil, fmt.Errorf("--s3-endpoint: %w", err)
	}
	scheme := "https"
	if !p.secure {
		scheme = "http"
	}
	name := "s3://" + p.bucket
	if p.prefix != "" {
		name += "/" + p.prefix
	}
	name += " at " + scheme + "://" + p.host
	s := &S3{client: client, bucket: p.bucket, name: name, tempDir: cfg.TempDir, partSize: DefaultPartSize}
	if p.prefix != "" {
		s.prefix = p.prefix + "/"
	}
	if cfg.PartSize > 0 {
		s.partSize = uint64(cfg.PartSize)
	}
	return s, nil
}

// String names the store for people: s3://bucket/prefix at the endpoint.
func (s *S3) String() string { return s.name }

// Key is the object key of the archive ref:
// <prefix>/archives/<id>.<gen>.tar.gz (<id>.tar.gz before generations).
func (s *S3) Key(ref archive.Ref) string { return s.prefix + "archives/" + archive.FileName(ref) }

func (s *S3) key(ref archive.Ref) (string, error) {
	if err := archive.ValidRef(ref); err != nil {
		return "", err
	}
	return s.Key(ref), nil
}

const tmpMarker = ".tar.gz.tmp-"

func cleanTempDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("objstore: create %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("objstore: list %s: %w", dir, err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), tmpMarker) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("objstore: remove leftover %s: %w", e.Name(), err)
			}
		}
	}
	return nil
}

// unavailable wraps a failure of the store itself (not "no such archive").
func (s *S3) unavailable(op string, err error) error {
	if err == nil {
		return nil
	}
	return &archive.UnavailableError{Store: s.name, Op: op, Err: cleanErr(err)}
}

// cleanErr shortens minio-go's answers to their code and message; a
// network error stays as it is (it names the address, not the keys).
func cleanErr(err error) error {
	r := minio.ToErrorResponse(err)
	if r.Code != "" {
		return fmt.Errorf("%s: %s", r.Code, r.Message)
	}
	return err
}

func notFound(err error) bool {
	r := minio.ToErrorResponse(err)
	return r.Code == minio.NoSuchKey || r.StatusCode == http.StatusNotFound && r.Code != minio.NoSuchBucket
}

// Ping checks that the bucket answers with these credentials.
func (s *S3) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return s.unavailable("ping", err)
	}
	if !ok {
		return s.unavailable("ping", fmt.Errorf("bucket %q does not exist: create it first", s.bucket))
	}
	return nil
}

// TempFile implements archive.Store: a file in TempDir.
func (s *S3) TempFile(id string) (*os.File, error) {
	if _, err := s.key(archive.Ref{ID: id}); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(s.tempDir, id+tmpMarker+"*")
	if err != nil {
		return nil, fmt.Errorf("archive: temp file for %s: %w", id, err)
	}
	return f, nil
}

// Put implements archive.Store: it uploads the finished file tempPath
// (checksummed first, the sum kept as metadata), in parts for a large one,
// and removes the file once the object is stored. S3 makes an object
// visible only when its upload completes, so readers see the old archive
// or the new one (a new generation's key holds no older one). On error the
// file is left to the caller.
func (s *S3) Put(ctx context.Context, ref archive.Ref, tempPath string) (archive.Info, error) {
	id := ref.String()
	key, err := s.key(ref)
	if err != nil {
		return archive.Info{}, err
	}
	if filepath.Dir(tempPath) != filepath.Clean(s.tempDir) {
		return archive.Info{}, fmt.Errorf("archive: put %s: %s is not in %s", id, tempPath, s.tempDir)
	}
	f, err := os.Open(tempPath)
	if err != nil {
		return archive.Info{}, fmt.Errorf("archive: put %s: %w", id, err)
	}
	defer f.Close()
	h := sha256.New()
	size, err := io.Copy(h, f)
	if err != nil {
		return archive.Info{}, fmt.Errorf("archive: put %s: checksum: %w", id, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return archive.Info{}, fmt.Errorf("archive: put %s: %w", id, err)
	}
	_, err = s.client.PutObject(ctx, s.bucket, key, f, size, minio.PutObjectOptions{
		ContentType:  "application/gzip",
		UserMetadata: map[string]string{metaSHA256: sum, metaBytes: strconv.FormatInt(size, 10)},
		PartSize:     s.partSize,
		NumThreads:   PartThreads,
	})
	if err != nil {
		return archive.Info{}, s.unavailable("put "+id, err)
	}
	f.Close()
	if err := os.Remove(tempPath); err != nil {
		return archive.Info{}, fmt.Errorf("archive: put %s: remove uploaded %s: %w", id, tempPath, err)
	}
	info, err := s.Stat(ctx, ref)
	if err != nil {
		return archive.Info{}, err
	}
	info.SHA256 = sum
	return info, nil
}

// Open implements archive.Store: the object streams as it is read. Reading
// it to the end checks its size and sha256 against those recorded at Put;
// a mismatch is an error in place of io.EOF.
func (s *S3) Open(ctx context.Context, ref archive.Ref) (io.ReadCloser, archive.Info, error) {
	id := ref.String()
	key, err := s.key(ref)
	if err != nil {
		return nil, archive.Info{}, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, archive.Info{}, s.unavailable("open "+id, err)
	}
	st, err := s.statOpened(ctx, obj)
	if err != nil {
		obj.Close()
		if notFound(err) {
			return nil, archive.Info{}, archive.ErrNotExist
		}
		return nil, archive.Info{}, s.unavailable("open "+id, err)
	}
	want, _ := strconv.ParseInt(st.UserMetadata[metaBytes], 10, 64)
	if st.UserMetadata[metaBytes] != "" && want != st.Size {
		obj.Close()
		return nil, archive.Info{}, fmt.Errorf("archive: %s in %s is %d bytes, not the %d written: refused", id, s.name, st.Size, want)
	}
	r := &checkedReader{obj: obj, id: id, store: s.name, want: st.Size, sum: st.UserMetadata[metaSHA256], h: sha256.New()}
	return r, archive.Info{ID: ref.ID, Gen: ref.Gen, Bytes: st.Size, ModTime: st.LastModified}, nil
}

// statOpened waits at most opTimeout for the object's first answer; the
// stream itself then runs as long as its reader (the caller's ctx ends it).
func (s *S3) statOpened(ctx context.Context, obj *minio.Object) (minio.ObjectInfo, error) {
	type res struct {
		st  minio.ObjectInfo
		err error
	}
	ch := make(chan res, 1)
	go func() {
		st, err := obj.Stat()
		ch <- res{st, err}
	}()
	t := time.NewTimer(opTimeout)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.st, r.err
	case <-t.C:
		obj.Close()
		return minio.ObjectInfo{}, fmt.Errorf("no answer in %s", opTimeout)
	case <-ctx.Done():
		obj.Close()
		return minio.ObjectInfo{}, ctx.Err()
	}
}

// checkedReader streams an object and checks it at its end.
type checkedReader struct {
	obj   *minio.Object
	id    string
	store string
	want  int64
	sum   string
	n     int64
	h     interface {
		io.Writer
		Sum([]byte) []byte
	}
	err error
}

func (r *checkedReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.obj.Read(p)
	r.n += int64(n)
	r.h.Write(p[:n])
	switch {
	case err == io.EOF:
		if r.n != r.want {
			err = fmt.Errorf("archive: %s from %s ended after %d of %d bytes", r.id, r.store, r.n, r.want)
		} else if got := hex.EncodeToString(r.h.Sum(nil)); r.sum != "" && got != r.sum {
			err = fmt.Errorf("archive: %s from %s has sha256 %s, not the %s written: refused", r.id, r.store, got, r.sum)
		}
	case err != nil:
		err = &archive.UnavailableError{Store: r.store, Op: "read " + r.id, Err: cleanErr(err)}
	}
	r.err = err
	return n, err
}

func (r *checkedReader) Close() error { return r.obj.Close() }

// Stat implements archive.Store.
func (s *S3) Stat(ctx context.Context, ref archive.Ref) (archive.Info, error) {
	key, err := s.key(ref)
	if err != nil {
		return archive.Info{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	st, err := s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		if notFound(err) {
			return archive.Info{}, archive.ErrNotExist
		}
		return archive.Info{}, s.unavailable("stat "+ref.String(), err)
	}
	return archive.Info{ID: ref.ID, Gen: ref.Gen, Bytes: st.Size, ModTime: st.LastModified}, nil
}

// Delete implements archive.Store; a missing archive is not an error.
func (s *S3) Delete(ctx context.Context, ref archive.Ref) error {
	key, err := s.key(ref)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if err := s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil && !notFound(err) {
		return s.unavailable("delete "+ref.String(), err)
	}
	return nil
}

// List implements archive.Store: the objects under <prefix>/archives/<id>
// that are archives of id (an id holds no dot, so another sandbox's
// archive whose id starts with id is told apart by its name).
func (s *S3) List(ctx context.Context, id string) ([]archive.Info, error) {
	if _, err := s.key(archive.Ref{ID: id}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	dir := s.prefix + "archives/"
	var out []archive.Info
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: dir + id}) {
		if obj.Err != nil {
			return nil, s.unavailable("list "+id, obj.Err)
		}
		ref, ok := archive.ParseFileName(id, strings.TrimPrefix(obj.Key, dir))
		if !ok {
			continue
		}
		out = append(out, archive.Info{ID: id, Gen: ref.Gen, Bytes: obj.Size, ModTime: obj.LastModified})
	}
	return out, nil
}
