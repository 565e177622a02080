"""Pre-forked worker factory: imports torch once, then forks one worker per request.

Started as a script (``python -I -S zygote.py CONTROL_FD SETTINGS_FD``) so that
neither the kit nor the reference solution is importable in what it forks. Its
settings (site folders, uid block, folders to hide) come in a memfd, not on the
command line, which every worker could read in its ``/proc/1/cmdline``.

Where the workers' isolation works (root, namespaces), the zygote first starts again, before it
imports torch, inside a tree of its own in which the interpreter, the standard library, torch's
site folder and these scripts lie at neutral paths (``/sandbox/...``) and the host's file system
is gone (``isolation.restart_in_neutral_tree``): nothing a worker inherits (``sys.argv``,
``sys.executable``, ``sys.path``, modules' ``__file__``, code objects' file names, the
mapped files) names the kit's checkout, a venv inside it or the user's home.

Requests on the control socket (JSON, one per message):

- ``{"slot", "limits", "scratch"}`` with the worker's three pipe ends (requests
  in, replies out, printed output out): the zygote forks, the child isolates
  itself (``isolation.isolate``) and serves the worker protocol; answers
  ``{"pid"}`` or ``{"error"}``;
- ``{"reap": slot}``: kill every process of that slot's uid (no answer);
- ``{"connect": slot}`` with one file descriptor, on the grader's own socket only: another
  control socket, for a grading process the grader forked (``autograder.grading.pool``). The zygote
  answers it ``{"ready", "isolation", "reason"}`` and serves its requests like the grader's,
  except that they always get that one slot; when it closes, that slot's processes are killed.

The zygote never runs student code and never does parallel torch work, so
forking it stays safe and cheap (~20 ms instead of a ~1.5 s interpreter start).
It watches its parent: when the grader goes away (its end of the control socket
closes, or the zygote is re-parented), it kills every process of its uid block
and exits.
"""

import ctypes
import errno
import gc
import json
import os
import select
import signal
import socket
import sys
import threading

if __name__ == "__main__":
    def _read_settings(fd):
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        os.close(fd)
        return json.loads(b"".join(chunks))

    SETTINGS = _read_settings(int(sys.argv[2]))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.dont_write_bytecode = True
    if SETTINGS.get("neutral"):  # second start, inside the neutral tree (see _start_neutral)
        os.environ.pop("LD_LIBRARY_PATH", None)
    elif os.geteuid() == 0 and SETTINGS.get("namespaces", True):
        def _start_neutral():
            """Before torch is imported: where the workers' isolation works here, start again
            inside a tree of neutral paths (isolation.restart_in_neutral_tree; returns only
            if that fails, saying why)."""
            import isolation as stage_one
            own = stage_one.own_pid_namespace()
            try:
                failure = stage_one.probe({**SETTINGS, "namespaces": True, "uid": SETTINGS["uid_base"],
                                           "scratch": SETTINGS["fallback_scratch"]}, own)
            finally:
                os.close(own)
            if failure:  # no namespaces here: decide_mode finds that out too and says so
                return f"the isolation's probe failed: {failure}"
            return stage_one.restart_in_neutral_tree(SETTINGS, int(sys.argv[1]), sys.path[0])

        SETTINGS["neutral_failure"] = _start_neutral()
    sys.path[1:1] = SETTINGS["site_dirs"]  # site-packages that hold torch and numpy
    # No collection until main() freezes what the start made: each full one would walk all of
    # torch's objects (~0.1-0.2 s of CPU before the zygote is ready).
    gc.disable()

import isolation  # noqa: E402
import meta_device  # noqa: E402
import torch  # noqa: E402
import worker  # noqa: E402

# Modules a student may import lazily: load them once here rather than in every worker.
PRELOAD = ("math", "itertools", "functools", "collections", "copy", "random", "json", "re",
           "typing", "dataclasses", "numbers", "operator", "warnings", "contextlib", "string",
           "statistics", "fractions", "decimal", "time", "enum", "abc", "types", "numpy",
           "torch.nn", "torch.nn.functional", "torch.nn.init")
