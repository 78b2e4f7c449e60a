package python_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subako/subako/runtime/fn"
	"github.com/subako/subako/runtime/fn/packages/python"
)

// These tests run the python package on the native engine for real: bwrap,
// Debian's /usr/bin/python3, cgroups where the tree is writable.

func engine(t testing.TB) (*fn.Engine, *fn.Package) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap is not installed (apt-get install bubblewrap)")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("Debian's python3 is not installed")
	}
	ctx := context.Background()
	// The tests' servers listen on loopback.
	e, err := fn.New(ctx, fn.Config{AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(ctx) })
	m, err := fn.ParseManifest(python.Manifest(), e.Caps())
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Install(ctx, python.Bundle(), m)
	if err != nil {
		t.Fatal(err)
	}
	if p.Engine() != fn.EngineNative {
		t.Fatalf("engine %q, want native", p.Engine())
	}
	return e, p
}

type answer struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Stdout string          `json:"stdout"`
	Stderr string          `json:"stderr"`
	Error  string          `json:"error"`
}

func run(t testing.TB, e *fn.Engine, p *fn.Package, code string, input any, req fn.CallRequest) (answer, fn.CallResult, error) {
	t.Helper()
	in, _ := json.Marshal(map[string]any{"code": code, "input": input})
	req.Tool, req.Input = "run", in
	res, err := e.Call(context.Background(), p, req)
	var a answer
	if err == nil {
		if jerr := json.Unmarshal(res.Output, &a); jerr != nil {
			t.Fatalf("output %s: %v", res.Output, jerr)
		}
	}
	return a, res, err
}

func mustRun(t testing.TB, e *fn.Engine, p *fn.Package, code string, input any, req fn.CallRequest) answer {
	t.Helper()
	a, res, err := run(t, e, p, code, input, req)
	if err != nil {
		t.Fatalf("call: %v (stderr %s)", err, res.Stderr)
	}
	if !a.OK {
		t.Fatalf("the code failed: %s\nstdout: %s", a.Error, a.Stdout)
	}
	return a
}

func TestPythonRunsCodeAndReturnsJSON(t *testing.T) {
	e, p := engine(t)
	a := mustRun(t, e, p, `
import sys, statistics
print("hello from", sys.version.split()[0])
result = {"mean": statistics.mean(input["xs"]), "exe": sys.executable}
`, map[string]any{"xs": []int{1, 2, 3, 4}}, fn.CallRequest{})
	if string(a.Result) != `{"mean": 2.5, "exe": "/usr/bin/python3"}` && !strings.Contains(string(a.Result), `"mean": 2.5`) {
		t.Fatalf("result %s", a.Result)
	}
	if !strings.HasPrefix(a.Stdout, "hello from 3.") {
		t.Fatalf("stdout %q", a.Stdout)
	}
	// The host's Debian pure-Python packages that docs/functions.md names import.
	libs := mustRun(t, e, p, `
import importlib.util
result = [m for m in ("yaml", "six", "toml", "xmltodict", "pygments", "pyparsing", "jwt", "oauthlib", "httplib2", "distro", "csv", "sqlite3") if importlib.util.find_spec(m) is None]
`, nil, fn.CallRequest{})
	if string(libs.Result) != "[]" {
		t.Errorf("missing in the sandbox: %s", libs.Result)
	}
	// An exception is the tool's answer, with its traceback.
	b, _, err := run(t, e, p, "1/0", nil, fn.CallRequest{})
	if err != nil || b.OK || !strings.Contains(b.Error, "ZeroDivisionError") {
		t.Fatalf("exception: %+v, %v", b, err)
	}
}

