"""The worker process: student code runs there, only plain data comes back."""

import json
import time

import pytest
import torch

import solutions
from autograder.sandbox.process import StudentError, WorkerFailure
from autograder.sandbox.session import Session

SOURCE = '''
import os, sys, time
import torch
import torch.nn as nn

class TooLong(ValueError):
    pass

class Echo(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)
    def forward(self, x, mode="ok"):
        if mode == "raise":
            raise ValueError("student bug")
        if mode == "raise_own":
            raise TooLong("a ValueError of its own")
        if mode == "loop":
            while True:
                pass
        if mode == "sleep":
            time.sleep(60)
        if mode == "exit":
            os._exit(3)
        if mode == "sysexit":
            sys.exit(0)
        return self.lin(x)

class Broken(nn.Module):
    def __init__(self, d):
        super().__init__()
        raise RuntimeError("cannot build")

def try_import(name):
    try:
        __import__(name)
        return "imported"
    except ImportError:
        return "blocked"

def uses_reference(t):
    return MultiHeadAttention(8, 2)(t, t, t)[0]

def spin(cpu_seconds, where="here"):
    if where == "child":  # the CPU a child used is the worker's too
        pid = os.fork()
        if pid == 0:
            spin(cpu_seconds)
            os._exit(0)
        os.waitpid(pid, 0)
        return 0
    end = time.process_time() + cpu_seconds
    while time.process_time() < end:
        pass
    return 0

def nap(seconds):
    time.sleep(seconds)
    return 0
'''


@pytest.fixture
def session():
    s = Session([{"code": SOURCE, "origin": "cell 1"}], ["Echo", "Broken", "missing"], solutions,
                request_timeout=3, max_restarts=5)
    yield s
    s.close()


def test_load_describes_names(session):
    info = session.load()
    assert info["names"]["Echo"]["kind"] == "class" and info["names"]["Echo"]["is_module"]
    assert info["names"]["missing"] == {"kind": "missing"}


def test_student_exception_comes_back_with_its_line(session):
    obj = session.new("Echo", 4)
    with pytest.raises(StudentError) as error:
        session.call(obj, torch.zeros(1, 4), mode="raise")
    assert error.value.type == "ValueError" and "student bug" in error.value.message
    assert any("cell 1" in w for w in error.value.where)


def test_a_students_own_exception_class_comes_back_with_its_builtin_base(session):
    """A check that wants a ValueError (tf.length_error) accepts a subclass of it: the worker
    names the nearest built-in class beside the student's own."""
    obj = session.new("Echo", 4)
    with pytest.raises(StudentError) as error:
        session.call(obj, torch.zeros(1, 4), mode="raise_own")
    assert (error.value.type, error.value.builtin) == ("TooLong", "ValueError")


@pytest.mark.parametrize("mode, kind", [("loop", "timeout"), ("sleep", "timeout"), ("exit", "crashed")])
def test_hang_or_exit_fails_that_request_and_the_next_one_works(session, mode, kind):
    obj = session.new("Echo", 4)
    started = time.monotonic()
    with pytest.raises(WorkerFailure) as failure:
        session.call(obj, torch.zeros(1, 4), mode=mode)
    assert failure.value.kind == kind and time.monotonic() - started < 10
    fresh = session.new("Echo", 4)  # a new worker, the code loaded again
    result = session.call(fresh, torch.ones(2, 4))
    assert result.shape == (2, 4)


@pytest.mark.parametrize("action, args, low, high", [
    ("nap", (1.0,), 0.0, 0.3), ("spin", (1.0,), 0.95, 5.0), ("spin", (1.0, "child"), 0.95, 5.0)])
def test_the_training_budget_charges_the_workers_cpu_time_not_the_clock(action, args, low, high):
    """train.outcome's budget is CPU time the kernel counted for the worker (children
    included): a busy machine slows a run without failing it, and the worker cannot tell it."""
    from autograder.checks import load
    load()  # the registry, in its order: outcome's check needs the others declared
    from autograder.checks.outcome import TrainingBudget

    # a second of CPU can take many seconds of a busy machine's clock
    session = Session([{"code": SOURCE, "origin": "cell 1"}], [], solutions, request_timeout=120)
    try:
        session.load()
        budget = TrainingBudget(session)
        assert budget.run(lambda timeout: session.call(action, *args)) == 0
        assert low <= budget.cpu <= high and budget.wall >= 0.95, (budget.cpu, budget.wall)
    finally:
        session.close()


def test_sys_exit_is_just_an_error(session):
    obj = session.new("Echo", 4)
    with pytest.raises(StudentError, match="SystemExit"):
        session.call(obj, torch.zeros(1, 4), mode="sysexit")


def test_neither_reference_nor_grader_is_importable(session):
    for name in ("solutions", "autograder", "autograder.checks"):
        assert session.call("try_import", name) == "blocked"
    assert session.call("try_import", "torch") == "imported"