MAX_MESSAGE = 1 << 16
MADV_COLLAPSE, HUGE_PAGE = 25, 2 << 20
PARENT_POLL_SECONDS = 1.0


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
    meta_device.lazy_imports()
    meta_device.native_meta_kernels()
    meta_device.warm_up_meta()


def huge_pages_in_background():
    """Move the zygote's anonymous memory (torch's and the interpreter's heap, ~180 MB) into
    2 MB pages, in a thread of its own while the zygote already serves. Each worker is a fork
    of the zygote: fork and exit copy and free one page-table entry per page, ~8 ms of the
    kernel's time per worker with 4 KB pages, ~3 ms with huge ones. The memory and what the
    worker sees stay the same. Needs MADV_COLLAPSE (Linux 6.1); elsewhere nothing changes.

    Done once: where the zygote writes to a huge page it shares with a worker, the kernel
    splits the zygote's mapping of it again, and it writes to the same ~35 MB after every fork
    (its own objects), so collapsing again only copies those chunks to see them split."""
    threading.Thread(target=_collapse_anonymous_memory, name="huge-pages", daemon=True).start()


def _collapse_anonymous_memory():
    try:
        madvise = ctypes.CDLL(None, use_errno=True).madvise
        madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        with open("/proc/self/maps") as maps:
            lines = maps.read().splitlines()
    except (OSError, AttributeError):
        return
    for line in lines:
        fields = line.split()
        if fields[1] != "rw-p" or (len(fields) > 5 and fields[5] != "[heap]"):
            continue  # only private writable memory without a file behind it
        start, end = (int(address, 16) for address in fields[0].split("-"))
        start = -(-start // HUGE_PAGE) * HUGE_PAGE
        end = end // HUGE_PAGE * HUGE_PAGE
        if end <= start:
            continue
        if madvise(start, end - start, MADV_COLLAPSE) != 0 \
                and ctypes.get_errno() not in (errno.EINVAL, errno.EAGAIN, errno.ENOMEM):
            return
        # EINVAL is also what a kernel without MADV_COLLAPSE answers, but some regions answer
        # it too (a thread's stack, reserved address space) and the next one may collapse:
        # stopping at the first left half of the memory in 4 KB pages.


def library_folders(python_paths):
    """Folders of the shared libraries this process has loaded, outside the Python install:
    where a lazily imported extension module (``_ctypes`` needs libffi) finds its own."""
    folders = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(maxsplit=5)
            if len(parts) < 6 or not parts[5].startswith("/"):
                continue
            path = parts[5].strip().removesuffix(" (deleted)")
            if ".so" in os.path.basename(path):
                folders.add(os.path.dirname(os.path.realpath(path)))
    inside = isolation._inside
    folders = {f for f in folders if not any(inside(f, p) for p in python_paths)}  # there already
    return sorted(f for f in folders if not any(inside(f, g) and f != g for g in folders))


class Zygote:
    def __init__(self, settings):
        self.base = dict(settings)
        self.uid_base = settings["uid_base"]
        self.own_pid_namespace = None
        self.networks = {}  # slot -> its empty network namespace (isolation.empty_network_namespace)
        self.pidfd = None  # inherited by workers: readable once the zygote has exited
        try:
            self.pidfd = os.pidfd_open(os.getpid())  # close-on-exec, but a fork inherits it
        except (AttributeError, OSError):
            pass

    def _fork(self, new_pid_namespace):
        """fork(); with ``new_pid_namespace`` the child is PID 1 of a namespace of its own."""
        return isolation.fork(self.own_pid_namespace if new_pid_namespace else None)

    def network(self, slot):
        """The handle on ``slot``'s network namespace, made on first use; None where it
        cannot be made (the worker then makes its own)."""
        if slot not in self.networks:
            try:
                self.networks[slot] = isolation.empty_network_namespace()
            except OSError:
                self.networks[slot] = None
        return self.networks[slot]

    def spawn(self, settings, fds):
        """Fork one worker; returns its pid (in the zygote's namespace, which is the grader's)."""
        request_fd, reply_fd, output_fd = fds
        pid = self._fork(settings["namespaces"])
        if pid:
            for fd in fds:
                os.close(fd)
            return pid
        try:
            os.dup2(output_fd, 1)
            os.dup2(output_fd, 2)
            os.close(output_fd)
            isolation.isolate(settings, keep_fds={request_fd, reply_fd}, parent_fd=self.pidfd)
            settings.clear()
            self.base.clear()
            worker.serve(request_fd, reply_fd)
            os._exit(0)
        except BaseException as error:  # isolation failed: never run student code unisolated
            try:
                os.write(2, f"sandbox setup failed: {error}\n".encode())
            finally:
                os._exit(70)

    def probe(self, settings):
        """Try the isolation once in a throwaway child; returns None or why it failed."""
        return isolation.probe(settings, self.own_pid_namespace, self.pidfd)

    def reap(self, slots):
        """Kill every process of these slots' uids (a backstop: each worker is PID 1 of its
        own namespace, so killing it already took its processes along)."""
        if self.base["uid_base"] is not None:
            isolation.kill_uids([self.uid_base + int(slot) for slot in slots])

    def decide_mode(self):
        """(isolation, why it is less than namespaces+uid or None, why there is no seccomp
        filter or None); the workers' settings (``self.base``) follow it."""
        mode, reason = "namespaces+uid", None
        base = self.base
        try:
            if not base.get("seccomp_wanted", True):
                raise OSError(0, "switched off (AUTOGRADER_SECCOMP=off)")
            base["seccomp"] = isolation.seccomp_program()
            no_seccomp = None
        except OSError as error:
            base["seccomp"], no_seccomp = None, f"no seccomp filter: {error.strerror or error}"
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        try:
            if os.geteuid() != 0:
                mode, reason = "rlimits-only", "not running as root: no namespaces and no separate uid"
            else:
                try:
                    self.own_pid_namespace = isolation.own_pid_namespace()
                    failure = self._probe_with_seccomp({**base, "namespaces": True, "uid": base["uid_base"],
                                                        "scratch": base["fallback_scratch"]})
                except OSError as error:
                    failure = f"{type(error).__name__}: {error}"
                if failure:
                    mode, reason = "rlimits-only", f"namespaces unavailable ({failure})"
            if mode != "namespaces+uid":
                base.update(namespaces=False, uid_base=None)
                self.uid_base = None
                failure = self._probe_with_seccomp({**base, "uid": None, "scratch": base["fallback_scratch"]})
            else:
                base["namespaces"] = True
        finally:
            signal.signal(signal.SIGCHLD, signal.SIG_IGN)
        if base["seccomp"] is None and no_seccomp is None:
            no_seccomp = self.seccomp_refused
        if mode == "namespaces+uid" and not base.get("neutral"):
            reason = f"workers see the host's paths ({base.get('neutral_failure') or 'no neutral tree'})"
        elif mode != "namespaces+uid" and base.get("neutral"):  # the host's folders are out of reach
            raise RuntimeError(f"the isolation failed inside the neutral tree: {reason}")
        return mode, reason, no_seccomp

    seccomp_refused = None

    def _probe_with_seccomp(self, settings):
        """``probe``; where only the system-call filter failed, probe again without it and
        leave it out of every worker (``seccomp_refused`` says why: degraded mode)."""
        failure = self.probe(settings)
        if failure and settings.get("seccomp") and "seccomp" in failure:
            self.seccomp_refused = f"the kernel refused the seccomp filter ({failure})"
            self.base["seccomp"] = settings["seccomp"] = None
            failure = self.probe(settings)
        return failure


def _terminate(signum, frame):
    raise SystemExit(0)  # through main's clean-up


def main(control_fd, settings):
    control = socket.socket(fileno=control_fd)
    parent = settings.get("parent")
    uid_block = settings.get("uid_block", 64)
    signal.signal(signal.SIGTERM, _terminate)
    warm_up()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # workers are reaped by the kernel
    zygote = Zygote({**settings, "keep": [*settings["keep"], *library_folders(settings["keep"])]})
    settings.clear()  # a worker is a fork of this process: leave it no more than it needs
    mode, reason, no_seccomp = zygote.decide_mode()
    zygote.reap(range(uid_block))  # what an earlier run of these uids left (processes, keys)
    # Objects that exist now are never collected in a worker: its garbage collector then does
    # not touch (and copy, page by page) the whole of torch it shares with us.
    gc.freeze()
    gc.enable()  # off since the start (see the top); a worker collects only its own objects
    huge_pages_in_background()
    greeting = json.dumps({"ready": True, "isolation": mode, "reason": reason,
                           "seccomp": no_seccomp is None, "seccomp_reason": no_seccomp}).encode()
    control.send(greeting)
    connections = {control: None}  # control socket -> the one slot it may use (None: any)
    try:
        while True:
            if parent is not None and os.getppid() != parent:
                return  # the grader died (even by SIGKILL): we were re-parented
            try:
                readable = select.select(list(connections), [], [], PARENT_POLL_SECONDS)[0]
            except (OSError, ValueError):
                return
            for sock in readable:
                try:
                    message, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 3)
                except (ConnectionError, OSError):
                    message, fds = b"", []
                if not message:
                    if sock is control:
                        return  # the grader closed its end (or died)
                    zygote.reap([connections.pop(sock)])  # a grading process ended
                    sock.close()
                    continue
                _serve(zygote, sock, connections, message, fds, greeting)
    finally:
        # Whatever brought us here, no worker and none of their processes outlive us.
        zygote.reap(range(uid_block))