// Python reads a CSV the app put in the volume and writes a summary file to it.
func TestPythonCSVSummaryInTheVolume(t *testing.T) {
	e, p := engine(t)
	dir := t.TempDir()
	csv := "city,sales\nOsaka,120\nKyoto,80\nOsaka,30\nNara,50\n"
	os.MkdirAll(filepath.Join(dir, "in"), 0o750)
	if err := os.WriteFile(filepath.Join(dir, "in/sales.csv"), []byte(csv), 0o640); err != nil {
		t.Fatal(err)
	}
	vol := &fn.VolumeMount{Dir: dir, Write: true, MaxFileBytes: 1 << 20, MaxNewBytes: 1 << 20, MaxNewFiles: 10}
	a, res, err := run(t, e, p, `
import csv, io, json, subako
rows = list(csv.DictReader(io.StringIO(subako.read_text("in/sales.csv"))))
totals = {}
for r in rows:
    totals[r["city"]] = totals.get(r["city"], 0) + int(r["sales"])
summary = {"rows": len(rows), "total": sum(totals.values()), "by_city": dict(sorted(totals.items()))}
subako.write_text("out/summary.json", json.dumps(summary, sort_keys=True))
result = summary
`, nil, fn.CallRequest{Volume: vol})
	if err != nil || !a.OK {
		t.Fatalf("call: %v %+v (stderr %s)", err, a, res.Stderr)
	}
	got, err := os.ReadFile(filepath.Join(dir, "out/summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"by_city": {"Kyoto": 80, "Nara": 50, "Osaka": 150}, "rows": 4, "total": 280}`
	if string(got) != want {
		t.Fatalf("summary.json = %s, want %s", got, want)
	}
	if fmt.Sprint(res.Volume) != "[{out/summary.json write}]" {
		t.Fatalf("volume accesses %v", res.Volume)
	}
	// Read-only: the same code cannot write.
	ro := &fn.VolumeMount{Dir: dir}
	b, _, err := run(t, e, p, `import subako; subako.write_text("x.txt", "no")`, nil, fn.CallRequest{Volume: ro})
	if err != nil || b.OK || !strings.Contains(b.Error, "Read-only file system") {
		t.Fatalf("write on a read grant: %+v %v", b, err)
	}
	// No grant: no /volume at all.
	c := mustRun(t, e, p, `import os; result = os.path.exists("/volume")`, nil, fn.CallRequest{})
	if string(c.Result) != "false" {
		t.Fatalf("/volume without a grant: %s", c.Result)
	}
	// Over the room left: the file it made is removed and the call fails, naming the limit.
	small := &fn.VolumeMount{Dir: dir, Write: true, MaxFileBytes: 1 << 20, MaxNewBytes: 100, MaxNewFiles: 10}
	_, _, err = run(t, e, p, `import subako; subako.write_bytes("big.bin", b"x" * 1000)`, nil, fn.CallRequest{Volume: small})
	if err == nil || !strings.Contains(err.Error(), "--volume-max-bytes") {
		t.Fatalf("over the room: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "big.bin")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("big.bin kept: %v", err)
	}
	// A link out of the volume is removed.
	_, _, err = run(t, e, p, `import os; os.symlink("/etc/passwd", "/volume/link")`, nil, fn.CallRequest{Volume: vol})
	if err == nil || !strings.Contains(err.Error(), "not plain files") {
		t.Fatalf("symlink: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "link")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("link kept: %v", err)
	}
}

func TestNativeHasNoNetwork(t *testing.T) {
	e, p := engine(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "reached") }))
	defer srv.Close()
	a := mustRun(t, e, p, `
import socket
out = {}
for host, port in input:
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect((host, port))
        out[host] = "connected"
    except OSError as e:
        out[host] = type(e).__name__ + ": " + str(e)
    finally:
        s.close()
import os
out["interfaces"] = sorted(os.listdir("/sys/class/net")) if os.path.exists("/sys/class/net") else None
result = out
`, [][]any{{"127.0.0.1", srv.Listener.Addr().(*net.TCPAddr).Port}, {"1.1.1.1", 80}, {"10.0.2.2", 80}}, fn.CallRequest{})
	var out map[string]any
	json.Unmarshal(a.Result, &out)
	for _, host := range []string{"127.0.0.1", "1.1.1.1", "10.0.2.2"} {
		if s, _ := out[host].(string); s == "connected" || s == "" {
			t.Fatalf("%s: %v (all: %s)", host, out[host], a.Result)
		}
	}
}

func TestNativeSeesNoHostFiles(t *testing.T) {
	e, p := engine(t)
	data := t.TempDir() // stands for the data folder: another session's volume beside this one's
	mine := filepath.Join(data, "volumes", "ses_mine", "files")
	other := filepath.Join(data, "volumes", "ses_other", "files")
	os.MkdirAll(mine, 0o750)
	os.MkdirAll(other, 0o750)
	os.WriteFile(filepath.Join(other, "secret.txt"), []byte("other session"), 0o640)
	os.WriteFile(filepath.Join(data, "subako.db"), []byte("database"), 0o600)
	vol := &fn.VolumeMount{Dir: mine, Write: true, MaxFileBytes: 1 << 20, MaxNewBytes: 1 << 20, MaxNewFiles: 10}
	a := mustRun(t, e, p, `
import os
paths = input
result = {
  "exists": {p: os.path.exists(p) for p in paths},
  "root": sorted(os.listdir("/")),
  "etc": sorted(os.listdir("/etc")),
  "uid": os.getuid(),
}
try:
    open("/usr/bin/newfile", "w")
    result["usr_writable"] = True
except OSError as e:
    result["usr_writable"] = str(e)
`, []string{data, filepath.Join(data, "subako.db"), other, "/root", "/etc/shadow", "/home", "/work", "/var", "/proc/1/root/root"}, fn.CallRequest{Volume: vol})
	var out struct {
		Exists      map[string]bool `json:"exists"`
		Root, Etc   []string
		UID         int
		UsrWritable any `json:"usr_writable"`
	}
	json.Unmarshal(a.Result, &out)
	for p, ok := range out.Exists {
		if ok {
			t.Errorf("%s is visible in the sandbox", p)
		}
	}
	if out.UsrWritable == true {
		t.Error("/usr is writable")
	}
	if strings.Contains(strings.Join(out.Etc, " "), "shadow") {
		t.Errorf("/etc: %v", out.Etc)
	}
	t.Logf("the sandbox's / holds %v; /etc %v; uid %d", out.Root, out.Etc, out.UID)
}

// The broker applies http_fetch's rules, and the vault's credential never
// reaches anything the guest can read.
func TestNativeBrokerRules(t *testing.T) {
	e, p := engine(t)
	const secret = "vault-secret-5f1b9c7e"
	var otherHits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		fmt.Fprint(w, "other")
	}))
	defer other.Close()
	var sawCredential, sawGuestAuth atomic.Bool
	granted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/x", http.StatusFound)
			return
		case "/here":
			http.Redirect(w, r, "/echo", http.StatusFound)
			return
		}
		sawCredential.Store(r.Header.Get("Authorization") == "Bearer "+secret)
		sawGuestAuth.Store(r.Header.Get("X-Api-Key") != "" || strings.Contains(r.Header.Get("Authorization"), "guest"))
		names := []string{}
		for k := range r.Header {
			names = append(names, k)
		}
		w.Header().Set("Set-Cookie", "session="+secret)
		w.Header().Set("X-Seen", strings.Join(names, ","))
		fmt.Fprintf(w, `{"path": %q}`, r.URL.Path)
	}))
	defer granted.Close()
	attach := func(r *http.Request) {
		if "http://"+r.URL.Host == granted.URL {
			r.Header.Set("Authorization", "Bearer "+secret)
		}
	}
	a, res, err := run(t, e, p, `
import os, json, subako
out = {}
r = subako.fetch(input["granted"] + "/here", headers={"Authorization": "Bearer guest", "X-Api-Key": "guest", "Accept": "application/json"})
out["status"], out["body"], out["headers"] = r.status, r.json(), r.headers
for name, url in (("ungranted", input["other"] + "/x"), ("redirect", input["granted"] + "/away")):
    try:
        subako.fetch(url)
        out[name] = "fetched"
    except subako.FetchError as e:
        out[name] = str(e)
# Everything the guest can read: its environment, every file it can open
# (procfs of its own processes included), the answers it got.
found = []
needle = input["secret"].encode()
if needle in json.dumps(out).encode():
    found.append("responses")
if any(needle in (k + "=" + v).encode() for k, v in os.environ.items()):
    found.append("environ")
for top in ("/etc", "/tmp", "/opt", "/run", "/proc/self", "/proc/1", "/dev/shm"):
    for dirpath, dirs, files in os.walk(top):
        if dirpath.startswith(("/proc/self/task", "/proc/1/task", "/proc/self/fd", "/proc/1/fd")):
            continue
        for f in files:
            p = os.path.join(dirpath, f)
            try:
                with open(p, "rb") as fh:
                    if needle in fh.read(1 << 20):
                        found.append(p)
            except OSError:
                pass
out["found"] = found
result = out
`, map[string]string{"granted": granted.URL, "other": other.URL, "secret": secret},
		fn.CallRequest{Origins: []string{granted.URL}, Credentials: attach})
	if err != nil || !a.OK {
		t.Fatalf("call: %v %+v (stderr %s)", err, a, res.Stderr)
	}
	var out struct {
		Status              int
		Body                map[string]string
		Headers             map[string][]string
		Ungranted, Redirect string
		Found               []string
	}
	json.Unmarshal(a.Result, &out)
	if out.Status != 200 || out.Body["path"] != "/echo" {
		t.Fatalf("granted fetch through a same-origin redirect: %s", a.Result)
	}
	if !sawCredential.Load() || sawGuestAuth.Load() {
		t.Fatalf("the server saw the vault credential %v, the guest's auth headers %v", sawCredential.Load(), sawGuestAuth.Load())
	}
	if !strings.Contains(out.Ungranted, "is not granted to this function") {
		t.Fatalf("ungranted origin: %q", out.Ungranted)
	}
	if !strings.Contains(out.Redirect, "redirect from") || !strings.Contains(out.Redirect, "refused") {
		t.Fatalf("redirect to an ungranted origin: %q", out.Redirect)
	}
	if otherHits.Load() != 0 {
		t.Fatalf("the ungranted server was reached %d times", otherHits.Load())
	}
	if len(out.Found) > 0 {
		t.Fatalf("the credential is readable in the sandbox at %v", out.Found)
	}
	if _, ok := out.Headers["Set-Cookie"]; ok {
		t.Fatal("Set-Cookie reached the guest")
	}
	if len(res.Fetches) != 3 || len(res.Fetches[0].DroppedHeaders) != 2 {
		t.Fatalf("fetch records: %+v", res.Fetches)
	}
}

