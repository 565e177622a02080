"""Hostile submissions, graded in one batch with a correct one: no undeserved points, no
crash, no hang past the limits, nothing written or reached outside the worker."""

import inspect
import json
import os
import queue
import re
import runpy
import socket
import threading
import time
from pathlib import Path

import pytest

import solutions.attention
from autograder import config
from autograder.grading.grader import grade
from conftest import EXAMPLES, course_with
from autograder import plan as plans
from autograder.loading import Submission
from autograder.sandbox.process import shared_zygote

pytestmark = pytest.mark.slow  # one batch of every hostile file, its limits waited out

HOSTILE = sorted((Path(__file__).parent / "hostile").glob("*.py"))
FORGED_NAMES = ("results.json", "gradebook.csv", "summary.json", "FORGED_BY_STUDENT")
CHECK_TIMEOUT, SUBMISSION_TIMEOUT = 2, 20
HANG = SUBMISSION_TIMEOUT + 60  # a submission still being graded after this hangs the grader
JOBS = 4  # hostile files graded at once in the batch
UID_FIRST, UID_BLOCK = 61000, 64
SLEEPER_NAME = "hostile-sleeper"  # what escape_processes.py names the process it hides


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return plans.resolve(course_with(tmp_path_factory.mktemp("course"), request_timeout=CHECK_TIMEOUT,
                                     submission_timeout=SUBMISSION_TIMEOUT, startup_timeout=10,
                                     max_restarts=2), "attention")


