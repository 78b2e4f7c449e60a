// Package s3test runs a real S3 server for tests: SeaweedFS's `weed server
// -s3` on loopback ports, with its data in the test's temporary folder and
// one identity whose keys the test knows. It is not a fake: archives go
// through the same HTTP, signing and multipart uploads as to AWS.
//
// The binary is found through SUBAKO_WEED, then /var/tmp/subako-tools/weed
// (what `make deps` and .ci/run build with runtime/objstore/s3test/build-weed.sh),
// then PATH; a test is skipped, saying how to build it, when there is none.
package s3test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/subako/subako/runtime/objstore"
)

// ToolsDir is where build-weed.sh leaves the weed binary.
const ToolsDir = "/var/tmp/subako-tools"

// Binary finds the weed binary: SUBAKO_WEED, ToolsDir/weed, then PATH.
func Binary() (string, bool) {
	if p := os.Getenv("SUBAKO_WEED"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
	}
	if p := filepath.Join(ToolsDir, "weed"); isExec(p) {
		return p, true
	}
	if p, err := exec.LookPath("weed"); err == nil {
		return p, true
	}
	return "", false
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// Server is a running SeaweedFS with its S3 gateway on 127.0.0.1.
type Server struct {
	// Endpoint is host:port of the S3 gateway (plain http).
	Endpoint string
	// Bucket exists once Start returns.
	Bucket               string
	AccessKey, SecretKey string

	bin  string
	dir  string
	args []string
	log  *os.File

	mu  sync.Mutex
	cmd *exec.Cmd
	// bucketMade: Restart also waits until an object can be written.
	bucketMade bool
}

// Start runs a SeaweedFS for the test, with bucket "subako-test" made, and
// stops it at the test's cleanup. Skips the test when weed is absent.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, ok := Binary()
	if !ok {
		t.Skip("no SeaweedFS weed binary: set SUBAKO_WEED, or run `make deps` (or sh runtime/objstore/s3test/build-weed.sh) to build it into " + ToolsDir)
	}
	dir := t.TempDir()
	s := &Server{bin: bin, dir: dir, Bucket: "subako-test", AccessKey: "subako-test-access", SecretKey: "subako-test-secret-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	conf := map[string]any{"identities": []any{map[string]any{
		"name":        "subako",
		"credentials": []any{map[string]string{"accessKey": s.AccessKey, "secretKey": s.SecretKey}},
		"actions":     []string{"Admin", "Read", "Write", "List", "Tagging"},
	}}}
	b, _ := json.Marshal(conf)
	confPath := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(confPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	p := freePorts(t, 8)
	s.Endpoint = "127.0.0.1:" + strconv.Itoa(p[0])
	s.args = []string{"server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir=" + filepath.Join(dir, "data"),
		"-master.port=" + strconv.Itoa(p[1]), "-master.port.grpc=" + strconv.Itoa(p[2]),
		"-volume.port=" + strconv.Itoa(p[3]), "-volume.port.grpc=" + strconv.Itoa(p[4]), "-volume.max=32",
		"-master.volumeSizeLimitMB=256", "-master.telemetry=false",
		"-filer", "-filer.port=" + strconv.Itoa(p[5]), "-filer.port.grpc=" + strconv.Itoa(p[6]),
		"-s3", "-s3.port=" + strconv.Itoa(p[0]), "-s3.port.grpc=" + strconv.Itoa(p[7]),
		"-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.config=" + confPath}
	log, err := os.Create(filepath.Join(dir, "weed.log"))
	if err != nil {
		t.Fatal(err)
	}
	s.log = log
	t.Cleanup(func() {
		s.stop()
		log.Close()
		if t.Failed() {
			if b, err := os.ReadFile(log.Name()); err == nil {
				t.Logf("weed log (last 4 KiB):\n%s", tail(b, 4096))
			}
		}
	})
	s.Restart(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := s.Client(t)
	for {
		err := c.MakeBucket(ctx, s.Bucket, minio.MakeBucketOptions{})
		if err == nil {
			break
		}
		if r := minio.ToErrorResponse(err); r.Code == "BucketAlreadyOwnedByYou" || r.Code == "BucketAlreadyExists" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("weed: make bucket %s: %v", s.Bucket, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.bucketMade = true
	s.waitWritable(t)
	return s
}

// waitWritable waits up to 90 s until an object can be written: weed's
// gateway answers before its master has a volume to write to, and a write
// then fails with InternalError ("no lock server found").
func (s *Server) waitWritable(t testing.TB) {
	t.Helper()
	c := s.Client(t)
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := c.PutObject(ctx, s.Bucket, ".s3test-probe", strings.NewReader("probe"), 5, minio.PutObjectOptions{})
		if err == nil {
			err = c.RemoveObject(ctx, s.Bucket, ".s3test-probe", minio.RemoveObjectOptions{})
		}
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("weed on %s could not write an object in 90 s: %v (log %s)", s.Endpoint, err, s.log.Name())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// Restart starts weed again (after Stop) on the same ports and data, and
// waits until the S3 gateway answers.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	if s.cmd != nil {
		s.mu.Unlock()
		t.Fatal("s3test: Restart while weed runs")
	}
	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.dir // weed writes some state in its working folder
	cmd.Stdout, cmd.Stderr = s.log, s.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		t.Fatalf("start weed: %v", err)
	}
	s.cmd = cmd
	made := s.bucketMade
	s.mu.Unlock()
	s.waitReady(t)
	if made {
		s.waitWritable(t)
	}
}

// waitReady waits up to 90 s (weed starts its master, volume server, filer
// and gateway in turn) for an S3 call that the gateway answers.
func (s *Server) waitReady(t testing.TB) {
	t.Helper()
	c := s.Client(t)
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := c.ListBuckets(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("weed's S3 gateway on %s did not answer in 90 s: %v (log %s)", s.Endpoint, err, s.log.Name())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Stop ends weed (the store is then down) until Restart.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.stop()
	// Wait until the port refuses, so a test sees the store down.
	for i := 0; i < 100; i++ {
		c, err := net.DialTimeout("tcp", s.Endpoint, 100*time.Millisecond)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("weed still listens on %s after it was stopped", s.Endpoint)
}

func (s *Server) stop() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// Client is a minio-go client of the server, for a test to look at objects.
func (s *Server) Client(t testing.TB) *minio.Client {
	t.Helper()
	c, err := minio.New(s.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""), Region: objstore.DefaultRegion})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// URL is the --archive-store value for prefix ("" for none).
func (s *Server) URL(prefix string) string {
	u := "s3://" + s.Bucket
	if prefix = strings.Trim(prefix, "/"); prefix != "" {
		u += "/" + prefix
	}
	return u
}

// Config is an objstore.Config for this server's bucket under prefix.
func (s *Server) Config(prefix, tempDir string) objstore.Config {
	return objstore.Config{URL: s.URL(prefix), Endpoint: "http://" + s.Endpoint, AccessKey: s.AccessKey,
		SecretKey: s.SecretKey, Insecure: true, TempDir: tempDir}
}

// Store opens an objstore.S3 on this server's bucket under prefix, with
// its temporary files in a folder of the test.
func (s *Server) Store(t testing.TB, prefix string) *objstore.S3 {
	t.Helper()
	st, err := objstore.NewS3(s.Config(prefix, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Args are `subako serve`'s flags for this store under prefix, the secret
// key excepted: pass Env() too (a secret on a command line is readable by
// every user of the machine).
func (s *Server) Args(prefix string) []string {
	return []string{"--archive-store", s.URL(prefix), "--s3-endpoint", "http://" + s.Endpoint, "--s3-insecure"}
}

// Env holds the keys as `subako serve` reads them from its environment.
func (s *Server) Env() []string {
	return []string{"SUBAKO_S3_ACCESS_KEY=" + s.AccessKey, "SUBAKO_S3_SECRET_KEY=" + s.SecretKey}
}

// freePorts returns n distinct loopback ports free a moment ago.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	out := make([]int, 0, n)
	for len(out) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		// Every port weed opens is given (its gRPC defaults would be
		// port+10000, perhaps another test's).
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out
}

// String names the server for messages.
func (s *Server) String() string { return fmt.Sprintf("weed S3 on %s", s.Endpoint) }