def test_no_reference_sublayer_is_ever_provided(session):
    """Nothing is swapped into the student's code: a name it does not define stays undefined
    (the grader never builds or runs a reference part on the worker's behalf)."""
    with pytest.raises(StudentError) as error:
        session.call("uses_reference", torch.randn(1, 3, 8))
    assert error.value.type == "NameError"


def test_a_recorded_call_returns_each_sublayer_call(session):
    obj = session.new("Echo", 4)
    x = torch.randn(2, 4)
    result, records, _ = session.call_recording(obj, [x], record={"modules": ["lin", "nope"]})
    assert [r["names"] for r in records] == [("lin",)]
    assert torch.equal(records[0]["args"][0], x) and torch.equal(records[0]["output"], result)
    assert torch.equal(session.call(obj, x), result)  # the module is as it was


def test_weights_copied_by_attribute_path(session):
    obj = session.new("Echo", 2)
    missing, mismatched = session.set_params(obj, {
        "lin.weight": torch.eye(2), "lin.bias": torch.zeros(2), "nope.weight": torch.eye(2),
        "lin.bias ": torch.zeros(3)})
    assert missing == ["nope.weight", "lin.bias "] or "nope.weight" in missing
    x = torch.tensor([[1.0, 2.0]])
    assert torch.equal(session.call(obj, x), x)


def test_deferred_building_travels_with_the_next_request(session, monkeypatch):
    """Deferred ``new`` requests go in one batch with the request that follows them: one round
    trip; weights land and ``on_answer`` sees what did not fit, as ``new_with_params`` would."""
    session.load()
    frames, real_request = [], Session._request
    monkeypatch.setattr(Session, "_request", lambda self, message, timeout=None: (
        frames.append(message["op"]) if not self._deferred else None) or real_request(self, message, timeout))
    answers = []
    obj = session.new_with_params("Echo", [2], {}, {"lin.weight": torch.eye(2), "lin.bias": torch.zeros(2),
                                                    "nope": torch.zeros(1)},
                                  on_answer=lambda *answer: answers.append(answer))
    assert frames == [] and answers == []
    x = torch.tensor([[1.0, 2.0]])
    assert torch.equal(session.call(obj, x), x)
    assert frames == ["batch"] and answers == [(obj, ["nope"], [])]
    assert obj.params == {"lin.weight": (2, 2), "lin.bias": (2,)}
    session.flush()  # nothing left to send, nothing failed
    assert frames == ["batch"]


def test_a_deferred_building_that_raises_fails_its_users_and_the_flush(session):
    """A module that cannot be built raises its error wherever it is used, and ``flush`` raises
    it once more (the check that built it fails even if it caught the error); what was deferred
    after it is not built."""
    session.load()
    broken = session.new_with_params("Broken", [2], {}, {}, on_answer=lambda *a: None)
    after = session.new_with_params("Echo", [2], {}, {}, on_answer=lambda *a: None)
    with pytest.raises(StudentError, match="cannot build"):
        session.call("try_import", "torch")
    with pytest.raises(StudentError, match="cannot build"):
        session.call(broken, torch.zeros(1, 2))
    with pytest.raises(StudentError, match="cannot build"):
        broken.params
    with pytest.raises(StudentError):
        session.call(after, torch.zeros(1, 2))
    with pytest.raises(StudentError, match="cannot build"):
        session.flush()
    session.flush()  # raised once: the next check starts clean
    assert session.call("try_import", "torch") == "imported"


def test_a_discarded_building_is_never_sent(session):
    session.load()
    session.new_with_params("Broken", [2], {}, {}, on_answer=lambda *a: None)
    session.discard_deferred()
    session.flush()
    assert session.call("try_import", "torch") == "imported"


@pytest.mark.parametrize("inner", [{"op": "load"}, {"op": "batch", "requests": []}, {"op": "nope"}, 7])
def test_a_batch_holds_no_load_no_batch_and_nothing_unknown(session, inner):
    session.load()
    replies = session._request({"op": "batch", "requests": [{"op": "ping"}, inner, {"op": "ping"}]})["replies"]
    assert "ok" in replies[0] and "error" in replies[1] and len(replies) == 2


def test_gives_up_after_too_many_restarts():
    s = Session([{"code": SOURCE, "origin": "cell 1"}], ["Echo"], solutions,
                request_timeout=1, max_restarts=1)
    try:
        for _ in range(2):
            with pytest.raises(WorkerFailure):
                s.call(s.new("Echo", 2), torch.zeros(1, 2), mode="loop")
        with pytest.raises(WorkerFailure) as failure:
            s.new("Echo", 2)
        assert failure.value.kind == "gave_up"
    finally:
        s.close()


