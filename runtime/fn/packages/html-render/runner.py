# The html-render package's runner: reads {"tool", "input"} on stdin, renders
# the page in headless Chromium driven over the DevTools protocol on a pipe
# (--remote-debugging-pipe: fds 3 and 4, NUL-terminated JSON), and writes one
# JSON object on stdout: layout facts, console errors, missing images, and
# the PNG's path in /volume. The sandbox has no network: http(s) requests
# are intercepted (Fetch domain) and sent through the broker, which allows
# only the grant's origins; everything else fails as a missing resource.
import base64
import json
import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, "/opt/subako")
import subako  # noqa: E402

CHROMIUM = "/usr/lib/chromium/chromium"
MAX_CONSOLE = 100
MAX_TEXT = 1000
MAX_LIST = 50
MAX_SHOT_HEIGHT = 16384
# A Chromium that crashes (a signal other than SIGKILL: the memory limit's,
# or the runner's own) is started once more on a fresh profile, if the crash
# is noticed early enough to leave the second start its time. Every wait of
# a call ends by END_AFTER seconds from the runner's start, so the answer
# comes before the engine's deadline (the manifest's 45 s), with time left
# for Python's start before it and Chromium's close (at most 3 s) after.
RESTART_WITHIN = 15
END_AFTER = 38
STARTED = time.monotonic()
CRASHES = []  # what each crashed Chromium died of, in order


class Crashed(RuntimeError):
    """Chromium died of a signal it did not get from the runner."""


def time_left(most):
    """Seconds a wait may take: at most `most`, and not past the call's end."""
    left = STARTED + END_AFTER - time.monotonic()
    if left <= 0:
        raise RuntimeError("out of time: the render did not finish in %ds" % END_AFTER)
    return min(most, left)


def fail(msg):
    out = {"ok": False, "error": msg}
    if CRASHES:
        out["chromium_restarts"] = CRASHES
    print(json.dumps(out))
    sys.exit(0)


class CDP:
    def __init__(self, proc, wfd, rfd):
        self.proc, self.w, self.r = proc, wfd, rfd
        self.next_id = 0
        self.buf = b""
        self.events = []

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            try:
                n = os.write(self.w, data)
            except BrokenPipeError:
                self.died()
            data = data[n:]
        return self.next_id

    def died(self):
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = "still running"
        if isinstance(code, int) and code < 0 and -code != signal.SIGKILL:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = "signal %d" % -code
            raise Crashed("Chromium crashed (%s)" % name)
        raise RuntimeError("Chromium closed the DevTools pipe (it crashed or was killed: exit status %s)" % code)

    def read(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.r], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.r, 1 << 20)
            if not chunk:
                self.died()
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None, timeout=20):
        want = self.send(method, params, session)
        deadline = time.monotonic() + time_left(timeout)
        while True:
            m = self.read(deadline)
            if m is None:
                raise RuntimeError("Chromium did not answer %s in %ss" % (method, timeout))
            if m.get("id") == want:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"].get("message")))
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)


def clip(s):
    s = str(s)
    return s if len(s) <= MAX_TEXT else s[:MAX_TEXT] + "…"


def remote_text(args):
    out = []
    for a in args or []:
        if "value" in a:
            v = a["value"]
            out.append(v if isinstance(v, str) else json.dumps(v))
        else:
            out.append(a.get("description") or a.get("type", ""))
    return " ".join(out)


LAYOUT_JS = r"""
(() => {
  const d = document.documentElement, b = document.body;
  const vw = window.innerWidth;
  const width = Math.max(d.scrollWidth, b ? b.scrollWidth : 0);
  const height = Math.max(d.scrollHeight, b ? b.scrollHeight : 0);
  const name = (e) => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") +
    (typeof e.className === "string" && e.className.trim() ? "." + e.className.trim().split(/\s+/).join(".") : "");
  const over = [];
  for (const e of document.querySelectorAll("body *")) {
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > vw + 1) {
      over.push({element: name(e), right: Math.round(r.right), width: Math.round(r.width)});
      if (over.length >= 50) break;
    }
  }
  const missing = [];
  for (const i of document.images) {
    if (i.complete && i.naturalWidth === 0) missing.push({src: i.currentSrc || i.getAttribute("src") || "", alt: i.alt || ""});
  }
  return {title: document.title, viewport_width: vw, viewport_height: window.innerHeight,
          document_width: width, document_height: height, horizontal_overflow: width > vw,
          overflowing_elements: over, images: document.images.length, missing_images: missing};
})()
"""