// leftovers lists host processes whose command line holds marker.
func leftovers(marker string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), marker) {
			out = append(out, ent.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

func TestNativeDeadlineAndNothingLeftRunning(t *testing.T) {
	e, p := engine(t)
	volDir := t.TempDir()
	// A call that answers but leaves a daemon behind: the daemon dies with
	// the sandbox.
	mustRun(t, e, p, `
import subprocess
subprocess.Popen(["/bin/sleep", "1234.5"], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if __import__("os").fork() == 0:
    __import__("os").execv("/bin/sleep", ["sleep", "1234.6"])
result = "left two sleepers"
`, nil, fn.CallRequest{})
	if l := leftovers("1234.5"); len(l) > 0 {
		t.Fatalf("left running after the call: %v", l)
	}
	if l := leftovers("1234.6"); len(l) > 0 {
		t.Fatalf("left running after the call: %v", l)
	}
	// The deadline kills the spinning code and what it started.
	start := time.Now()
	_, res, err := run(t, e, p, `
import subprocess
subprocess.Popen(["/bin/sleep", "1234.7"], start_new_session=True)
while True:
    pass
`, nil, fn.CallRequest{Timeout: 1500 * time.Millisecond,
		Volume: &fn.VolumeMount{Dir: volDir, Write: true, MaxFileBytes: 1 << 20, MaxNewBytes: 1 << 20, MaxNewFiles: 10}})
	if !errors.Is(err, fn.ErrTimeout) || !strings.Contains(err.Error(), "stopped at the deadline of 1.5s") {
		t.Fatalf("err %v, want the call's deadline of 1.5s", err)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("the deadline of 1.5 s took %s", took)
	}
	if res.Duration < 1500*time.Millisecond {
		t.Fatalf("duration %s is under the deadline", res.Duration)
	}
	if l := leftovers("1234.7"); len(l) > 0 {
		t.Fatalf("left running after the deadline: %v", l)
	}
	// Nor mounts (the volume's staging bind) nor cgroups.
	// Only this call's: other test binaries run one-shot sandboxes at the
	// same time, and their staging mounts are theirs to remove.
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.Contains(line, "subako-oneshot-") && strings.Contains(line, volDir) {
			t.Fatalf("this call's staging mount is left in the host's mount table: %s", line)
		}
	}
	for _, ctl := range []string{"memory/subako", "pids/subako", "subako"} {
		ents, _ := os.ReadDir(filepath.Join("/sys/fs/cgroup", ctl))
		for _, ent := range ents {
			if !ent.IsDir() || !strings.HasPrefix(ent.Name(), "fn-") {
				continue
			}
			// Other test binaries' calls run meanwhile: theirs go when
			// their calls end, within seconds; one left by this call stays.
			dir := filepath.Join("/sys/fs/cgroup", ctl, ent.Name())
			for wait := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				if _, err := os.Stat(dir); os.IsNotExist(err) {
					break
				}
				if time.Now().After(wait) {
					t.Fatalf("cgroup %s/%s is left", ctl, ent.Name())
				}
			}
		}
	}
}

