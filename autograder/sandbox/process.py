"""Start untrusted workers (forked from a pre-loaded zygote, isolated) and talk to them.

Everything that comes back is treated as hostile: a reply that is late,
malformed, too large or missing is the submission's error (``WorkerFailure``),
never the grader's.
"""

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import tempfile
import threading
import shutil
import time
import weakref
from dataclasses import dataclass

from autograder.sandbox import wire
from autograder.sandbox import launch as launch_module
from autograder.sandbox.launch import Launch, remove_private_folder, take_early

MAX_REPLY_BYTES = 64 * 1024 * 1024
OUTPUT_TAIL_BYTES = 8 * 1024
ZYGOTE_READY_SECONDS = 120  # the zygote imports torch before it says it is ready
ZYGOTE_ANSWER_SECONDS = 30  # a fork: milliseconds; a zygote this slow is broken


class WorkerFailure(Exception):
    """The worker died, hung, or answered something that is not the protocol."""

    def __init__(self, kind, detail=""):
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind  # "timeout", "crashed", "bad_reply", "gave_up", "load_*", "sandbox"
        # "bad_reply" covers every malformed frame (bad JSON, nested too deep, too large)
        self.detail = detail


class StudentError(Exception):
    """The student's code raised an exception inside the worker."""

    def __init__(self, info):
        self.type = str(info.get("type", "Error"))[:80]
        self.builtin = str(info.get("builtin", self.type))[:80]  # its nearest built-in class
        self.message = str(info.get("message", ""))[:2000]
        where = info.get("where")
        self.where = [str(w)[:200] for w in where[:3]] if isinstance(where, list) else []
        # a traced call's tensors made before it raised, as sent (``Session.call_tracing`` decodes)
        self.trace = info.get("trace") if isinstance(info.get("trace"), dict) else None
        super().__init__(f"{self.type}: {self.message}")


@dataclass(frozen=True)
class Limits:
    memory_bytes: int = 3 * 1024**3
    cpu_seconds: int = 300
    open_files: int = 64
    file_bytes: int = 16 * 1024**2
    processes: int = 32

    def as_rlimits(self):
        return {"RLIMIT_AS": self.memory_bytes, "RLIMIT_CPU": self.cpu_seconds,
                "RLIMIT_NOFILE": self.open_files, "RLIMIT_FSIZE": self.file_bytes,
                "RLIMIT_NPROC": self.processes, "RLIMIT_CORE": 0}