@pytest.fixture(scope="module")
def decoys():
    """What a machine may hold outside the kit and /tmp: a world-readable copy of the
    reference (a second checkout, an instructor's nbgrader source/) under /opt, and a
    world-writable (1777) folder under /srv, both at random paths."""
    import shutil
    import tempfile

    copy = Path(tempfile.mkdtemp(prefix="autograder-decoy-", dir="/opt"))
    drop = Path(tempfile.mkdtemp(prefix="autograder-drop-", dir="/srv"))
    try:
        shutil.copytree(Path(solutions.attention.__file__).parent, copy / "solutions",
                        ignore=shutil.ignore_patterns("__pycache__"))
        for path in [copy, *copy.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        drop.chmod(0o1777)
        yield {"copy": copy, "drop": drop}
    finally:
        shutil.rmtree(copy, ignore_errors=True)
        shutil.rmtree(drop, ignore_errors=True)


def places_a_forger_would_write(decoys=None):
    here = Path.cwd()
    places = {here, here.parent, here.parent.parent, Path("/tmp"), Path.home(), Path(__file__).parent,
              Path(__file__).parent / "hostile", Path(config.DEFAULT_PATH).parent,
              Path("/var/tmp"), Path("/run/lock"), Path("/dev/shm"), Path("/srv"), Path("/opt")}
    return places | ({decoys["copy"], decoys["drop"]} if decoys else set())


def processes_by_uid():
    """{pid: (uid, comm, start time in clock ticks)} of every process on the machine."""
    found = {}
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            lines = status.read_text().splitlines()
            uid = int(next(l for l in lines if l.startswith("Uid:")).split()[1])
            comm = next(l for l in lines if l.startswith("Name:")).split(maxsplit=1)[1]
            stat = (status.parent / "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            started = int(fields[19])
        except (OSError, StopIteration, ValueError, IndexError):
            continue
        if fields[0] not in "ZX":  # a zombie has ended; only its parent's wait() is missing
            found[int(status.parent.name)] = (uid, comm, started)
    return found


def sandbox_processes(first=None):
    first = shared_zygote().uid_base if first is None else first
    return sorted(pid for pid, (uid, _, _) in processes_by_uid().items()
                  if first <= uid < first + UID_BLOCK)


@pytest.fixture(scope="module")
def batch(course, decoys, tmp_path_factory):
    """Grade every hostile file, then the reference, in one process (one zygote). Each one
    in a thread: a grader that hangs is a failure of that submission, not of the suite."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))  # a free port, chosen now: another suite may run beside this one
    listener.listen()
    listener.settimeout(0.2)
    contacts = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                contacts.append(listener.accept())
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    before = {p: set(os.listdir(p)) for p in places_a_forger_would_write(decoys) if p.is_dir()}
    correct = tmp_path_factory.mktemp("correct") / "correct.py"
    correct.write_text(Path(inspect.getfile(solutions.attention)).read_text())
    results, times, hung = {}, {}, []
    shared_zygote()  # started before the clocks: its torch import is no submission's time
    # The hostile files side by side, each on its own sandbox slot as `--jobs` grades a class
    # (most of their time is a limit being waited out), then the correct one alone: its checks
    # run under the short CHECK_TIMEOUT, which hostile neighbours hogging the CPU must not decide.
    hostile = [(path.stem, path) for path in HOSTILE]
    network = calling_home(listener.getsockname()[1], tmp_path_factory.mktemp("network"))
    hostile[[name for name, _ in hostile].index("network")] = ("network", network)
    # The control: run here, outside the sandbox, the copy reaches the listener.
    runpy.run_path(str(network))["_call_home"]()
    deadline = time.monotonic() + 5
    while not contacts and time.monotonic() < deadline:
        time.sleep(0.05)
    heard_outside = len(contacts)
    for connection, _ in contacts:
        connection.close()
    contacts.clear()
    hung += grade_side_by_side(hostile, course, results, times, JOBS)
    hung += grade_side_by_side([("correct", correct)], course, results, times, 1)
    stop.set()
    thread.join()
    listener.close()
    after = {p: set(os.listdir(p)) for p in before}
    return {"results": results, "times": times, "contacts": contacts, "hung": hung,
            "heard_outside": heard_outside, "new_files": {p: after[p] - before[p] for p in before}}


def calling_home(port, folder):
    """A copy of hostile/network.py that tries ``port`` (where the batch listens) first."""
    text, count = re.subn(r"(?m)^LISTENING_PORT = 0\b", f"LISTENING_PORT = {port}",
                          (Path(__file__).parent / "hostile" / "network.py").read_text())
    assert count == 1, "hostile/network.py has no single 'LISTENING_PORT = 0' line"
    path = folder / "network.py"
    path.write_text(text)
    return path


def grade_side_by_side(submissions, course, results, times, jobs):
    """Grade ``submissions`` ([(name, path)]) with up to ``jobs`` at once, each in a daemon
    thread on a sandbox slot of its own; ``times`` gets each one's time from its own start.
    Returns the names that hung: still grading HANG s after they started, or never started
    because every slot was held by one that hung."""
    free = queue.SimpleQueue()
    for slot in range(jobs):
        free.put(slot)
    started, finished, lock = {}, set(), threading.Lock()

    def work(name, path):
        slot = free.get()
        with lock:
            started[name] = time.monotonic()
        try:
            results[name] = grade(Submission(name, "attention", path), course, slot=slot)
        finally:
            with lock:
                times[name] = time.monotonic() - started[name]
                finished.add(name)
            free.put(slot)

    for name, path in submissions:
        threading.Thread(target=work, args=(name, path), daemon=True).start()
    while True:
        with lock:
            now = time.monotonic()
            hung = [name for name in started if name not in finished and now - started[name] > HANG]
            grading = len(started) - len(finished) - len(hung)
            if len(finished) == len(submissions) or (grading == 0 and len(hung) == jobs):
                return hung + [name for name, _ in submissions if name not in started]
        time.sleep(0.2)


# Checks that read only the definition and the layers built, never a call's result.
BUILDING_ONLY = (".present", ".construct", ".param_count")


@pytest.mark.parametrize("name", [p.stem for p in HOSTILE])
def test_no_undeserved_points_and_no_hang(batch, name):
    assert name not in batch["hung"], f"grading {name} still had not finished after {HANG} s"
    result = batch["results"][name]
    # What a stub that defines the names and builds its layers earns (present, construct, and
    # the parameter count of the layers it built, which no gate hides: registry's budget bounds
    # it) is not undeserved; nothing that calls the code may pay.
    earned = [o.check.id for o in result.outcomes
              if o.score > 0 and not o.check.id.endswith(BUILDING_ONLY)]
    assert earned == [], f"{name} earned points on {earned}"
    assert not result.grader_errors, [o.message for o in result.grader_errors]
    assert batch["times"][name] < SUBMISSION_TIMEOUT + 15 + CHECK_TIMEOUT * 3


def test_the_correct_submission_in_the_same_batch_gets_full_marks(batch):
    result = batch["results"]["correct"]
    assert result.score == result.max_score, [(o.check.id, o.message) for o in result.outcomes
                                             if o.status != "passed"]


@pytest.mark.parametrize("name", ["steal_reference", "escape_filesystem"])
def test_the_reference_was_never_reached(batch, name):
    # steal_reference hands in the reference's answers if it can import or find the kit's;
    # escape_filesystem if it finds the world-readable copy the decoys fixture put in /opt.
    result = batch["results"][name]
    assert [o.check.id for o in result.outcomes if o.status == "passed"] == ["sdpa.present", "causal.present",
                                                                             "mha.present"]


@pytest.mark.skipif(os.geteuid() != 0, reason="namespaces and a separate uid need root")
def test_world_writable_host_folders_stay_empty(batch, decoys):
    # escape_filesystem writes into every folder it can find; the 1777 folder must stay empty.
    assert sorted(os.listdir(decoys["drop"])) == []
    assert sorted(os.listdir(decoys["copy"])) == ["solutions"]


def test_nothing_was_written_outside_the_sandbox(batch):
    forged = {str(p): sorted(n for n in names if n in FORGED_NAMES)
              for p, names in batch["new_files"].items()}
    assert all(not names for names in forged.values()), forged


def test_no_connection_reached_the_host(batch):
    assert batch["heard_outside"] == 1  # the listener hears network.py when it runs unsandboxed
    assert batch["contacts"] == []


def test_no_process_outlives_its_worker(batch):
    # fork_bomb and escape_processes (setsid, double fork, SIGTERM ignored, its own CPU
    # limit raised, os._exit replaced) leave processes behind if they can.
    deadline = time.monotonic() + 5
    while sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    left = processes_by_uid()
    assert [left.get(pid) for pid in sandbox_processes()] == []


def _zygote_and_uid_block(grader_pid):
    """The zygote a grader process started, and the uid block of its workers (from the uid
    of any process below the zygote)."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            parents[int(stat.parent.name)] = int(text[text.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    uids = processes_by_uid()
    for zygote in [pid for pid, parent in parents.items() if parent == grader_pid]:
        below, todo = set(), [zygote]
        while todo:
            pid = todo.pop()
            children = [child for child, parent in parents.items() if parent == pid and child not in below]
            below.update(children)
            todo.extend(children)
        for pid in below:
            uid = uids.get(pid, (0,))[0]
            if uid >= UID_FIRST:
                return zygote, uid - (uid - UID_FIRST) % UID_BLOCK
    return None, None


@pytest.mark.skipif(os.geteuid() != 0, reason="namespaces and a separate uid need root")
@pytest.mark.parametrize("classmates", [0, 2], ids=["alone", "with-grading-processes"])
def test_killing_the_grader_kills_its_sandbox(tmp_path, classmates):
    """`kill -9` of a grader whose worker hid a sleeper (setsid, double fork, SIGTERM
    ignored): within seconds no process of its uid block is left, and its zygote is gone.
    With classmates, ``--jobs`` (one per core) grades in grading processes forked from the
    grader (autograder.pool): they go too."""
    import shutil
    import signal
    import subprocess
    import sys

    folder = tmp_path / "submitted" / "mallory" / "attention"
    folder.mkdir(parents=True)
    shutil.copy(Path(__file__).parent / "hostile" / "escape_processes.py", folder / "attention.py")
    for n in range(classmates):
        classmate = tmp_path / "submitted" / f"zz-{n}" / "attention"
        classmate.mkdir(parents=True)
        shutil.copy(EXAMPLES / "andi" / "attention" / "attention.ipynb", classmate / "attention.ipynb")
    grader = subprocess.Popen([sys.executable, "-m", "autograder", "grade", str(tmp_path / "submitted"),
                               "-a", "attention", "-o", str(tmp_path / "reports"), "--jobs", "2"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    zygote = block = None
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and grader.poll() is None:
            if block is None:
                zygote, block = _zygote_and_uid_block(grader.pid)
            elif any(comm == SLEEPER_NAME and block <= uid < block + UID_BLOCK
                     for uid, comm, _ in processes_by_uid().values()):
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"the worker never hid its sleeper (grader exit code {grader.poll()})")
        before = {pid for pid, (uid, _, _) in processes_by_uid().items() if block <= uid < block + UID_BLOCK}
        assert len(before) >= 2  # the worker and the sleeper at least
        grading = _children(grader.pid) - {zygote}
        assert len(grading) == (2 if classmates else 0)  # --jobs 2, if there are two to grade
        scratch = _held_scratch_folders(grader.pid)
        assert len(scratch) == 1, scratch
    finally:
        grader.send_signal(signal.SIGKILL)
        grader.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        left = {pid: p for pid, p in processes_by_uid().items()
                if pid in before and block <= p[0] < block + UID_BLOCK and _running(pid)}
        if not left and not _running(zygote) and not any(map(_running, grading)):
            break
        time.sleep(0.2)
    assert left == {}, f"still running after the grader was killed: {left}"
    assert not _running(zygote), "the zygote outlived its grader"
    assert not any(map(_running, grading)), "a grading process outlived its grader"
    # A killed grader cleans nothing up: its scratch folder goes when the next grader starts.
    assert scratch[0].is_dir()
    from autograder.sandbox import launch

    launch.remove_private_folder(launch.private_folder(launch.SCRATCH_PREFIX))
    # A sweep in another grader (the suite runs two at once) may hold the lock for the moment
    # it takes to remove the folder: the folder must be gone within seconds, not at once.
    deadline = time.monotonic() + 10
    while scratch[0].exists() and time.monotonic() < deadline:
        time.sleep(0.2)
        launch.sweep_abandoned(launch.SCRATCH_PREFIX)
    assert not scratch[0].exists(), "the next grader left the killed one's scratch folder"


def _held_scratch_folders(pid):
    """The sandbox scratch folders process ``pid`` holds open (and locked)."""
    from autograder.sandbox import launch

    found = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = Path(os.readlink(fd))
        except OSError:
            continue
        if target.name.startswith(launch.SCRATCH_PREFIX):
            found.append(target)
    return found


def _children(pid):
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            if int(text[text.rindex(")") + 2:].split()[1]) == pid and _running(int(stat.parent.name)):
                found.add(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _running(pid):
    """Whether any thread of process ``pid`` still runs. The first thread of a killed
    process may show as a zombie while its other threads still exit, and they hold its open
    files (the scratch folder's lock) until the last one is gone."""
    try:
        threads = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return False
    for thread in threads:
        try:
            text = (thread / "stat").read_text()
        except OSError:
            continue
        if text[text.rindex(")") + 2] not in "ZX":  # a zombie has ended
            return True
    return False


def test_failures_are_explained(batch):
    results = batch["results"]
    loop = {o.check.id: o for o in results["loop_in_forward"].outcomes}
    assert "Time limit" in loop["sdpa.sensitivity"].message["en"]  # the first check that calls it
    assert loop["sdpa.shape"].status == "skipped"
    crash = {o.check.id: o for o in results["segfault"].outcomes}
    assert "stopped abruptly" in crash["sdpa.sensitivity"].message["en"]
    hang = {o.check.id: o for o in results["loop_at_import"].outcomes}
    assert "Loading your code exceeded the time limit" in hang["sdpa.present"].message["en"]


SPY = '''
import glob, os
import torch
import torch.nn as nn

def _copy_classmate():
    """Find another student's notebook (or a report) and run its code cells."""
    import json
    for pattern in ("../*/*/*.ipynb", "/opt/**/*.ipynb", "/srv/**/*.ipynb", "/mnt/**/*.ipynb"):
        for path in glob.glob(pattern, recursive=True):
            if "spy" in path:
                continue
            namespace = {}
            try:
                for cell in json.load(open(path))["cells"]:
                    if cell["cell_type"] == "code":
                        exec("".join(cell["source"]), namespace)
                return namespace
            except Exception:
                continue
    return None

def scaled_dot_product_attention(q, k, v, mask=None):
    found = _copy_classmate()
    if found:
        return found["scaled_dot_product_attention"](q, k, v, mask)
    return torch.zeros(*q.shape[:-1], v.shape[-1]), torch.zeros(*q.shape[:-1], k.shape[-2])
'''


@pytest.mark.skipif(os.geteuid() != 0, reason="namespaces and a separate uid need root")
def test_other_students_and_the_output_folder_are_invisible(tmp_path):
    """A class folder outside the kit and /tmp: a worker must see neither a classmate's
    notebook nor the reports."""
    import shutil
    import subprocess
    import sys
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="autograder-class-", dir="/opt"))
    try:
        examples = Path(__file__).resolve().parent.parent / "examples" / "submissions"
        shutil.copytree(examples / "andi", root / "submitted" / "andi")
        spy = root / "submitted" / "spy" / "attention"
        spy.mkdir(parents=True)
        (spy / "attention.py").write_text(SPY)
        for path in [root, *root.rglob("*")]:  # a class folder anyone on the machine may read
            path.chmod(0o755 if path.is_dir() else 0o644)
        done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(root / "submitted"),
                               "-a", "attention", "-o", str(root / "reports")],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        assert re.search(r"Points (\d+)/\1 andi", done.stdout), done.stdout[-2000:]  # full marks
        report = json.loads((root / "reports" / "spy" / "results.json").read_text())
        earned = [t["extra_data"]["check"] for t in report["tests"] if t["score"] > 0]
        assert earned == ["sdpa.present"], earned
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("assignment", ["attention", "encoder", "decoder"])
def test_meta_tensors_in_a_reply_are_the_students_failure(tmp_path, assignment):
    """meta_reply answers every call with meta-device tensors (right shapes, no data). They
    used to decode into real meta tensors that the checks read values from (``.item()``): a
    grader error, exit status 3, in every assignment. Now the reply is that student's
    ``bad_reply``, said in the report, and the run ends as for any student's failure."""
    from conftest import run_autograder

    folder = tmp_path / "submitted" / "mallory" / assignment
    folder.mkdir(parents=True)
    (folder / f"{assignment}.py").write_text((Path(__file__).parent / "hostile" / "meta_reply.py").read_text())
    out = tmp_path / "reports"
    done = run_autograder("grade", tmp_path / "submitted", "-a", assignment, "-o", out, "--lang", "en")
    assert done.returncode in (0, 1), done.stderr[-3000:]
    assert "grader error" not in done.stderr, done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["grader_errors"] == [] and summary["counts"]["grader_error"] == 0
    report = json.loads((out / "mallory" / "results.json").read_text())
    earned = [t["extra_data"]["check"] for t in report["tests"] if t["score"] > 0]
    assert all(check.endswith(BUILDING_ONLY) for check in earned), earned
    said = "\n".join(t["output"] for t in report["tests"])
    assert "tensor on the meta device" in said and "only plain (dense) CPU tensors" in said
    assert "tensor on the meta device" in (out / "mallory" / "feedback.md").read_text()


def _spellings(path):
    """How a path may be written in a report: as is, escaped by ascii() or JSON, URL-quoted."""
    from urllib.parse import quote

    path = str(path)
    return {path, ascii(path)[1:-1], json.dumps(path)[1:-1], quote(path)}


@pytest.mark.skipif(os.geteuid() != 0, reason="the neutral tree needs root (namespaces)")
def test_no_host_path_reaches_a_report(tmp_path):
    """The kit copied to a folder with spaces and accents, the class in another: host_paths.py
    raises and prints its argv, interpreter, sys.path, modules' __file__, a traceback, its
    mapped files and mount table. The workers see only neutral paths (/sandbox/...), and what
    the mount table still names (where the bound folders lie on the host) is scrubbed from the
    reports: no report names the kit's copy, the kit it was copied from (its venv), the Python
    installation, the home folder or the class's folder."""
    import shutil
    import subprocess
    import sys
    import tempfile

    root = Path(__file__).resolve().parent.parent
    odd = Path(tempfile.mkdtemp(prefix="autograder-odd-", dir=tmp_path))
    kit = odd / "x" / "kit-ünï côde"
    top_level = {".venv", ".git", "reports", ".hypothesis", ".pytest_cache", "build"}
    shutil.copytree(root, kit, ignore=lambda folder, names: [
        n for n in names if n == "__pycache__" or n.endswith(".egg-info") or (Path(folder) == root and n in top_level)])
    lesson = odd / "kelas ünï"
    submitted = lesson / "submitted" / "mallory" / "attention"
    submitted.mkdir(parents=True)
    shutil.copy(HOSTILE[0].parent / "host_paths.py", submitted / "attention.py")
    out = lesson / "reports"
    env = {k: v for k, v in os.environ.items() if k not in ("AUTOGRADER_COURSE", "PYTHONPATH")}
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(lesson / "submitted"), "-a", "attention",
                           "-o", str(out), "--lang", "en"], cwd=kit, env={**env, "PYTHONUTF8": "1"},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert str(kit) in summary["course"]  # the copy graded, with its own course.toml
    assert summary["sandbox"] == "namespaces+uid seccomp", summary["sandbox"]
    said = (out / "mallory" / "results.json").read_text()
    assert "where am I" in said and "/sandbox/worker/zygote.py" in said and "stack:" in said, said[:3000]
    secret = set()
    for path in (kit, root, Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path.home(), lesson, odd):
        secret |= _spellings(path)
    for part in ("source", "course"):  # the instructor's own fields: where the files are
        summary.pop(part, None)
        for student in summary.get("students", []):
            student.pop(part, None)
    reports = {"results.json": said, "feedback.md": (out / "mallory" / "feedback.md").read_text(),
               "feedback.html": (out / "mallory" / "feedback.html").read_text(),
               "summary.json": json.dumps(summary, ensure_ascii=False),
               "gradebook.csv": (out / "gradebook.csv").read_text()}
    report = json.loads((out / "report.json").read_text())
    for part in ("source", "course"):
        report.pop(part, None)
        for student in report.get("students", []):
            student.pop(part, None)
    reports["report.json"] = json.dumps(report, ensure_ascii=False)
    reports["report.html"] = (out / "report.html").read_text()
    leaks = {name: sorted(s for s in secret if s in text) for name, text in reports.items()}
    assert all(not found for found in leaks.values()), leaks