func TestNativeMemoryAndProcessLimits(t *testing.T) {
	e, p := engine(t)
	_, _, err := run(t, e, p, `x = bytearray(400 << 20); result = len(x)`, nil, fn.CallRequest{MemoryLimitMB: 64})
	if !errors.Is(err, fn.ErrMemoryLimit) {
		t.Fatalf("400 MiB under a 64 MiB limit: %v", err)
	}
	if !strings.Contains(err.Error(), "64 MiB") {
		t.Fatalf("error %v does not name the limit", err)
	}
	// Processes: at most 64 in the sandbox.
	a := mustRun(t, e, p, `
import subprocess
procs, err = [], None
try:
    for i in range(200):
        procs.append(subprocess.Popen(["/bin/sleep", "30"]))
except OSError as e:
    err = str(e)
result = {"started": len(procs), "error": err}
for p in procs:
    p.kill()
`, nil, fn.CallRequest{})
	var out struct {
		Started int
		Error   string
	}
	json.Unmarshal(a.Result, &out)
	if out.Started >= 64 || out.Error == "" {
		t.Fatalf("process limit: %s", a.Result)
	}
}

const benchCode = "import json\nresult = sum(range(1000))\nprint(json.dumps({'ok': True}))"

// BenchmarkPythonCall is one python tool call on the native engine: a
// fresh sandbox, the broker, the runner, the code; BenchmarkPythonHost is
// the bare baseline, `python3 -c` of the same code on the host.
func BenchmarkPythonCall(b *testing.B) {
	e, p := engine(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if a := mustRun(b, e, p, benchCode, nil, fn.CallRequest{}); string(a.Result) != "499500" {
			b.Fatalf("result %s", a.Result)
		}
	}
}