class Zygote:
    """A process that imported torch once and forks an isolated worker per request.

    Made from a ``Launch`` (this process started the zygote and owns it) or from an
    ``Attachment`` (a grading process forked from the owner talks to it on a control
    socket of its own, for one slot; closing it ends nothing but that slot's processes)."""

    def __init__(self, launch=None):
        launch = launch or Launch()
        self.process, self._control = launch.process, launch.control  # process: None if attached
        self.uid_base, self._uid_lock = launch.uid_base, launch.uid_lock
        self._scratch_root = launch.scratch_root
        self._lock = threading.Lock()
        self._live = {}  # slot -> workers of that slot not closed yet
        self._out_of_step = False
        self._control.settimeout(ZYGOTE_READY_SECONDS)
        try:
            ready = json.loads(self._control.recv(1 << 16) or b"{}")
        except (socket.timeout, json.JSONDecodeError):
            ready = {}
        if not ready.get("ready"):
            self.close()
            raise RuntimeError("the sandbox zygote did not start")
        self.isolation = ready["isolation"]  # "namespaces+uid" or "rlimits-only"
        self.reason = ready.get("reason")
        self.seccomp = bool(ready.get("seccomp"))  # the workers' system-call filter is on
        self.seccomp_reason = ready.get("seccomp_reason")
        self._control.settimeout(ZYGOTE_ANSWER_SECONDS)

    def spawn(self, limits, slot=0):
        """A new isolated worker, as a connection to talk to."""
        _refuse_if_stopped()
        to_worker_r, to_worker_w = os.pipe()
        from_worker_r, from_worker_w = os.pipe()
        output_r, output_w = os.pipe()
        scratch = None
        if self.isolation != "namespaces+uid":
            scratch = tempfile.mkdtemp(prefix="worker-", dir=self._scratch_root)
        request = {"slot": slot, "limits": limits.as_rlimits(), "scratch": scratch}
        try:
            with self._lock:
                socket.send_fds(self._control, [json.dumps(request).encode()],
                                [to_worker_r, from_worker_w, output_w])
                reply = json.loads(self._control.recv(1 << 16) or b"{}")
                if "pid" in reply:
                    self._live[slot] = self._live.get(slot, 0) + 1
        except (OSError, json.JSONDecodeError) as error:  # socket.timeout too
            reply = {"error": f"the zygote did not answer: {error}"}
            self._broken()
        finally:
            for fd in (to_worker_r, from_worker_w, output_w):
                os.close(fd)
        if "pid" not in reply:
            for fd in (to_worker_w, from_worker_r, output_r):
                os.close(fd)
            raise WorkerFailure("sandbox", str(reply.get("error", "the zygote did not answer")))
        return WorkerConnection(int(reply["pid"]), to_worker_w, from_worker_r, output_r, scratch,
                                on_close=lambda: self._worker_closed(slot))

    def _worker_closed(self, slot):
        """Once a slot has no worker left, kill whatever still runs under its uid (a
        backstop: the worker was PID 1 of its namespace, so its processes went with it)."""
        with self._lock:
            self._live[slot] -= 1
            if self._live[slot] or self.isolation != "namespaces+uid":
                return
            try:
                self._control.send(json.dumps({"reap": slot}).encode())
            except OSError:
                pass  # a zygote that is gone took every process of its uids with it

    @property
    def usable(self):
        return not self._out_of_step and (self.process is None or self.process.poll() is None)

    def _broken(self):
        """The control socket is out of step: this zygote cannot be trusted with more work
        (``shared_zygote`` starts a new one). SIGTERM: it kills its uids' processes and exits."""
        self._out_of_step = True
        try:
            self._control.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()

    def close(self):
        _end_zygote(self._control, self.process, self._scratch_root, self._uid_lock)


def _end_zygote(control, process, scratch_root, uid_lock):
    """Close the control socket of a zygote; if this process owns it (``process``), end it."""
    try:
        # shutdown first: it also wakes a thread blocked in recv() on this socket (a spawn
        # in flight), which a plain close() would leave waiting while the zygote lives on.
        try:
            control.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        control.close()  # the zygote kills every process of its uids and exits
    finally:
        if process is None:  # attached: the owner ends the zygote and its scratch
            return
        for stop in (None, process.terminate, process.kill):
            if stop is not None:
                stop()  # SIGTERM: the zygote still cleans up; SIGKILL: its workers die
            try:  # with it (parent-death signal), their processes with them (PID 1)
                process.wait(timeout=3)
                break
            except subprocess.TimeoutExpired:
                continue
        remove_private_folder(scratch_root)
        uid_lock.close()


@dataclass(frozen=True)
class Attachment:
    """What a grading process forked from the zygote's owner needs to use that zygote (see
    ``attach``): its own control socket, for one slot."""

    control: socket.socket
    uid_base: int | None
    scratch_root: object
    process: None = None
    uid_lock: None = None


_zygote = None
_attachment = None  # set in a grading process forked from the owner (``adopt``)
_grading_processes = set()  # pids of the grading processes this one forked (``stop`` kills them)
_zygote_lock = threading.Lock()  # held while a zygote starts (it imports torch: seconds)
_start_lock = threading.Lock()  # guards the two below; never held for long
_stopped = False  # set by ``stop``: this process starts no worker any more
_starting = None  # the Launch of a zygote being waited for, so that ``stop`` can end it
_connections = weakref.WeakSet()  # every worker connection of this process
_connections_lock = threading.Lock()


def stop():
    """The grader is ending (Ctrl-C): kill every worker of this process now and start no
    other. A grading thread still talking to a worker then gets a ``WorkerFailure`` at once
    (its worker is gone; its restart is refused) instead of waiting for its time-outs, and
    no new zygote is started behind our back. Irreversible for this process."""
    global _stopped, _zygote
    with _start_lock:
        _stopped = True
        starting = _starting
    for pid in list(_grading_processes):  # they grade with workers of this zygote's uids
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    if starting is not None:  # its starter waits for "ready" holding _zygote_lock: wake it
        _end_launch(starting, close=False)
    with _connections_lock:
        connections = list(_connections)
    for connection in connections:
        connection.kill()
    with _zygote_lock:
        zygote, _zygote = _zygote, None
    if zygote is not None:
        zygote.close()  # the zygote kills every process of its uid block as it exits
    launch = take_early()  # started but never used (Ctrl-C while the batch was being prepared)
    if launch is not None:
        _end_launch(launch)