def broker_fetch(cdp, ev, session, fetches):
    p = ev["params"]
    req = p["request"]
    url = req["url"]
    if not (url.startswith("http://") or url.startswith("https://")):
        cdp.send("Fetch.continueRequest", {"requestId": p["requestId"]}, session)
        return
    try:
        r = subako.fetch(url, method=req.get("method", "GET"), headers=req.get("headers") or {},
                         body=req.get("postData") or None, timeout=time_left(15))
    except Exception as e:  # refused by the broker (origin not granted) or failed
        fetches.append({"url": clip(url), "error": clip(e)})
        cdp.send("Fetch.failRequest", {"requestId": p["requestId"], "errorReason": "BlockedByClient"}, session)
        return
    fetches.append({"url": clip(url), "status": r.status})
    headers = [{"name": k, "value": str(v)} for k, v in (r.headers or {}).items()
               if k.lower() not in ("content-length", "content-encoding", "transfer-encoding")]
    cdp.send("Fetch.fulfillRequest", {"requestId": p["requestId"], "responseCode": r.status or 502,
                                      "responseHeaders": headers,
                                      "body": base64.b64encode(r.body).decode()}, session)


def render(args, attempt):
    html, path = args.get("html"), args.get("path")
    if (html is None) == (path is None):
        fail("input: give exactly one of html (the page inline) or path (a volume file)")
    width = int(args.get("width", 1280))
    height = int(args.get("height", 800))
    full_page = bool(args.get("full_page", True))
    wait_ms = int(args.get("wait_ms", 0))
    shot = args.get("screenshot", "render/page.png")
    vol = os.environ.get("SUBAKO_VOLUME", "")
    if shot and vol != "write":
        fail("screenshot: writing %s needs a read-and-write volume grant (this call has %s); set screenshot to \"\" to render without one"
             % (shot, vol or "no volume"))
    if shot:
        if not shot.lower().endswith(".png"):
            fail("screenshot: %r must end in .png" % shot)
        try:
            shot_path = subako.path(shot)
        except ValueError as e:
            fail("screenshot: %s" % e)
    if path is not None:
        if not vol:
            fail("path: reading %s needs a volume grant (read, or read and write)" % path)
        try:
            page = subako.path(path)
        except ValueError as e:
            fail("path: %s" % e)
        if not os.path.isfile(page):
            fail("path: %s is not a file in /volume" % path)
    else:
        page = "/tmp/subako-page/index.html"
        os.makedirs(os.path.dirname(page), exist_ok=True)
        with open(page, "w", encoding="utf-8") as f:
            f.write(html)
    url = "file://" + page

    # Chromium reads from fd 3 and writes to fd 4.
    to_chrome_r, to_chrome_w = os.pipe()
    from_chrome_r, from_chrome_w = os.pipe()
    err = open(chromium_log(attempt), "wb")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--disable-background-networking", "--disable-sync", "--disable-component-update",
             "--disable-default-apps", "--mute-audio", "--hide-scrollbars", "--no-zygote", "--single-process", "--in-process-gpu",
             "--disable-breakpad", "--disable-crash-reporter", "--num-raster-threads=1",
             "--renderer-process-limit=1", "--disable-features=Translate,MediaRouter,OptimizationHints,PaintHolding",
             "--allow-file-access-from-files", "--user-data-dir=" + profile(attempt),
             "--remote-debugging-pipe", "about:blank"]

    def child():
        # With a write grant the sandbox has RLIMIT_FSIZE (the volume's file
        # limit); Chromium's audio client sizes a 64 MiB memfd at start:
        # ignored, the signal becomes EFBIG, which it survives.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        # A crash writes no core: one would fill /tmp (64 MiB) and count
        # against the memory limit before the restart.
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.dup2(to_chrome_r, 3)
        os.dup2(from_chrome_w, 4)

    proc = subprocess.Popen([CHROMIUM] + flags, stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                            pass_fds=(3, 4), preexec_fn=child, close_fds=True)
    os.close(to_chrome_r)
    os.close(from_chrome_w)
    err.close()
    cdp = CDP(proc, to_chrome_w, from_chrome_r)
    started = time.monotonic()
    try:
        t = cdp.call("Target.createTarget", {"url": "about:blank"}, timeout=20)
        s = cdp.call("Target.attachToTarget", {"targetId": t["targetId"], "flatten": True})["sessionId"]
        for m in ("Page.enable", "Runtime.enable", "Log.enable", "Network.enable"):
            cdp.call(m, session=s)
        cdp.call("Fetch.enable", {"patterns": [{"urlPattern": "http://*"}, {"urlPattern": "https://*"}]}, session=s)
        cdp.call("Emulation.setDeviceMetricsOverride",
                 {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=s)
        cdp.call("Page.navigate", {"url": url}, session=s)
        console, fetches, failed = [], [], []
        dropped = 0
        loaded = False
        settle_until = None
        wait = time_left(20)  # less when a restart took the call's time
        deadline = time.monotonic() + wait
        while True:
            now = time.monotonic()
            if loaded and settle_until is None:
                settle_until = now + max(wait_ms, 100) / 1000.0
            until = min(deadline, settle_until) if settle_until else deadline
            if proc.poll() is not None:  # died with events still queued
                cdp.died()
            ev = cdp.events.pop(0) if cdp.events else cdp.read(until)
            if ev is None:
                break
            method, p = ev.get("method"), ev.get("params", {})
            entry = None
            if method == "Page.loadEventFired":
                loaded = True
            elif method == "Fetch.requestPaused":
                broker_fetch(cdp, ev, s, fetches)
            elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                top = (p.get("stackTrace") or {}).get("callFrames") or [{}]
                entry = {"level": "warning" if p["type"] == "warning" else "error", "source": "console",
                         "text": clip(remote_text(p.get("args"))), "url": top[0].get("url", ""),
                         "line": top[0].get("lineNumber", -1) + 1}
            elif method == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                text = (d.get("exception") or {}).get("description") or d.get("text", "")
                entry = {"level": "error", "source": "exception", "text": clip(text),
                         "url": d.get("url", ""), "line": d.get("lineNumber", -1) + 1}
            elif method == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                le = p["entry"]
                entry = {"level": le["level"], "source": le.get("source", "other"), "text": clip(le.get("text", "")),
                         "url": le.get("url", ""), "line": le.get("lineNumber", -1) + 1}
            elif method == "Network.loadingFailed" and not p.get("canceled"):
                if len(failed) < MAX_LIST:
                    failed.append({"type": p.get("type", ""), "error": p.get("errorText", "")})
            if entry is not None:
                if len(console) < MAX_CONSOLE:
                    console.append(entry)
                else:
                    dropped += 1
        if not loaded:
            fail("the page did not finish loading in %ds" % round(wait))
        layout = cdp.call("Runtime.evaluate", {"expression": LAYOUT_JS, "returnByValue": True}, session=s)
        if "exceptionDetails" in layout:
            fail("measuring the page failed: %s" % layout["exceptionDetails"].get("text"))
        facts = layout["result"]["value"]
        out = {"ok": True, "url": url if path is not None else "inline", **facts,
               "console": console, "failed_requests": failed}
        if dropped:
            out["console_dropped"] = dropped
        if fetches:
            out["fetches"] = fetches
        if shot:
            h = height
            if full_page:
                h = max(height, min(int(facts["document_height"]), MAX_SHOT_HEIGHT))
                out["screenshot_truncated"] = facts["document_height"] > MAX_SHOT_HEIGHT
            png = cdp.call("Page.captureScreenshot",
                           {"format": "png", "captureBeyondViewport": full_page,
                            "clip": {"x": 0, "y": 0, "width": width, "height": h, "scale": 1}},
                           session=s, timeout=30)
            data = base64.b64decode(png["data"])
            os.makedirs(os.path.dirname(shot_path), exist_ok=True)
            tmp = shot_path + ".part"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, shot_path)
            out["screenshot"] = {"path": os.path.relpath(shot_path, "/volume"), "width": width, "height": h,
                                 "bytes": len(data)}
        out["render_ms"] = int((time.monotonic() - started) * 1000)
        return out
    finally:
        try:
            cdp.send("Browser.close")
            proc.wait(timeout=3)
        except Exception:
            proc.kill()
            proc.wait()
        os.close(to_chrome_w)
        os.close(from_chrome_r)