def test_hanging_import_is_a_load_failure_without_retries():
    s = Session([{"code": "import time\nclass X:\n    time.sleep(100)", "origin": "cell 1"}], ["X"],
                solutions, startup_timeout=3)
    try:
        with pytest.raises(WorkerFailure) as failure:
            s.load()
        assert failure.value.kind == "load_timeout"
        started = time.monotonic()
        with pytest.raises(WorkerFailure):
            s.new("X")
        assert time.monotonic() - started < 1
    finally:
        s.close()


# -- the attacker's review: file system, /proc, processes, limits, pipes, frames ----------------
import os  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
from pathlib import Path  # noqa: E402

from autograder.sandbox import wire  # noqa: E402
from autograder.sandbox.process import shared_zygote  # noqa: E402

HOSTILE = Path(__file__).parent / "hostile"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="namespaces and a separate uid need root")

PROBES = r'''
import ctypes, importlib, os, resource, sys

def attempt(action, *args):
    try:
        return ["ok", action(*args)]
    except Exception as error:
        return ["blocked", type(error).__name__]

def import_from(folder, name):
    sys.path.insert(0, folder)
    try:
        return attempt(lambda: importlib.import_module(name).__file__)
    finally:
        sys.path.remove(folder)

def read(path):
    return attempt(lambda: open(path).read()[:100])

def write(path):
    def go():
        with open(path, "w") as handle:
            handle.write("I was here")
    return attempt(go)

def listdir(path):
    return attempt(lambda: sorted(os.listdir(path)))

def cmdlines():
    found = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                found[pid] = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
            except OSError:
                pass
    return found

def limits():
    names = ("RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_NOFILE", "RLIMIT_FSIZE", "RLIMIT_NPROC")
    found = {name: list(resource.getrlimit(getattr(resource, name))) for name in names}
    signal = ctypes.c_int(-1)
    ctypes.CDLL(None).prctl(2, ctypes.byref(signal), 0, 0, 0)  # PR_GET_PDEATHSIG
    found["pdeathsig"] = signal.value
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        found["raised"] = True
    except (ValueError, OSError):
        found["raised"] = False
    return found
'''


@pytest.fixture
def probes():
    s = Session([{"code": PROBES, "origin": "cell 1"}], [], solutions, request_timeout=10, max_restarts=1)
    yield s
    s.close()


