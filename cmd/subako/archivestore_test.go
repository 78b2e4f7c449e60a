package main

import (
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/runtime/logtest"
	"github.com/subako/subako/runtime/objstore/s3test"
	"github.com/subako/subako/runtime/sandbox/archive"
)

// TestArchiveStoreFlagsAreCheckedAtStart: a bad --archive-store or --s3-*
// stops the server with an error naming the flag, and never the secret.
func TestArchiveStoreFlagsAreCheckedAtStart(t *testing.T) {
	const secret = "s3cr3t-value-9f2c"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--archive-store", "s3:/bucket"}, "--archive-store"},
		{[]string{"--archive-store", "/var/archives"}, "--archive-store"},
		{[]string{"--archive-store", "s3://UPPER/x", "--s3-access-key", "a", "--s3-secret-key", secret}, "--archive-store"},
		{[]string{"--archive-store", "s3://bucket/x", "--s3-access-key", "a"}, "--s3-secret-key"},
		{[]string{"--archive-store", "s3://bucket/x", "--s3-access-key", "a", "--s3-secret-key", secret, "--s3-endpoint", "http://10.0.0.9:8333"}, "--s3-insecure"},
		{[]string{"--archive-store", "s3://bucket/x", "--s3-access-key", "a", "--s3-secret-key", secret, "--s3-endpoint", "https://h/path"}, "--s3-endpoint"},
		{[]string{"--s3-endpoint", "https://s3.example.com"}, "--archive-store"},
	} {
		t.Setenv("AWS_ACCESS_KEY_ID", "")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "")
		var c Config
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		bindServe(fs, &c)
		if err := parseFlags(fs, tc.args); err != nil {
			t.Fatal(err)
		}
		err := c.validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %s", tc.args, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%v: the error shows the secret: %v", tc.args, err)
		}
	}
	// The AWS variables stand in for the keys.
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	var c Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	bindServe(fs, &c)
	if err := parseFlags(fs, []string{"--archive-store", "s3://bucket/prod"}); err != nil {
		t.Fatal(err)
	}
	if err := c.validate(); err != nil {
		t.Fatalf("keys from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY: %v", err)
	}
	if s := fs.Lookup("s3-secret-key").Value.String(); strings.Contains(s, secret) {
		t.Fatalf("the flag shows its value: %q", s)
	}
}

// TestServeNeverLogsTheS3Secret: a real `subako serve` on a real S3 store,
// at debug level, through a start, readiness checks, the store going down
// and coming back, never writes the secret key (or the access key) to its
// log or its answers.
func TestServeNeverLogsTheS3Secret(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	store := s3test.Start(t)
	bin := filepath.Join(t.TempDir(), "subako")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	addr := freeAddr(t)
	base := "http://" + addr
	logs := &logtest.Buffer{}
	args := append([]string{"serve", "--addr", addr, "--data", t.TempDir(), "--log-level", "debug"}, store.Args("secrets")...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), store.Env()...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var answers strings.Builder
	readyz := func() int {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answers.Write(b)
		return resp.StatusCode
	}
	deadline := time.Now().Add(4 * time.Minute) // shipped packages compile first
	for readyz() != 200 {
		if time.Now().After(deadline) {
			t.Fatalf("not ready in 4 minutes:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	store.Stop(t)
	time.Sleep(2500 * time.Millisecond) // past the readiness answer's 2 s cache
	readyz()
	store.Restart(t)
	time.Sleep(2500 * time.Millisecond)
	readyz()
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	out := logs.String() + answers.String()
	if !strings.Contains(out, "s3://"+store.Bucket+"/secrets") {
		t.Fatalf("the log never names the store; is it wired?\n%s", out)
	}
	for _, key := range []string{store.SecretKey, store.AccessKey} {
		if strings.Contains(out, key) {
			t.Fatalf("the log or an answer shows a key of the store:\n%s", out)
		}
	}
}

// TestSwitchingToS3MovesTheLocalArchives: archives a server left in
// DATA/archives go to the store at the first start with --archive-store
// (a suspended sandbox would else start empty), the files kept aside: an
// archive of a generation, and one from before generations (<id>.tar.gz),
// each under the key its record names.
func TestSwitchingToS3MovesTheLocalArchives(t *testing.T) {
	srv := s3test.Start(t)
	ctx := t.Context()
	data := t.TempDir()
	local, err := archive.NewLocal(filepath.Join(data, "archives"))
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("from before the switch\n"), 0o644)
	saved, _, err := archive.Save(ctx, local, "sbx_old", ws, archive.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	legacy := archive.Ref{ID: "sbx_legacy"}
	if err := os.Link(filepath.Join(data, "archives", archive.FileName(saved.Ref())), filepath.Join(data, "archives", archive.FileName(legacy))); err != nil {
		t.Fatal(err)
	}
	flags := &archiveStoreFlags{Store: srv.URL("switch"), Endpoint: "http://" + srv.Endpoint, AccessKey: srv.AccessKey,
		SecretKey: secretFlag(srv.SecretKey), Insecure: true}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	store, err := openArchives(ctx, flags, data, log)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []archive.Ref{saved.Ref(), legacy} {
		dir := t.TempDir()
		if _, err := archive.Load(ctx, store, ref, dir, archive.RestoreOptions{}); err != nil {
			t.Fatalf("the local archive %s is not in the store: %v", ref, err)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "from before the switch\n" {
			t.Fatalf("restored %q", b)
		}
		if _, err := os.Stat(filepath.Join(data, "archives", "moved-to-store", archive.FileName(ref))); err != nil {
			t.Fatalf("the moved archive is not kept aside: %v", err)
		}
	}
	if n := countLocalArchives(filepath.Join(data, "archives")); n != 0 {
		t.Fatalf("%d archives still wait to be moved", n)
	}
}