def main():
    req = json.load(sys.stdin)
    if req.get("tool") != "render":
        fail("unknown tool %r" % req.get("tool"))
    while True:
        attempt = len(CRASHES)
        try:
            out = render(req.get("input") or {}, attempt)
            break
        except Crashed as e:
            CRASHES.append(str(e))
            if len(CRASHES) > 1 or time.monotonic() - STARTED > RESTART_WITHIN:
                fail("%s\n%s" % ("; restarted, then ".join(CRASHES), log_tail(attempt)))
            # The crashed attempt's log goes to stderr (a call that fails in
            # the end shows it), and its profile goes, to leave /tmp free.
            sys.stderr.write("html-render: %s; starting it again. The end of its log:\n%s\n" % (e, log_tail(attempt)))
            shutil.rmtree(profile(attempt), ignore_errors=True)
        except RuntimeError as e:
            fail("%s\n%s" % (e, log_tail(attempt)))
    if CRASHES:
        out["chromium_restarts"] = CRASHES
    sys.stdout.write(json.dumps(out, ensure_ascii=False))


def profile(attempt):
    return "/tmp/chromium-profile-%d" % attempt


def chromium_log(attempt):
    return "/tmp/chromium-%d.log" % attempt


def log_tail(attempt):
    """The last 4000 bytes of an attempt's Chromium log, from a whole line."""
    try:
        with open(chromium_log(attempt), "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4000))
            log = f.read()
            if f.tell() > len(log):
                log = log.partition(b"\n")[2]
    except OSError:
        return ""
    return log.decode("utf-8", "replace")


main()