@pytest.fixture
def decoys():
    """A world-readable copy of the reference under /opt and a world-writable (1777) folder
    under /srv, at random paths, as another checkout or a class folder could be."""
    copy = Path(tempfile.mkdtemp(prefix="autograder-decoy-", dir="/opt"))
    drop = Path(tempfile.mkdtemp(prefix="autograder-drop-", dir="/srv"))
    try:
        shutil.copytree(Path(solutions.__file__).parent, copy / "solutions",
                        ignore=shutil.ignore_patterns("__pycache__"))
        for path in [copy, *copy.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        drop.chmod(0o1777)
        yield copy, drop
    finally:
        shutil.rmtree(copy, ignore_errors=True)
        shutil.rmtree(drop, ignore_errors=True)


@needs_root
def test_the_file_system_is_an_allow_list(probes, decoys):
    copy, drop = decoys
    assert probes.call("import_from", str(copy), "solutions")[0] == "blocked"
    assert probes.call("read", str(copy / "solutions" / "attention.py"))[0] == "blocked"
    assert probes.call("listdir", "/opt")[0] == "blocked"
    for folder in (drop, Path("/var/tmp"), Path("/run/lock"), Path("/var/lock"), Path("/srv")):
        assert probes.call("write", str(folder / "FORGED_BY_STUDENT"))[0] == "blocked", folder
    assert os.listdir(drop) == []
    for path in ("/run/lock", "/var/tmp", "/dev/shm", "/srv"):
        assert not Path(path, "FORGED_BY_STUDENT").exists()
    # What is there: the Python install (read-only), its scratch folder, no host folder.
    root = probes.call("listdir", "/")
    assert root[0] == "ok" and not {"opt", "srv", "var", "home", "mnt", "run", "boot"} & set(root[1])
    assert probes.call("write", os.__file__ + ".forged")[0] == "blocked"
    # its own scratch, the working folder: /tmp/sandbox, or /scratch/sandbox when the Python
    # install itself lies under /tmp (a clone of the kit in /tmp)
    assert probes.call("write", "scratch.txt")[0] == "ok"
    kit = str(Path(solutions.__file__).parent.parent)
    assert probes.call("import_from", kit, "solutions")[0] == "blocked"
    # What lies inside an allowed folder but is not needed (the base interpreter's own
    # site-packages, a copy of the kit installed next to torch) is covered: empty.
    from autograder.sandbox.launch import python_secrets
    for folder in python_secrets():
        assert probes.call("listdir", folder) in (["ok", []], ["blocked", "FileNotFoundError"]), folder


@needs_root
def test_proc_is_the_workers_own(probes):
    seen = probes.call("cmdlines")
    assert "zygote.py" in seen["1"]  # PID 1 is the worker itself, not the host's init
    ours = Path("/proc/self/cmdline").read_bytes().decode(errors="replace")
    assert ours not in seen.values() and not any("pytest" in line for line in seen.values())
    assert len(seen) <= 3  # the worker (and nothing of the host)


@needs_root
def test_limits_are_hard_and_the_death_signal_survives_the_uid_change(probes):
    found = probes.call("limits")
    cpu_soft, cpu_hard = found["RLIMIT_CPU"]
    assert cpu_soft < cpu_hard <= cpu_soft + 5  # SIGXCPU first, then SIGKILL
    for name in ("RLIMIT_AS", "RLIMIT_NOFILE", "RLIMIT_FSIZE", "RLIMIT_NPROC"):
        assert found[name][0] == found[name][1], name
    assert found["raised"] is False
    assert found["pdeathsig"] == signal.SIGKILL


def _slot_processes(slot=0):
    uid = shared_zygote().uid_base + slot
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            lines = status.read_text().splitlines()
            line = next(l for l in lines if l.startswith("Uid:"))
            state = next(l for l in lines if l.startswith("State:")).split()[1]
        except (OSError, StopIteration, IndexError):
            continue
        if int(line.split()[1]) == uid and state not in "ZX":  # a zombie has ended
            found.append(int(status.parent.name))
    return found


@needs_root
def test_no_process_outlives_a_closed_worker():
    """escape_processes: setsid + double-forked sleeper ignoring SIGTERM, own session, CPU
    limit raised, os._exit replaced."""
    s = Session([{"code": (HOSTILE / "escape_processes.py").read_text(), "origin": "cell 1"}],
                ["scaled_dot_product_attention"], solutions, request_timeout=2, max_restarts=1)
    try:
        with pytest.raises(WorkerFailure):
            s.call("scaled_dot_product_attention", torch.zeros(1, 2), torch.zeros(1, 2), torch.zeros(1, 2))
    finally:
        s.close()
    deadline = time.monotonic() + 5
    while _slot_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _slot_processes() == []


def test_a_reply_nested_100000_deep_is_the_students_fault():
    s = Session([{"code": (HOSTILE / "deep_reply.py").read_text(), "origin": "cell 1"}],
                ["scaled_dot_product_attention", "causal_mask"], solutions, request_timeout=5)
    try:
        q = torch.zeros(1, 2, 2)
        with pytest.raises(WorkerFailure) as failure:
            s.call("scaled_dot_product_attention", q, q, q)
        assert failure.value.kind == "bad_reply" and "nested deeper" in failure.value.detail
        with pytest.raises(WorkerFailure) as failure:
            s.call("causal_mask", 3)
        assert failure.value.kind == "bad_reply" and "not valid JSON" in failure.value.detail
    finally:
        s.close()


def test_frames_are_bounded():
    for payload, detail in ((b"[" * 100_000 + b"]" * 100_000, "nested deeper"),
                            (b"[" * 65 + b"]" * 65, "nested deeper"),
                            (b"[" + b"0," * 1_000_001 + b"0]", "more than"),
                            (b"1" * 5000, "not valid JSON"), (b"\xff", "not valid JSON")):
        with pytest.raises(wire.WireError, match=detail):
            wire.decode_frame(wire.frame_body(payload))
    assert wire.decode_frame(wire.frame_body(b'{"ok": [[1, {"a": [2]}]]}')) == {"ok": [[1, {"a": [2]}]]}


def test_tensors_travel_as_raw_bytes_after_the_json_and_are_checked():
    values = [torch.randn(3, 4), torch.arange(6).reshape(2, 3), torch.ones(2, dtype=torch.bool),
              torch.randn(2, 2, dtype=torch.float64).t(), torch.empty(0, 5)]
    written = []
    wire.write_frame(written.append, {"ok": wire.encode_value(values)})
    frame = written[0]
    (size,) = wire.HEADER.unpack_from(frame)
    body = frame[wire.HEADER.size:]
    assert size == len(body)
    (json_size,) = wire.HEADER.unpack_from(body)
    assert b"__tensor__" in body[4:4 + json_size] and len(body) - 4 - json_size == sum(
        v.numel() * v.element_size() for v in values)  # the bytes themselves, not base64 text
    decoded = wire.decode_value(wire.decode_frame(body)["ok"])
    assert all(torch.equal(a, b) and a.dtype == b.dtype for a, b in zip(decoded, values))
    decoded[0].add_(1)  # a decoded tensor owns its memory: nothing else changes with it
    assert torch.equal(wire.decode_value(wire.decode_frame(body)["ok"])[0], values[0])

    def tensor_frame(data, blobs=b"\0" * 16, shape=(2, 2)):
        meta = {"dtype": "float32", "shape": list(shape), "device": "cpu", "data": data}
        return wire.frame_body(json.dumps({"ok": {"__tensor__": meta}}).encode(), blobs)

    for body, detail in ((tensor_frame([8, 16]), "bad tensor data"),  # past the frame's end
                         (tensor_frame([0, -16]), "bad tensor data"),
                         (tensor_frame([0.0, 16]), "bad tensor data"),
                         (tensor_frame([0, 16, 0]), "bad tensor data"),
                         (tensor_frame("AAAA"), "bad tensor data"),  # base64 text: not this format
                         (wire.HEADER.pack(99) + b"{}", "longer than the reply"),
                         (b"\0\0", "shorter than its header")):
        with pytest.raises(wire.WireError, match=detail):
            wire.decode_value(wire.decode_frame(body)["ok"])
    # Each decoded tensor is a copy: tensors sharing bytes would multiply a frame's size.
    shared = {"dtype": "float32", "shape": [2, 2], "device": "cpu", "data": [0, 16]}
    aliased = wire.frame_body(json.dumps({"ok": [{"__tensor__": dict(shared)} for _ in range(2)]}).encode(),
                              b"\0" * 16)
    with pytest.raises(wire.WireError, match="claim more bytes"):
        wire.decode_frame(aliased)
    with pytest.raises(wire.WireError, match="does not match its shape"):
        wire.decode_value(wire.decode_frame(tensor_frame([0, 12]))["ok"])
    assert torch.equal(wire.decode_value(wire.decode_frame(tensor_frame([0, 16]))["ok"]), torch.zeros(2, 2))
    # The worker's trusted frames resolve [offset, size] late, from the frame it is answering;
    # in the grader nothing is such a frame, so a reference that was not resolved finds nothing.
    unresolved = {"__tensor__": {"dtype": "float32", "shape": [2, 2], "device": "cpu", "data": [0, 16]}}
    with pytest.raises(wire.WireError):
        wire.decode_value(unresolved)


def _in_a_thread(action, limit=30):
    """Run ``action``; returns (what it raised, seconds), or fails if it is still blocked."""
    outcome = {}

    def run():
        try:
            action()
        except BaseException as error:  # noqa: BLE001 - reported to the test
            outcome["error"] = error

    started = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(limit)
    assert not thread.is_alive(), "the grader is stuck writing to a worker that does not read"
    return outcome.get("error"), time.monotonic() - started


def test_a_worker_that_stops_reading_is_a_timeout():
    """unread_callback: asks for a 3000x3000 mask and never reads it (sdpa), or forges an
    answer and never reads the next request (causal_mask): the grader's writes have a
    deadline like its reads."""
    s = Session([{"code": (HOSTILE / "unread_callback.py").read_text(), "origin": "cell 1"}],
                ["causal_mask"], solutions, request_timeout=2, max_restarts=3)
    q = torch.zeros(1, 2, 2)
    try:
        error, seconds = _in_a_thread(lambda: s.call("scaled_dot_product_attention", q, q, q))
        # timeout: the callback answer could not be written in time; bad_reply: a grader that
        # answers no callbacks refuses the request outright
        assert isinstance(error, WorkerFailure) and error.kind in ("timeout", "bad_reply"), error
        assert seconds < 10
        assert s.call("causal_mask", 3) is None  # the forged answer
        error, seconds = _in_a_thread(lambda: s.call("causal_mask", torch.zeros(1000, 1000)))
        assert isinstance(error, WorkerFailure) and error.kind == "timeout", error
        assert seconds < 10
    finally:
        s.close()


def test_every_write_to_a_worker_has_a_deadline():
    """A process that never reads its request pipe: a 4 MB request (far more than a pipe
    holds) fails with a timeout at the deadline instead of blocking the grader in write()."""
    import subprocess

    from autograder.sandbox.process import WorkerConnection

    sleeper = subprocess.Popen(["sleep", "60"])
    to_worker_r, to_worker_w = os.pipe()
    from_worker_r, from_worker_w = os.pipe()
    output_r, output_w = os.pipe()
    os.close(output_w)
    connection = WorkerConnection(sleeper.pid, to_worker_w, from_worker_r, output_r)
    try:
        error, seconds = _in_a_thread(
            lambda: connection.request({"op": "ping", "padding": "x" * (4 << 20)}, timeout=1), limit=10)
        assert isinstance(error, WorkerFailure) and error.kind == "timeout" and seconds < 3, error
    finally:
        connection.close()
        sleeper.wait(timeout=5)
        for fd in (to_worker_r, from_worker_w):
            os.close(fd)
    assert sleeper.returncode == -signal.SIGKILL


DYNAMO_PROBE = '''
import sys as _sys

def dynamo_imported():
    return "torch._dynamo" in _sys.modules

def meta_kernel(op):
    return [line for line in torch._C._dispatch_dump(op).splitlines() if line.startswith("Meta:")]
'''


@pytest.mark.parametrize("assignment", ["encoder", "decoder"])
def test_a_workers_runs_on_meta_leave_dynamo_unimported(assignment):
    """The zygote warms the meta device up with a stand-in for torch._dynamo
    (meta_device.warm_up_meta): a worker that runs a block on meta, as the device checks do,
    must not import the real one (about a second of CPU in every worker)."""
    corpus = Path(__file__).parent / "corpus" / assignment / "correct"
    block = "EncoderBlock" if assignment == "encoder" else "DecoderBlock"
    for path in sorted(corpus.glob("*.py"))[:4]:
        s = Session([{"code": path.read_text() + DYNAMO_PROBE, "origin": "cell 1"}], [block],
                    solutions, request_timeout=10, max_restarts=0)
        try:
            assert s.call("dynamo_imported") is False
            obj = s.new(block, 16, 4, 32, device="meta")
            x = torch.randn(2, 5, 16, device="meta")
            result = s.call(obj, x) if assignment == "encoder" else s.call(obj, x, torch.randn(2, 7, 16, device="meta"))
            out = result[0] if isinstance(result, (tuple, list)) else result
            assert out.device.type == "meta" and tuple(out.shape) == (2, 5, 16), path.name
            assert s.call("dynamo_imported") is False, f"{path.name}: torch._dynamo was imported"
        finally:
            s.close()


def test_a_worker_uses_the_c_meta_kernels_and_keeps_the_python_ones_where_there_are_none():
    """meta_device.native_meta_kernels: on meta, ops with a C++ kernel run it (a block's forward
    ~10x faster than through torch's Python decompositions); ops without one keep theirs."""
    path = Path(__file__).parent / "corpus" / "decoder" / "correct" / "clones_deepcopy.py"
    s = Session([{"code": path.read_text() + DYNAMO_PROBE, "origin": "cell 1"}], [], solutions,
                request_timeout=10, max_restarts=0)
    try:
        for op in ("aten::add.Tensor", "aten::addmm", "aten::gelu", "aten::_softmax"):
            (line,) = s.call("meta_kernel", op)
            assert ".cpp" in line, f"{op}: {line}"
        for op in ("aten::native_layer_norm", "aten::native_batch_norm"):  # no C++ meta kernel
            (line,) = s.call("meta_kernel", op)
            assert ".py" in line, f"{op}: {line}"
    finally:
        s.close()


def _can_collapse_to_huge_pages():
    """MADV_COLLAPSE: Linux 6.1 or newer, transparent huge pages not switched off."""
    release = tuple(int(n) for n in os.uname().release.split("-")[0].split(".")[:2])
    setting = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    return release >= (6, 1) and setting.exists() and "[never]" not in setting.read_text()


@pytest.mark.skipif(not _can_collapse_to_huge_pages(), reason="needs MADV_COLLAPSE")
def test_the_zygotes_memory_moves_to_huge_pages():
    """zygote.huge_pages_in_background: forking a worker copies one page-table entry per
    page of the zygote, so its ~150 MB of anonymous memory go into 2 MB pages."""
    from autograder.sandbox.process import shared_zygote

    zygote = shared_zygote()
    rollup = Path(f"/proc/{zygote.process.pid}/smaps_rollup")
    deadline = time.monotonic() + 20
    huge = 0
    while time.monotonic() < deadline:
        huge = next(int(line.split()[1]) for line in rollup.read_text().splitlines()
                    if line.startswith("AnonHugePages:"))
        if huge >= 32 * 1024:
            break
        time.sleep(0.2)
    assert huge >= 32 * 1024, f"only {huge} kB of the zygote are in huge pages"


COLLAPSE_PAST_A_REFUSING_REGION = '''
import ctypes, mmap, sys
sys.path.insert(0, sys.argv[1])
import zygote

HUGE = 2 << 20
memory = mmap.mmap(-1, 12 * HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
start = -(-ctypes.addressof(ctypes.c_char.from_buffer(memory)) // HUGE) * HUGE
offset = start - ctypes.addressof(ctypes.c_char.from_buffer(memory))
memory.madvise(mmap.MADV_NOHUGEPAGE, offset, 4 * HUGE)  # its own region, which answers EINVAL
for page in range(0, 12 * HUGE, 4096):
    memory[page] = 1
zygote._collapse_anonymous_memory()
after = start + 4 * HUGE  # the region right above it, at a higher address: later in the maps
lines = open("/proc/self/smaps").read().splitlines()
here = next(i for i, line in enumerate(lines) if line.startswith(f"{after:x}-"))
print(next(int(line.split()[1]) for line in lines[here:] if line.startswith("AnonHugePages:")))
'''


@pytest.mark.slow  # large memory regions
@pytest.mark.skipif(not _can_collapse_to_huge_pages(), reason="needs MADV_COLLAPSE")
def test_a_region_that_refuses_to_collapse_does_not_stop_the_rest():
    """A region answering EINVAL (here one marked MADV_NOHUGEPAGE; in the zygote a thread's
    stack) used to end the pass as if the kernel had no MADV_COLLAPSE, which left half the
    zygote's memory in 4 KB pages; the regions after it still collapse."""
    import subprocess
    import sys

    folder = Path(__file__).resolve().parent.parent / "autograder" / "sandbox"
    result = subprocess.run([sys.executable, "-c", COLLAPSE_PAST_A_REFUSING_REGION, str(folder)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert int(result.stdout.split()[-1]) >= 4096, result.stdout


SIGNATURES = '''
import torch
import torch.nn as nn

class Scale(nn.Module):
    def forward(self, x, factor=2.0):
        return x * factor

class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Scale()
    def forward(self, x):
        return self.inner(x)

def change_default(value):
    Scale.forward.__defaults__ = (value,)
    return value
'''


def test_a_recorded_sublayers_signature_follows_its_defaults():
    """The worker keeps what it read of a sub-layer's signature (worker._signature) only
    while the function's defaults are the same objects."""
    s = Session([{"code": SIGNATURES, "origin": "cell 1"}], ["Outer"], solutions, request_timeout=10,
                max_restarts=0)
    try:
        x = torch.ones(1, 2)
        seen = []
        for value in (None, 3.0, 5.0):
            if value is not None:
                s.call("change_default", value)
            obj = s.new("Outer")
            result, records, _ = s.call_recording(obj, [x], record={"modules": ["inner"]})
            (record,) = records
            assert record["params"] == [("x", "POSITIONAL_OR_KEYWORD", False),
                                        ("factor", "POSITIONAL_OR_KEYWORD", True)]
            seen.append((record["defaults"]["factor"], float(result[0, 0])))
        assert seen == [(2.0, 2.0), (3.0, 3.0), (5.0, 5.0)]
    finally:
        s.close()


NETWORK_PROBE = '''
import os
import socket

def network_namespace():
    return os.readlink("/proc/self/ns/net")

def ipc_namespace():
    return os.readlink("/proc/self/ns/ipc")

def can_reach_loopback():
    try:
        socket.create_connection(("127.0.0.1", 9), timeout=1).close()
        return True
    except OSError as error:
        return error.errno != 101 and "unreachable" not in str(error).lower() and str(error)
'''


def test_a_slots_workers_share_an_empty_network_namespace_of_their_own():
    """isolation.empty_network_namespace: the workers of one slot enter the same empty network
    namespace (no loopback up), which the zygote holds; another slot has another; none is the
    grader's; the IPC namespace is still new for each worker."""
    seen, sessions = {}, []
    try:  # all alive to the end: a namespace's inode number is reused once it is gone
        for slot, turn in ((0, 1), (0, 2), (1, 1)):
            s = Session([{"code": NETWORK_PROBE, "origin": "cell 1"}], [], solutions, request_timeout=10,
                        max_restarts=0, slot=slot)
            sessions.append(s)
            seen[slot, turn] = (s.call("network_namespace"), s.call("ipc_namespace"))
            assert s.call("can_reach_loopback") is False
    finally:
        for s in sessions:
            s.close()
    assert seen[0, 1][0] == seen[0, 2][0] != seen[1, 1][0]
    assert os.readlink("/proc/self/ns/net") not in {net for net, _ in seen.values()}
    assert len({ipc for _, ipc in seen.values()} | {os.readlink("/proc/self/ns/ipc")}) == 4


# -- system calls ------------------------------------------------------------------------------
def _seccomp_here():
    """A kernel with seccomp filters and libseccomp to build one."""
    import ctypes
    try:
        ctypes.CDLL("libseccomp.so.2")
    except OSError:
        return False
    return "Seccomp_filters:" in Path("/proc/self/status").read_text()


needs_seccomp = pytest.mark.skipif(not _seccomp_here(), reason="no seccomp here: the run says it is degraded")


@needs_seccomp
def test_system_calls_a_container_refuses_are_refused():
    """hostile/system_calls.py: kernel keyrings, ptrace, unshare (a user namespace too), mount,
    pivot_root, bpf, perf_event_open, userfaultfd, io_uring, kexec, modules, a personality
    flag, process_vm_readv: EPERM; clone3: ENOSYS (glibc falls back to clone); torch still
    starts threads. On main, add_key, keyctl, unshare, mount and process_vm_readv went through."""
    import errno

    from autograder.sandbox.process import sandbox_mode

    s = Session([{"code": (HOSTILE / "system_calls.py").read_text(), "origin": "cell 1"}], [], solutions,
                request_timeout=20, max_restarts=0)
    try:
        found = s.call("attempts")
        assert s.call("threads_still_work") == [2, True, True]
    finally:
        s.close()
    refused = {name: tuple(answer) for name, answer in found.items()}
    assert refused == {name: (-1, errno.ENOSYS if name == "clone3" else errno.EPERM) for name in found}
    assert len(refused) >= 20
    assert sandbox_mode()[0].split()[1] == "seccomp"


def test_without_the_filter_the_run_says_it_is_degraded(tmp_path):
    """AUTOGRADER_SECCOMP=off stands for a kernel without seccomp: the workers run without the
    filter (keyctl goes through) and summary.json, the class report and the terminal say that
    this run was degraded."""
    import subprocess
    import sys

    from conftest import EXAMPLES

    submitted = tmp_path / "submitted" / "andi" / "attention"
    submitted.mkdir(parents=True)
    shutil.copy(EXAMPLES / "andi" / "attention" / "attention.ipynb", submitted)
    mallory = tmp_path / "submitted" / "mallory" / "attention"
    mallory.mkdir(parents=True)
    shutil.copy(HOSTILE / "system_calls.py", mallory / "attention.py")
    out = tmp_path / "reports"
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(tmp_path / "submitted"), "-a",
                           "attention", "-o", str(out), "--lang", "en"], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "AUTOGRADER_SECCOMP": "off"})
    assert done.returncode == 0, done.stderr[-3000:]
    sandbox = json.loads((out / "summary.json").read_text())["sandbox"]
    assert "no-seccomp" in sandbox.split(" (")[0] and "degraded" in sandbox, sandbox
    assert "degraded" in (out / "report.json").read_text() and "no-seccomp" in (out / "report.html").read_text()
    assert "WITHOUT the system-call filter" in done.stderr


