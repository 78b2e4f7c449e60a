"""Subako's helpers inside a python function call.

fetch() reaches the web through the server's broker (the grant's origins
only, the session's credential attached outside the sandbox); there is no
other network. The file helpers work in /volume, as the grant allows.
"""
import base64
import json as _json
import os
import socket

SOCKET = os.environ.get("SUBAKO_FETCH_SOCKET", "/run/subako/fetch.sock")
VOLUME = "/volume"

__all__ = ["fetch", "FetchError", "Response", "read_text", "read_bytes", "write_text",
           "write_bytes", "list_files", "exists", "path", "VOLUME"]


class FetchError(Exception):
    """A fetch the broker refused (origin not granted, a redirect elsewhere) or that failed."""


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def ok(self):
        return 200 <= self.status < 300

    @property
    def text(self):
        return self.body.decode("utf-8", "replace")

    def json(self):
        return _json.loads(self.body)

    def __repr__(self):
        return "<Response %d, %d bytes>" % (self.status, len(self.body))


def fetch(url, method="GET", headers=None, body=None, json=None, timeout=None):
    """Send one HTTP request through the broker and return a Response.

    Authorization, cookies and other credential headers are dropped by the
    broker: the session's credential for the origin is attached there.
    """
    headers = dict(headers or {})
    if json is not None:
        body = _json.dumps(json)
        headers.setdefault("Content-Type", "application/json")
    req = {"method": method, "url": url, "headers": {str(k): str(v) for k, v in headers.items()}}
    if body is not None:
        if isinstance(body, str):
            req["body"] = body
        else:
            req["body_base64"] = base64.b64encode(bytes(body)).decode()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        if timeout is not None:
            s.settimeout(timeout)
        s.connect(SOCKET)
        s.sendall(_json.dumps(req).encode())
        s.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            c = s.recv(1 << 16)
            if not c:
                break
            chunks.append(c)
    except OSError as e:
        raise FetchError("fetch %s: the broker is not reachable: %s" % (url, e)) from None
    finally:
        s.close()
    resp = _json.loads(b"".join(chunks) or b"{}")
    if resp.get("error"):
        raise FetchError(resp["error"])
    if resp.get("body_base64") is not None:
        data = base64.b64decode(resp["body_base64"])
    else:
        data = (resp.get("body") or "").encode()
    return Response(resp.get("status", 0), resp.get("headers") or {}, data)


def path(name):
    """The full path of a volume file, refusing names that leave /volume."""
    name = str(name)
    if name.startswith("/"):
        if not (name == VOLUME or name.startswith(VOLUME + "/")):
            raise ValueError("%r is outside /volume" % name)
        name = name[len(VOLUME):].lstrip("/")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ValueError("%r: '..' is not allowed in a volume path" % name)
    return os.path.join(VOLUME, *parts)


def read_bytes(name):
    with open(path(name), "rb") as f:
        return f.read()


def read_text(name, encoding="utf-8"):
    with open(path(name), encoding=encoding) as f:
        return f.read()


def write_bytes(name, data):
    p = path(name)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(data)
    return p


def write_text(name, text, encoding="utf-8"):
    return write_bytes(name, text.encode(encoding))


def exists(name):
    return os.path.isfile(path(name))


def list_files(prefix=""):
    """Volume files below prefix, as paths relative to /volume, sorted."""
    root = path(prefix) if prefix else VOLUME
    out = []
    for dirpath, _, files in os.walk(root):
        for f in files:
            out.append(os.path.relpath(os.path.join(dirpath, f), VOLUME))
    return sorted(out)
