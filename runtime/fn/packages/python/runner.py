# The python package's runner: reads {"tool", "input"} on stdin, runs the
# code, and writes one JSON object on its own stdout. The code's own output
# (print, a subprocess, C extensions) goes to files in /tmp, never into the
# answer.
import json
import os
import sys
import traceback

MAX_CAPTURE = 1 << 20  # bytes of the code's stdout and stderr returned each


def main():
    req = json.load(sys.stdin)
    if req.get("tool") != "run":
        print(json.dumps({"ok": False, "error": "unknown tool %r" % req.get("tool")}))
        return
    args = req.get("input") or {}
    answer = os.fdopen(os.dup(1), "w", encoding="utf-8")
    captured = {}
    for fd, name in ((1, "stdout"), (2, "stderr")):
        path = "/tmp/.subako-" + name
        f = os.open(path, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o600)
        os.dup2(f, fd)
        os.close(f)
        captured[name] = path
    sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False, buffering=1)
    sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False, buffering=1)
    sys.stdin = open(os.devnull)
    sys.path.insert(0, "/opt/subako")
    sys.argv = ["<code>"]
    ns = {"__name__": "__main__", "__builtins__": __builtins__, "input": args.get("input")}
    ok, error = True, None
    try:
        exec(compile(args.get("code", ""), "<code>", "exec"), ns)
    except SystemExit as e:
        if e.code not in (None, 0):
            ok, error = False, "SystemExit: %s" % (e.code,)
    except BaseException:
        ok = False
        etype, value, tb = sys.exc_info()
        # Leave out the runner's own frame.
        error = "".join(traceback.format_exception(etype, value, tb.tb_next if tb else None))
    sys.stdout.flush()
    sys.stderr.flush()
    out = {"ok": ok}
    result = ns.get("result")
    try:
        json.dumps(result)
        out["result"] = result
    except (TypeError, ValueError):
        out["result"] = repr(result)
        out["result_is_repr"] = True
    for name, path in captured.items():
        with open(path, "rb") as f:
            data = f.read(MAX_CAPTURE + 1)
        text = data[:MAX_CAPTURE].decode("utf-8", "replace")
        out[name] = text
        if len(data) > MAX_CAPTURE:
            out[name + "_truncated"] = True
    if error is not None:
        out["error"] = error
    answer.write(json.dumps(out, ensure_ascii=False))
    answer.flush()


main()