func BenchmarkPythonCallWithVolume(b *testing.B) {
	e, p := engine(b)
	vol := &fn.VolumeMount{Dir: b.TempDir(), Write: true, MaxFileBytes: 1 << 20, MaxNewBytes: 1 << 20, MaxNewFiles: 10}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		mustRun(b, e, p, benchCode, nil, fn.CallRequest{Volume: vol})
	}
}

func BenchmarkPythonHost(b *testing.B) {
	for i := 0; i < b.N; i++ {
		out, err := exec.Command("/usr/bin/python3", "-c", benchCode+"\nprint(result)").Output()
		if err != nil || !strings.Contains(string(out), "499500") {
			b.Fatalf("%s %v", out, err)
		}
	}
}

// Where the cgroup tree cannot be written the limits are rlimits: a runaway
// allocation fails in the code (MemoryError, the tool's answer), and the
// process count is still bounded.
func TestNativeLimitsWithoutCgroups(t *testing.T) {
	e, p := engine(t)
	e.SetNative(fn.NativeConfig{CgroupRoot: t.TempDir()}) // no controllers there
	a, _, err := run(t, e, p, `x = bytearray(400 << 20); x[-1] = 1; result = len(x)`, nil, fn.CallRequest{MemoryLimitMB: 64})
	switch {
	case errors.Is(err, fn.ErrMemoryLimit):
	case err == nil && !a.OK && strings.Contains(a.Error, "MemoryError"):
	default:
		t.Fatalf("400 MiB under a 64 MiB RLIMIT_AS: %+v %v", a, err)
	}
	b := mustRun(t, e, p, `
import subprocess
procs, err = [], None
try:
    for i in range(200):
        procs.append(subprocess.Popen(["/bin/sleep", "30"]))
except OSError as e:
    err = str(e)
result = {"started": len(procs), "error": err}
`, nil, fn.CallRequest{})
	var out struct {
		Started int
		Error   string
	}
	json.Unmarshal(b.Result, &out)
	if out.Started >= 64 || out.Error == "" {
		t.Fatalf("RLIMIT_NPROC: %s", b.Result)
	}
}