def close_shared():
    """End this process's zygote, or the one started early and never waited for (its
    attached grading processes are gone: a Dask LocalCluster that was closed), as the end of
    a batch; unlike ``stop``, a later batch of this process may start another."""
    global _zygote
    with _zygote_lock:
        zygote, _zygote = _zygote, None
        launch = take_early()
    if zygote is not None:
        zygote.close()
    if launch is not None:  # SIGTERM: it still kills every process of its uids as it exits
        _end_zygote(launch.control, launch.process, launch.scratch_root, launch.uid_lock)


def _end_launch(launch, close=True):
    """Kill a zygote that is not (yet) a ``Zygote``; ``close``: also release what it holds
    (otherwise ``Zygote.__init__``, which is waiting for it, does that)."""
    try:
        launch.control.shutdown(socket.SHUT_RDWR)  # wakes a recv() in another thread
    except OSError:
        pass
    launch.process.kill()  # it has no worker yet (those start after "ready")
    if close:
        launch.process.wait()
        launch.control.close()
        remove_private_folder(launch.scratch_root)
        launch.uid_lock.close()


def _refuse_if_stopped():
    if _stopped:
        raise WorkerFailure("sandbox", "the grader is stopping (interrupted)")


def sandbox_mode():
    """How this process's workers are isolated: (mode, reason), or None if none started.
    ``mode`` is the isolation ("namespaces+uid" or "rlimits-only") and whether the system-call
    filter is on ("seccomp" or "no-seccomp"); ``reason`` says what is missing, if anything
    (without the filter, "degraded: ..." and why)."""
    zygote = _zygote
    if zygote is None:
        return None
    reasons = [zygote.reason] if zygote.reason else []
    if not zygote.seccomp:
        reasons.append(f"degraded: {zygote.seccomp_reason or 'no seccomp filter'}")
    return (f"{zygote.isolation} {'seccomp' if zygote.seccomp else 'no-seccomp'}",
            "; ".join(reasons) or None)


def sandbox_description():
    """``sandbox_mode`` as one line, as summary.json and the class report show it."""
    mode = sandbox_mode()
    if mode is None:
        return "none (no student code ran)"
    return f"{mode[0]} ({mode[1]})" if mode[1] else mode[0]