def test_a_killed_graders_folders_go_with_the_next_start_a_living_ones_stay():
    """The scratch and spool folders (the spool holds copies of submissions) are locked by
    their grader for its life: a grader killed with SIGKILL (no clean-up runs) leaves them,
    and the next ``private_folder`` of that kind removes them; a living grader's are kept,
    and so is what a forked child of it still holds."""
    import subprocess
    import sys

    from autograder.sandbox import launch

    holder = ("import os, sys, time\n"
              "from autograder.sandbox import launch\n"
              "folder = launch.private_folder(sys.argv[1])\n"
              "(folder / 'attention.ipynb').write_text('a copy of a submission')\n"
              "if sys.argv[2] == 'fork' and os.fork():\n"
              "    os._exit(0)  # the parent goes; its forked child holds the folder\n"
              "print(folder, flush=True)\n"
              "time.sleep(600)\n")
    holders = {}
    try:
        for prefix in (launch.SCRATCH_PREFIX, launch.SPOOL_PREFIX):
            for how in ("killed", "living", "fork"):
                process = subprocess.Popen([sys.executable, "-c", holder, prefix, how], stdout=subprocess.PIPE,
                                           text=True, start_new_session=True)
                holders[prefix, how] = process, Path(process.stdout.readline().strip())
                assert (holders[prefix, how][1] / "attention.ipynb").is_file()
        for prefix in (launch.SCRATCH_PREFIX, launch.SPOOL_PREFIX):
            holders[prefix, "killed"][0].kill()
            holders[prefix, "killed"][0].wait()
            assert holders[prefix, "killed"][1].is_dir()  # SIGKILL: nothing cleaned up
            mine = launch.private_folder(prefix)
            try:
                assert not holders[prefix, "killed"][1].exists()
                assert (holders[prefix, "living"][1] / "attention.ipynb").is_file()
                assert (holders[prefix, "fork"][1] / "attention.ipynb").is_file()
                assert mine.is_dir() and mine.name.startswith(prefix) and mine.stat().st_mode & 0o777 == 0o700
            finally:
                launch.remove_private_folder(mine)
            assert not mine.exists()
    finally:
        for process, folder in holders.values():
            try:
                os.killpg(process.pid, signal.SIGKILL)  # the forked child too
            except ProcessLookupError:
                pass  # the killed one
            process.wait()
            shutil.rmtree(folder, ignore_errors=True)


GC_PROBE = '''
import gc

def collections_so_far():
    """(full collections this process and the zygote it is a fork of made, gc on, frozen objects)."""
    return [gc.get_stats()[2]["collections"], gc.isenabled(), gc.get_freeze_count()]
'''


def test_the_zygote_imports_torch_without_collecting_and_its_workers_collect_their_own_objects():
    """The zygote's start (importing torch, the warm-up) runs with the collector off: each full
    collection there walks all of torch's objects, ~0.1-0.2 s before the zygote is ready, on
    the path of every cold grading. Its workers (forks) have it on, with all of that frozen."""
    from autograder.sandbox.launch import Launch
    from autograder.sandbox.process import Zygote

    zygote = Zygote(Launch())  # its own: a shared one's later life may have collected
    try:
        s = Session([{"code": GC_PROBE, "origin": "cell 1"}], [], solutions, request_timeout=10,
                    max_restarts=0, zygote=zygote)
        try:
            full, enabled, frozen = s.call("collections_so_far")
        finally:
            s.close()
    finally:
        zygote.close()
    assert enabled and frozen > 100_000
    assert full == 0  # three or more without it
