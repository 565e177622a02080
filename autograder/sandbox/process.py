"""Start the untrusted worker in its own process, with limits, and talk to it.

Everything that comes back is treated as hostile: a reply that is late,
malformed, too large or missing is the submission's error (``WorkerFailure``),
never the grader's.
"""

import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy
import torch

from autograder.sandbox import wire

WORKER_SCRIPT = Path(__file__).with_name("worker.py")
MAX_REPLY_BYTES = 64 * 1024 * 1024
MAX_LOG_BYTES = 1024 * 1024


class WorkerFailure(Exception):
    """The worker died, hung, or answered something that is not the protocol."""

    def __init__(self, kind, detail=""):
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind  # "timeout", "crashed", "bad_reply"
        self.detail = detail


class StudentError(Exception):
    """The student's code raised an exception inside the worker."""

    def __init__(self, info):
        self.type = str(info.get("type", "Error"))[:80]
        self.message = str(info.get("message", ""))[:2000]
        self.where = [str(w)[:200] for w in info.get("where", [])][:3]
        super().__init__(f"{self.type}: {self.message}")


@dataclass(frozen=True)
class Limits:
    memory_bytes: int = 3 * 1024**3
    cpu_seconds: int = 300
    open_files: int = 64
    file_bytes: int = 16 * 1024**2


def _site_dirs():
    """The folders torch and numpy live in; the worker gets these and nothing else."""
    dirs = []
    for module in (torch, numpy):
        folder = str(Path(module.__file__).resolve().parent.parent)
        if folder not in dirs:
            dirs.append(folder)
    return dirs


def _apply_limits(limits):
    def preexec():
        os.setsid()
        for name, value in (
            (resource.RLIMIT_AS, limits.memory_bytes),
            (resource.RLIMIT_CPU, limits.cpu_seconds),
            (resource.RLIMIT_NOFILE, limits.open_files),
            (resource.RLIMIT_FSIZE, limits.file_bytes),
            (resource.RLIMIT_CORE, 0),
        ):
            soft, hard = resource.getrlimit(name)
            new = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(name, (new, new if name != resource.RLIMIT_CPU else hard))
    return preexec


class WorkerProcess:
    """One worker: a fresh interpreter in a scratch directory that is deleted afterwards."""

    def __init__(self, limits=Limits()):
        self.limits = limits
        self.scratch = Path(tempfile.mkdtemp(prefix="autograder-worker-"))
        to_worker_r, self._to_worker = os.pipe()
        self._from_worker, from_worker_w = os.pipe()
        log = open(self.scratch / "output.log", "wb")
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.scratch), "OMP_NUM_THREADS": "1",
               "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", str(WORKER_SCRIPT), str(to_worker_r), str(from_worker_w),
             *_site_dirs()],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            cwd=self.scratch, env=env, pass_fds=(to_worker_r, from_worker_w),
            preexec_fn=_apply_limits(limits),
        )
        log.close()
        os.close(to_worker_r)
        os.close(from_worker_w)
        self._buffer = b""

    @property
    def alive(self):
        return self.process.poll() is None

    def request(self, message, timeout, on_callback=None):
        """Send one request and wait for its reply, answering callbacks meanwhile."""
        deadline = time.monotonic() + timeout
        self._send(message)
        while True:
            frame = self._receive(deadline)
            if isinstance(frame, dict) and "callback" in frame and on_callback is not None:
                try:
                    reply = {"result": wire.encode_value(on_callback(frame["callback"]))}
                except Exception as error:  # a malformed callback is the student's problem
                    reply = {"error": f"{type(error).__name__}: {error}"}
                self._send(reply)
                continue
            if not isinstance(frame, dict):
                raise WorkerFailure("bad_reply", "reply is not an object")
            if "error" in frame and isinstance(frame["error"], dict):
                raise StudentError(frame["error"])
            if "ok" in frame:
                return frame["ok"]
            raise WorkerFailure("bad_reply", "reply has neither result nor error")

    def _send(self, message):
        try:
            wire.write_frame(self._write_all, message)
        except (BrokenPipeError, OSError):
            raise WorkerFailure("crashed", self._exit_description()) from None

    def _write_all(self, data):
        view = memoryview(data)
        while view:
            view = view[os.write(self._to_worker, view):]

    def _receive(self, deadline):
        header = self._read_exact(wire.HEADER.size, deadline)
        (size,) = wire.HEADER.unpack(header)
        if size > MAX_REPLY_BYTES:
            raise WorkerFailure("bad_reply", f"reply of {size} bytes is too large")
        try:
            return wire.decode_frame(self._read_exact(size, deadline))
        except wire.WireError as error:
            raise WorkerFailure("bad_reply", str(error)) from None

    def _read_exact(self, n, deadline):
        with selectors.DefaultSelector() as selector:
            selector.register(self._from_worker, selectors.EVENT_READ)
            while len(self._buffer) < n:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    raise WorkerFailure("timeout")
                chunk = os.read(self._from_worker, 1 << 20)
                if not chunk:
                    raise WorkerFailure("crashed", self._exit_description())
                self._buffer += chunk
        data, self._buffer = self._buffer[:n], self._buffer[n:]
        return data

    def _exit_description(self):
        try:
            code = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return "stopped answering"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited with status {code}"

    def output_tail(self, limit=4000):
        """The last of what the student's code printed (for the report)."""
        try:
            with open(self.scratch / "output.log", "rb") as handle:
                handle.seek(0, os.SEEK_END)
                size = handle.tell()
                handle.seek(max(0, size - limit))
                return handle.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def close(self):
        for fd in (self._to_worker, self._from_worker):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.process.kill()
        self.process.wait()
        shutil.rmtree(self.scratch, ignore_errors=True)