def _serve(zygote, sock, connections, message, fds, greeting):
    """One request on one control socket (see the module's docstring)."""
    base = zygote.base
    try:
        request = json.loads(message)
        if not isinstance(request, dict):
            raise ValueError("not an object")
    except ValueError:
        _close_all(fds)
        return
    fixed = connections[sock]  # a grading process's socket: only its own slot
    if "connect" in request:
        if fixed is not None or len(fds) != 1:
            _close_all(fds)
            return
        attached = socket.socket(fileno=fds[0])
        connections[attached] = int(request["connect"])
        try:
            attached.send(greeting)
        except OSError:
            connections.pop(attached)
            attached.close()
        return
    if "reap" in request:
        _close_all(fds)
        zygote.reap([request["reap"] if fixed is None else fixed])
        return
    try:
        slot = int(request["slot"]) if fixed is None else fixed
        uid = None if base["uid_base"] is None else base["uid_base"] + slot
        worker_settings = {**base, "uid": uid, "limits": request["limits"],
                           "scratch": request.get("scratch") or base["fallback_scratch"],
                           "network_fd": zygote.network(slot) if base["namespaces"] else None}
        if len(fds) != 3:
            raise OSError("a spawn request needs three file descriptors")
        pid = zygote.spawn(worker_settings, fds)
        sock.send(json.dumps({"pid": pid}).encode())
    except (OSError, KeyError, TypeError, ValueError) as error:
        _close_all(fds)
        try:
            sock.send(json.dumps({"error": str(error)}).encode())
        except OSError:
            pass


def _close_all(fds):
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


if __name__ == "__main__":
    _status = 1
    try:
        main(int(sys.argv[1]), SETTINGS)
        _status = 0
    except SystemExit as stop:  # SIGTERM (``_terminate``), after main's clean-up
        _status = stop.code if isinstance(stop.code, int) else 0
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        # Main's clean-up has killed every worker. Skip the interpreter's tear-down of torch
        # (a second or more on a busy machine): the grader waits for us to exit (Ctrl-C).
        sys.stderr.flush()
        os._exit(_status)
