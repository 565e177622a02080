"""Pre-forked worker factory: imports torch once, then forks one worker per request.

Started as a script (``python -I -S zygote.py CONTROL_FD SETTINGS_JSON SITE_DIR...``)
so that neither the kit nor the reference solution is importable in what it
forks. Each request on the control socket carries the worker's three pipe ends
(requests in, replies out, printed output out); the zygote forks, the child
isolates itself (``isolation.isolate``) and serves the worker protocol. The
zygote itself never runs student code and never does parallel torch work, so
forking it stays safe and cheap (~20 ms instead of a ~1.5 s interpreter start).
"""

import json
import os
import signal
import socket
import sys

if __name__ == "__main__":
    sys.path[:0] = sys.argv[3:]  # site-packages that hold torch and numpy
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.dont_write_bytecode = True

import isolation  # noqa: E402
import torch  # noqa: E402
import worker  # noqa: E402

# Modules a student may import lazily: after the uid drop the Python install may be
# unreadable on some machines, so load them while we still can.
PRELOAD = ("math", "itertools", "functools", "collections", "copy", "random", "json", "re",
           "typing", "dataclasses", "numbers", "operator", "warnings", "contextlib", "string",
           "statistics", "fractions", "decimal", "time", "enum", "abc", "types", "numpy",
           "torch.nn", "torch.nn.functional", "torch.nn.init")
MAX_MESSAGE = 1 << 16


def warm_up():
    """Run each kind of op once, single-threaded, so that forked workers start warm."""
    torch.set_num_threads(1)
    for name in PRELOAD:
        __import__(name)
    layer = torch.nn.Linear(8, 8)
    x = torch.randn(2, 3, 8, requires_grad=True)
    scores = (layer(x) @ x.transpose(-2, -1)).masked_fill(torch.ones(3, 3, dtype=torch.bool).triu(1), -1e9)
    out = torch.nn.functional.gelu(torch.nn.functional.layer_norm(scores.softmax(-1) @ x, (8,)))
    out.sum().backward()
    torch.nn.functional.scaled_dot_product_attention(x, x, x)
    torch.empty(2, device="meta") + 1


def spawn(settings, fds):
    """Fork one worker; returns its pid (in the zygote's namespace)."""
    request_fd, reply_fd, output_fd = fds
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        return pid
    try:
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        os.close(output_fd)
        isolation.isolate(settings, keep_fds={request_fd, reply_fd})
        worker.serve(request_fd, reply_fd)
        os._exit(0)
    except BaseException as error:  # isolation failed: never run student code unisolated
        try:
            os.write(2, f"sandbox setup failed: {error}\n".encode())
        finally:
            os._exit(70)


def probe(settings):
    """Try the isolation once in a throwaway child; returns None or why it failed."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        try:
            isolation.isolate(settings, keep_fds={write_fd})
            os.write(write_fd, b"ok")
            os._exit(0)
        except BaseException as error:
            os.write(write_fd, f"{type(error).__name__}: {error}".encode()[:500])
            os._exit(1)
    os.close(write_fd)
    answer = b""
    while chunk := os.read(read_fd, 1024):
        answer += chunk
    os.close(read_fd)
    os.waitpid(pid, 0)
    return None if answer == b"ok" else answer.decode(errors="replace")


def main(control_fd, settings):
    control = socket.socket(fileno=control_fd)
    warm_up()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # workers are reaped by the kernel
    base = dict(settings)
    mode, reason = "namespaces+uid", None
    if os.geteuid() != 0:
        mode, reason = "rlimits-only", "not running as root: no namespaces and no separate uid"
        base.update(namespaces=False, uid_base=None)
    else:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        failure = probe({**base, "uid": base["uid_base"], "scratch": base["fallback_scratch"]})
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)
        if failure:
            mode, reason = "rlimits-only", f"namespaces unavailable ({failure})"
            base.update(namespaces=False, uid_base=None)
    control.send(json.dumps({"ready": True, "isolation": mode, "reason": reason}).encode())
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, MAX_MESSAGE, 3)
        except (ConnectionError, OSError):
            return
        if not message:
            return
        request = json.loads(message)
        uid = None if base["uid_base"] is None else base["uid_base"] + int(request["slot"])
        settings = {**base, "uid": uid, "limits": request["limits"],
                    "scratch": request.get("scratch") or base["fallback_scratch"]}
        try:
            pid = spawn(settings, fds)
            control.send(json.dumps({"pid": pid}).encode())
        except OSError as error:
            control.send(json.dumps({"error": str(error)}).encode())


if __name__ == "__main__":
    main(int(sys.argv[1]), json.loads(sys.argv[2]))