def attach(slot):
    """In the zygote's owner, before it forks a grading process for ``slot``: an
    ``Attachment`` for that process (``adopt``), whose socket the zygote serves once it is
    ready. Starts the zygote if none is starting or running."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    message = json.dumps({"connect": int(slot)}).encode()
    try:
        with _zygote_lock:
            _refuse_if_stopped()
            zygote = _zygote if _zygote is not None and _zygote.usable else None
            if zygote is None:
                launch_module.start_early()
                target = launch_module.peek_early()
                socket.send_fds(target.control, [message], [theirs.fileno()])
                return Attachment(ours, target.uid_base, target.scratch_root)
        with zygote._lock:
            socket.send_fds(zygote._control, [message], [theirs.fileno()])
        return Attachment(ours, zygote.uid_base, zygote._scratch_root)
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()


def adopt(attachment):
    """In a grading process just forked from the zygote's owner: use ``attachment`` and
    nothing the owner had (its zygote, its early launch, its list of grading processes)."""
    global _zygote, _attachment, _starting, _stopped
    early = launch_module.peek_early()
    for inherited in (_zygote and _zygote._control, early and early.control,
                      _zygote and _zygote._uid_lock, early and early.uid_lock):
        if inherited:  # our copies only: the owner's stay open (its death must close them)
            inherited.close()
    _zygote, _starting, _stopped, _attachment = None, None, False, attachment
    _grading_processes.clear()
    launch_module.forget_early()


def grading_process_started(pid):
    _grading_processes.add(pid)


def grading_process_ended(pid):
    _grading_processes.discard(pid)


def shared_zygote():
    """The process-wide zygote, started on first use (after ``stop``: a ``WorkerFailure``).
    In a grading process (``adopt``): the owner's, through the attachment; if that one is
    gone, the sandbox is."""
    global _zygote, _starting
    with _zygote_lock:
        _refuse_if_stopped()
        if _attachment is not None:
            if _zygote is None:
                try:
                    _zygote = Zygote(_attachment)
                except RuntimeError:
                    raise WorkerFailure("sandbox", "the sandbox zygote is gone") from None
            elif not _zygote.usable:
                raise WorkerFailure("sandbox", "the sandbox zygote is gone")
            return _zygote
        if _zygote is None or not _zygote.usable:
            with _start_lock:
                _refuse_if_stopped()
                _starting = take_early() or Launch()
            try:
                _zygote = Zygote(_starting)
            except RuntimeError:  # "did not start": because ``stop`` ended it?
                _refuse_if_stopped()
                raise
            finally:
                with _start_lock:
                    _starting = None
            atexit.register(_zygote.close)
        return _zygote


class _OutputTail(threading.Thread):
    """Drains what the worker prints (a flood cannot block it) and keeps only the end."""

    def __init__(self, fd):
        super().__init__(daemon=True)
        self.fd, self.tail, self.total = fd, b"", 0

    def run(self):
        try:
            while chunk := os.read(self.fd, 1 << 16):
                self.total += len(chunk)
                self.tail = (self.tail + chunk)[-OUTPUT_TAIL_BYTES:]
        except OSError:
            pass
        finally:
            os.close(self.fd)


def _wait(poll, deadline):
    """Whether ``poll``'s one descriptor became ready (or hung up) before ``deadline``."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            return bool(poll.poll(max(1, int(left * 1000 + 0.999))))
        except InterruptedError:
            continue


def answer_of(body):
    """A reply frame's body (what follows its length) -> the worker's answer (the value of its
    ``ok``), or ``StudentError`` (its ``error``), or ``WorkerFailure("bad_reply")`` for
    anything else; nothing the frame holds can make this raise another exception."""
    try:
        frame = wire.decode_frame(body)
    except wire.WireError as error:
        raise WorkerFailure("bad_reply", str(error)) from None
    if not isinstance(frame, dict):
        raise WorkerFailure("bad_reply", "reply is not an object")
    if "error" in frame and isinstance(frame["error"], dict):
        raise StudentError(frame["error"])
    if "ok" in frame:
        return frame["ok"]
    raise WorkerFailure("bad_reply", "reply has neither result nor error")


def _tree_cpu_seconds(pid, depth=0):
    """utime + stime of ``pid`` (all its threads, and the children it reaped), plus the same
    for the children it has now; None where ``pid`` cannot be read. Orphans in the worker's
    PID namespace are re-parented to the worker, its PID 1, so they are counted too."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    ticks = sum(int(field) for field in fields[11:15])  # utime stime cutime cstime
    total = ticks / _CLOCK_TICKS
    if depth < 8:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            tasks = ()
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/children", "rb") as listing:
                    children = listing.read().split()
            except OSError:
                continue
            total += sum(_tree_cpu_seconds(int(child), depth + 1) or 0.0 for child in children)
    return total


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class WorkerConnection:
    """The grader's end of one worker's pipes."""

    def __init__(self, pid, to_worker, from_worker, output_fd, scratch=None, on_close=None):
        self.pid, self._to_worker, self._from_worker = pid, to_worker, from_worker
        self._scratch, self._on_close = scratch, on_close
        for fd in (to_worker, from_worker):  # every send and receive waits with a deadline
            os.set_blocking(fd, False)
        # One poll object per direction for the connection's life (not one per read or write).
        self._can_write, self._can_read = select.poll(), select.poll()
        self._can_write.register(to_worker, select.POLLOUT)
        self._can_read.register(from_worker, select.POLLIN)
        try:  # a handle on this very process: its pid may be reused once it is gone
            self._pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            self._pidfd = -1  # already gone
        except (AttributeError, OSError):
            self._pidfd = None  # no pidfd here: signal the pid
        self._output = _OutputTail(output_fd)
        self._output.start()
        self._closed = False
        with _connections_lock:
            _connections.add(self)

    @property
    def alive(self):
        if self._closed:
            return False
        return self._running()

    def cpu_seconds(self):
        """The CPU time (user + system, every thread) the worker and every process under it
        have used so far, as the kernel counts it (``/proc``): a budget charged in it neither
        shrinks when the machine is busy nor rests on what the worker says of itself. None
        once the worker is gone (its pid may belong to another process by then)."""
        total = _tree_cpu_seconds(self.pid)
        return total if total is not None and self._running() else None

    def _running(self):
        if self._pidfd is not None:  # readable once the process has exited
            return self._pidfd >= 0 and not select.select([self._pidfd], [], [], 0)[0]
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def request(self, message, timeout):
        """Send one request and wait for its one reply. The grader answers nothing: a frame
        that asks for something (a "callback") is malformed like any other (``bad_reply``)."""
        deadline = time.monotonic() + timeout
        self._send(message, deadline)
        return answer_of(self._receive(deadline))

    def _send(self, message, deadline):
        try:
            wire.write_frame(lambda data: self._write_all(data, deadline), message)
        except OSError:  # BrokenPipeError: it is gone
            raise WorkerFailure("crashed", self._exit_description()) from None

    def _write_all(self, data, deadline):
        """Write everything before the deadline; a worker that does not read (e.g. one that
        forged an answer and stopped reading before a large request) is a time-out, never a
        grader stuck in write()."""
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self._to_worker, view):]
                continue
            except BlockingIOError:
                pass
            if not _wait(self._can_write, deadline):
                raise WorkerFailure("timeout", "the worker does not read what it is sent")

    def _receive(self, deadline):
        header = self._read_exact(wire.HEADER.size, deadline)
        (size,) = wire.HEADER.unpack(header)
        if size > MAX_REPLY_BYTES:
            raise WorkerFailure("bad_reply", f"reply of {size} bytes is too large")
        return self._read_exact(size, deadline)

    def _read_exact(self, n, deadline):
        """Exactly ``n`` bytes, read in place: a frame at the size limit costs its size once,
        not a copy per pipe-full (64 KB) of it."""
        data = bytearray(n)
        view, have = memoryview(data), 0
        while have < n:
            try:
                got = os.readv(self._from_worker, [view[have:]])
            except BlockingIOError:
                if not _wait(self._can_read, deadline):
                    raise WorkerFailure("timeout") from None
                continue
            if not got:
                raise WorkerFailure("crashed", self._exit_description())
            have += got
        view.release()
        return data

    def _exit_description(self):
        self._output.join(timeout=1)
        tail = self._output.tail.decode("utf-8", "replace").strip().splitlines()
        last = tail[-1][:200] if tail else ""
        if "sandbox setup failed" in last:
            return last
        return "the process ended" + (f"; last output: {last}" if last else "")

    def _kill(self, pid, sig):
        if self._pidfd is None:
            os.kill(pid, sig)
        elif self._pidfd >= 0:
            signal.pidfd_send_signal(self._pidfd, sig)

    def kill(self):
        """Kill the worker (and its session) from any thread; whoever is talking to it sees it
        end. ``close`` still releases its pipes."""
        if self._closed:
            return
        for kill in (os.killpg, self._kill):
            try:
                kill(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError, OSError):
                pass

    def output_tail(self, limit=4000):
        """The last of what the student's code printed (for the report)."""
        return self._output.tail[-limit:].decode("utf-8", "replace")

    def close(self):
        if self._closed:
            return
        self._closed = True
        for fd in (self._to_worker, self._from_worker):
            try:
                os.close(fd)
            except OSError:
                pass
        # The worker is PID 1 of its own PID namespace: every process it started dies with it,
        # whatever it did (setsid, double fork, ignored signals). Without namespaces
        # (rlimits-only) its session is the best we can reach.
        for kill in (os.killpg, self._kill):  # a group id is not reused while it has members
            try:
                kill(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self._pidfd is not None and self._pidfd >= 0:
            os.close(self._pidfd)
            self._pidfd = -1
        if self._on_close is not None:
            self._on_close()
        # The drain thread ends by itself at EOF and closes its pipe: no need to wait for it.
        if self._scratch:
            shutil.rmtree(self._scratch, ignore_errors=True)
