"""The submission corpus (tests/corpus, see its README): hand-written correct submissions must get
full marks, one-bug mutants must lose the points of the check(s) that name their bug and keep the
points their header says they keep, and get the diagnosis (tests/corpus/README.md, `# diagnosis:`)
their header names; degenerate submissions earn at most the registry's DEGENERATE_SHARE of each
target's points, stopped once by the target's gate (autograder/checks/registry.py).

Every file is graded once per session, in a few long-lived grading processes that run in
parallel (``CORPUS_JOBS``, default: the number of CPUs, at most 4); tests wait only for the files
they look at. Meta-tests: the reference solution gets full marks, every registered check is failed
by at least one mutant, each assignment has a do-nothing submission that scores at most 10%, every
entry of the mistake catalogue (autograder/checks/catalogue.py) has a mutant that gets it, and no
correct submission is diagnosed with anything even when every target is probed as if all its checks
had failed.
"""

import json
import os
import queue
import re
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from autograder import config
from autograder import plan as plans
from autograder.checks import catalogue
from autograder.checks.registry import DEGENERATE_SHARE, declared, degenerate_points, gates

pytestmark = pytest.mark.slow  # every corpus file graded through the sandbox

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).resolve().parent / "corpus"
SOLUTIONS = ROOT / "solutions"
COURSE_FILE = config.load().path
COURSE = config.load(COURSE_FILE)
ASSIGNMENTS = tuple(COURSE.assignments)  # attention, encoder, decoder, transformer
# Which reference modules a standalone submission of each assignment is assembled from.
REFERENCE_PARTS = {"attention": ("attention",), "encoder": ("attention", "encoder"),
                   "decoder": ("attention", "encoder", "decoder"),
                   "transformer": ("attention", "encoder", "decoder", "transformer")}
DO_NOTHING_BOUND = 0.10
WAIT_SECONDS = 900


# -- the corpus files and their headers --------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    path: Path
    assignment: str
    kind: str  # "correct", "mutant" or "degenerate"
    description: str
    expect_fail: tuple
    expect_pass: tuple
    messages: tuple  # (check id, substring of the English message)
    max_fraction: float | None  # expect-score-at-most
    header_problems: tuple
    diagnosis: str | None = None  # a mistake id of the catalogue, or "none"

    @property
    def name(self):
        return f"{self.assignment}/{self.path.parent.name}/{self.path.stem}"


HEADER_KEYS = ("corpus", "expect-fail", "expect-pass", "expect-message", "expect-score-at-most",
               "diagnosis")


def parse_entry(path):
    path = Path(path)
    assignment, folder = path.parent.parent.name, path.parent.name
    kind, description, problems = None, "", []
    fail, keep, messages, bound, diagnosis = [], [], [], None, None
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        match = re.match(r"#\s*([a-z-]+):\s*(.*)$", line)
        if not match or match.group(1) not in HEADER_KEYS:
            problems.append(f"unknown header line {line!r}")
            continue
        key, value = match.group(1), match.group(2).strip()
        if key == "corpus":
            parts = re.match(r"(correct|mutant|degenerate)\b\s*[—–-]*\s*(.*)$", value)
            if not parts:
                problems.append(f"`# corpus:` must say correct, mutant or degenerate, got {value!r}")
                continue
            kind, description = parts.group(1), parts.group(2)
        elif key in ("expect-fail", "expect-pass"):
            ids = [c.strip() for c in value.split(",") if c.strip()]
            (fail if key == "expect-fail" else keep).extend(ids)
        elif key == "diagnosis":
            if diagnosis is not None:
                problems.append("more than one `# diagnosis:` line")
            diagnosis = value
            if value != "none" and value not in catalogue.BY_ID:
                problems.append(f"`# diagnosis: {value}` is not an id of the mistake catalogue")
        elif key == "expect-message":
            check_id, _, substring = value.partition(":")
            if not substring.strip():
                problems.append(f"`# expect-message:` needs `check.id: text`, got {value!r}")
            messages.append((check_id.strip(), substring.strip()))
        else:
            number = re.fullmatch(r"(\d+(?:\.\d+)?)\s*%", value)
            if not number:
                problems.append(f"`# expect-score-at-most:` needs a percentage, got {value!r}")
            else:
                bound = float(number.group(1)) / 100
    expected_kind = {"correct": "correct", "mutants": "mutant", "degenerate": "degenerate"}.get(folder)
    if kind is None:
        problems.append("no `# corpus: correct|mutant|degenerate — ...` line at the top")
    elif kind != expected_kind:
        problems.append(f"header says {kind!r} but the file is in {folder}/")
    if kind == "mutant" and not fail and bound is None:
        problems.append("a mutant must name at least one check in `# expect-fail:` "
                        "(or bound its score with `# expect-score-at-most:`)")
    if kind == "correct" and (fail or keep or messages or bound is not None or diagnosis):
        problems.append("a correct submission must get full marks and no diagnosis: no expect-* "
                        "or diagnosis lines")
    if kind == "degenerate" and (fail or keep or messages or bound is not None or diagnosis):
        problems.append("a degenerate submission is graded by the registry's budget and gates: no "
                        "expect-* or diagnosis lines")
    both = set(fail) & set(keep)
    if both:
        problems.append(f"checks both in expect-fail and expect-pass: {', '.join(sorted(both))}")
    return Entry(path, assignment, kind or "?", description, tuple(fail), tuple(keep),
                 tuple(messages), bound, tuple(problems), diagnosis)


def corpus_entries():
    return [parse_entry(p) for p in sorted(CORPUS.glob("*/*/*.py"))
            if p.parent.name in ("correct", "mutants", "degenerate")]


ENTRIES = corpus_entries()


def check_ids(assignment):
    return [c.id for c in plans.resolve(COURSE, assignment).checks]


def unknown_ids(entry):
    known = set(check_ids(entry.assignment))
    named = list(entry.expect_fail) + list(entry.expect_pass) + [c for c, _ in entry.messages]
    return sorted({c for c in named if c not in known})


# -- the reference as a standalone submission ----------------------------------------------------
def reference_source(assignment):
    """solutions/<part>.py for every part the assignment needs, without the package imports."""
    chunks = []
    for part in REFERENCE_PARTS[assignment]:
        source = (SOLUTIONS / f"{part}.py").read_text(encoding="utf-8")
        chunks.append("\n".join(line for line in source.splitlines()
                                if not line.startswith(("from solutions", "import solutions"))))
    return "\n\n\n".join(chunks) + "\n"


# -- grading, once per file, in parallel worker processes ---------------------------------------
CHILD = r"""
import dataclasses, json, sys, traceback
from pathlib import Path
from autograder import plan as plans
from autograder.checks import diagnosis, localization
from autograder.checks.registry import DEGENERATE_SHARE, declared, degenerate_points, gates
from autograder.grading.grader import grade
from autograder.loading import Submission

# For a correct submission (or the reference) the catalogue also probes every target as if all
# its checks had failed: nothing may be named. Wrapped around the call grading makes.
diagnose, forced = diagnosis.diagnose, {}
def probing_everything(session, plan, outcomes):
    found = diagnose(session, plan, outcomes)
    if forced.get("wanted"):
        try:
            forced["found"] = [[d.target, d.mistake] for d in diagnose(session, plan, outcomes, forced=True)]
        except BaseException:
            forced["found"] = "crash: " + traceback.format_exc()
    return found
diagnosis.diagnose = probing_everything
# Likewise the localization: correct code is localized nowhere, even where nothing failed.
localize = localization.localize
def localizing_everything(session, plan, outcomes, diagnoses=()):
    found = localize(session, plan, outcomes, diagnoses)
    if forced.get("wanted"):
        try:
            forced["located"] = [[x.target, x.step] for x in localize(session, plan, outcomes, forced=True)]
        except BaseException:
            forced["located"] = "crash: " + traceback.format_exc()
    return found
localization.localize = localizing_everything

plans_by_name = {}
for line in sys.stdin:
    assignment, path = json.loads(line)
    try:
        plan = plans_by_name.setdefault(assignment, plans.load(assignment, sys.argv[1]))
        forced.clear()
        forced["wanted"] = Path(path).parent.name == "correct" or Path(path).stem.startswith("reference_")
        one_bug = Path(path).parent.name == "mutants" and "train.outcome" not in Path(path).read_text()
        if one_bug or Path(path).stem == "reference_transformer":
            # a one-bug file's header names the checks it is about; the training outcome (tens of
            # seconds of training) only where it does: tests/test_transformer_checks.py trains the
            # rest, and tests/test_nbgrader.py the reference, through nbgrader and the command line
            plan = dataclasses.replace(plan, checks=tuple(c for c in plan.checks if c.id != "train.outcome"))
        result = grade(Submission(Path(path).stem, assignment, Path(path)), plan)
        plain = {
            "score": result.score, "max_score": result.max_score,
            "problems": [p["en"] for p in result.problems],
            "outcomes": {o.check.id: {"status": o.status, "score": o.score, "points": o.check.points,
                                      "message": o.message["en"] if o.message else ""}
                         for o in result.outcomes},
            "diagnoses": [[d.target, d.mistake, list(d.explains)] for d in result.diagnoses],
            "forced": forced.get("found"),
            "located": forced.get("located"),
            "localizations": [[x.target, x.step, x.origin, x.line] for x in result.localizations],
        }
    except BaseException:
        plain = {"crash": traceback.format_exc()}
    print(json.dumps([path, plain]), flush=True)
"""


class Grader:
    """A few long-lived ``python -c CHILD`` processes, each grading one file at a time."""

    def __init__(self, jobs, log_dir):
        self.jobs = jobs
        self.log_dir = log_dir
        self.todo = queue.Queue()
        self.results = {}
        self.done = {}
        self.lock = threading.Lock()
        self.threads = []
        self.processes = []

    def submit(self, jobs):
        """``jobs``: (assignment, path) pairs; each is graded once however often it is asked for."""
        for assignment, path in jobs:
            key = str(path)
            with self.lock:
                if key in self.done:
                    continue
                self.done[key] = threading.Event()
            self.todo.put((assignment, key))
        while len(self.threads) < self.jobs:
            thread = threading.Thread(target=self._serve, args=(len(self.threads),), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _serve(self, number):
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUTF8": "1"}
        with open(self.log_dir / f"grader-{number}.log", "wb") as log:
            process = subprocess.Popen([sys.executable, "-c", CHILD, str(COURSE_FILE)], cwd=ROOT, env=env, text=True,
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
        self.processes.append(process)
        while True:
            assignment, key = self.todo.get()
            if assignment is None:
                break
            try:
                process.stdin.write(json.dumps([assignment, key]) + "\n")
                process.stdin.flush()
                answer = process.stdout.readline()
                result = json.loads(answer)[1] if answer else {
                    "crash": f"grading process ended (see {self.log_dir})"}
            except (OSError, ValueError) as error:
                result = {"crash": f"{type(error).__name__}: {error} (see {self.log_dir})"}
            self.results[key] = result
            self.done[key].set()

    def result(self, assignment, path):
        key = str(path)
        self.submit([(assignment, path)])
        if not self.done[key].wait(WAIT_SECONDS):
            pytest.fail(f"grading {path} took longer than {WAIT_SECONDS} s")
        result = self.results[key]
        if "crash" in result:
            pytest.fail(f"grading {path} crashed:\n{result['crash']}")
        return result

    def close(self):
        for _ in self.threads:
            self.todo.put((None, None))
        for process in self.processes:
            try:
                process.stdin.close()
                process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                process.kill()


def _jobs():
    if os.environ.get("CORPUS_JOBS"):
        return max(1, int(os.environ["CORPUS_JOBS"]))
    return max(1, min(4, os.cpu_count() or 1))


def _wanted(item, references):
    """The files an item of this module will ask for, so that grading starts early."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    if "entry" in params:
        return [(params["entry"].assignment, params["entry"].path)]
    assignment = params.get("assignment")
    if item.originalname == "test_reference_gets_full_marks":
        return [(assignment, references[assignment])]
    if item.originalname in ("test_every_check_is_failed_by_some_mutant",
                             "test_every_mutant_keeps_its_pinned_verdict"):
        return [(e.assignment, e.path) for e in ENTRIES
                if e.assignment == assignment and e.kind in ("mutant", "degenerate")]
    if item.originalname == "test_every_diagnosis_is_produced_by_its_mutants":
        return [(e.assignment, e.path) for e in ENTRIES if e.assignment == assignment and e.kind == "mutant"]
    if item.originalname == "test_do_nothing_scores_at_most_ten_percent":
        return [(e.assignment, e.path) for e in ENTRIES
                if e.assignment == assignment and e.max_fraction is not None]
    return []


@pytest.fixture(scope="session")
def references(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reference")
    paths = {}
    for assignment in ASSIGNMENTS:
        paths[assignment] = folder / f"reference_{assignment}.py"
        paths[assignment].write_text(reference_source(assignment), encoding="utf-8")
    return paths


@pytest.fixture(scope="session")
def grader(request, references, tmp_path_factory):
    grading = Grader(_jobs(), tmp_path_factory.mktemp("corpus-logs"))
    here = Path(__file__).resolve()
    wanted = []
    for item in request.session.items:
        if Path(str(item.fspath)).resolve() == here:
            wanted.extend(_wanted(item, references))
    grading.submit(wanted)
    yield grading
    grading.close()


def describe(result, only_lost=True):
    lines = [f"score {result['score']:g}/{result['max_score']:g}"]
    lines += [f"load problem: {p}" for p in result["problems"]]
    for check_id, o in result["outcomes"].items():
        if not only_lost or o["status"] != "passed":
            lines.append(f"  {check_id:30s} {o['status']:7s} -{o['points']:g}  {o['message']}")
    for target, mistake, explains in result.get("diagnoses", []):
        lines.append(f"  diagnosis {mistake} ({target}) explains {', '.join(explains) or '-'}")
    return "\n".join(lines)


def catalogue_diagnoses(result):
    """[target, mistake] of each diagnosis that names a mistake of the catalogue (the derived
    findings of checks.consequences only group failures: they never count as a diagnosis)."""
    return [[target, mistake] for target, mistake, _ in result["diagnoses"] if mistake in catalogue.BY_ID]


def hidden_sizes_in(message):
    """The message shows one of course.toml's hidden sizes in its role (sizes checks only show
    generated configurations, which never hold one)."""
    h = COURSE.hidden
    roles = {"d_model": h.d_model, "num_heads": h.num_heads, "B": h.batch, "Tk": h.length,
             "Tq": h.decoder_length, "length": h.length}
    if any(re.search(rf"\b{name}={value}\b", message) for name, value in roles.items()):
        return True
    blocks = (rf"Block\({h.d_model}, {h.num_heads}, {h.d_ff}\b", rf"FeedForward\({h.d_model}, {h.d_ff}\)")
    return any(re.search(pattern, message) for pattern in blocks)


def require_checks(assignment):
    ids = check_ids(assignment)
    assert ids, (f"no checks are registered for assignment {assignment!r} "
                 "(autograder/checks/{assignment}.py declares none yet)")
    return ids


# -- the tests ----------------------------------------------------------------------------------
def test_corpus_is_large_enough():
    correct = [e for e in ENTRIES if e.kind == "correct"]
    mutants = [e for e in ENTRIES if e.kind == "mutant"]
    assert len(correct) >= 10 and len(mutants) >= 25, (len(correct), len(mutants))
    for assignment in ASSIGNMENTS:
        assert any(e.assignment == assignment and e.kind == "correct" for e in ENTRIES), assignment
        assert any(e.assignment == assignment and e.kind == "mutant" for e in ENTRIES), assignment
        assert any(e.assignment == assignment and e.kind == "degenerate" for e in ENTRIES), assignment


def _behind(checks, gate_id):
    """Ids of the checks that need ``gate_id``, directly or through other checks."""
    found = {gate_id}
    for check in checks:  # declared after what they need
        if any(n in found for n in check.needs):
            found.add(check.id)
    return found - {gate_id}


@pytest.mark.parametrize("source", ["registry", "course"])
def test_degenerate_code_earns_at_most_its_share_of_every_target(source):
    """Fast (no grading): the rule in autograder/checks/registry.py, computed from the registry
    (and from the course's plan, which may override points) for every target: exactly one gate,
    which needs only checks that degenerate code may pass, and what degenerate code can still
    earn (the checks not behind the gate, plus the gate) is at most DEGENERATE_SHARE."""
    problems = []
    for assignment in ASSIGNMENTS:
        checks = declared(assignment) if source == "registry" else plans.resolve(COURSE, assignment).checks
        by_id = {c.id: c for c in checks}
        for target in dict.fromkeys(c.target for c in checks):
            found = gates(checks, target)
            if len(found) != 1:
                problems.append(f"{assignment}/{target}: {len(found)} gates (checks of category "
                                f"'sensitivity'), expected exactly one")
                continue
            gate = found[0]
            behind = _behind(checks, gate.id)
            foreign = [n for n in gate.needs if by_id[n].target != target]
            if foreign:
                problems.append(f"{gate.id} needs checks of another target: {foreign}")
            free, total = degenerate_points(checks, target)
            if free > DEGENERATE_SHARE * total + 1e-9:
                loose = [f"{c.id} ({c.points:g})" for c in checks
                         if c.target == target and c.id != gate.id and c.id not in behind]
                problems.append(f"{assignment}/{target}: degenerate code can earn {free:g} of {total:g} "
                                f"points (> {DEGENERATE_SHARE:.0%}): {gate.id} ({gate.points:g}) and the "
                                f"checks not behind it: {', '.join(loose)}")
    assert not problems, "\n".join(problems)


def test_headers_are_valid_and_name_registered_checks():
    """Fast (no grading): every header parses and names only checks that exist."""
    problems = []
    for entry in ENTRIES:
        problems += [f"{entry.name}: {p}" for p in entry.header_problems]
        missing = unknown_ids(entry)
        if missing:
            problems.append(f"{entry.name}: names check(s) not registered for {entry.assignment!r}: "
                            f"{', '.join(missing)}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
def test_corpus_submission(entry, grader):
    assert not entry.header_problems, "\n".join(entry.header_problems)
    require_checks(entry.assignment)
    missing = unknown_ids(entry)
    assert not missing, (f"{entry.name} names check(s) that are not registered for "
                         f"{entry.assignment!r}: {', '.join(missing)}")
    result = grader.result(entry.assignment, entry.path)
    outcomes = result["outcomes"]
    errors = [c for c, o in outcomes.items() if o["status"] == "error"]
    assert not errors, (f"{entry.name}: internal grader error in {', '.join(errors)}\n"
                        + describe(result))
    if entry.kind == "degenerate":
        expect_degenerate_verdict(entry, result)
        return
    if entry.kind == "correct":
        assert result["max_score"] > 0
        assert not result["problems"], f"{entry.name}: load problems\n" + describe(result)
        assert result["score"] == result["max_score"], (
            f"correct submission {entry.name} ({entry.description}) lost points:\n" + describe(result))
        assert result["forced"] == [], (
            f"correct submission {entry.name} is diagnosed when every target is probed: "
            f"{result['forced']}")
        assert not result["localizations"] and not result["located"], (
            f"correct submission {entry.name} is localized: {result['localizations']} "
            f"{result['located']}")
        return
    wrong = []
    for check_id in entry.expect_fail:
        status = outcomes[check_id]["status"]
        if status != "failed":
            wrong.append(f"expected {check_id} to FAIL (it names the bug), but it {status}")
    for check_id in entry.expect_pass:
        o = outcomes[check_id]
        if o["status"] != "passed":
            wrong.append(f"expected {check_id} to PASS, but it {o['status']}: {o['message']}")
    for check_id, substring in entry.messages:
        message = outcomes[check_id]["message"]
        if substring.lower() not in message.lower():
            wrong.append(f"expected the message of {check_id} to contain {substring!r}, got {message!r}")
    named = [mistake for _, mistake in catalogue_diagnoses(result)]
    if entry.diagnosis == "none" and named:
        wrong.append(f"expected no diagnosis, got {', '.join(named)}")
    elif entry.diagnosis not in (None, "none") and entry.diagnosis not in named:
        wrong.append(f"expected the diagnosis {entry.diagnosis}, got {', '.join(named) or 'none'}")
    failed = {c for c, o in outcomes.items() if o["status"] in ("failed", "timeout")}
    for target, mistake, explains in result["diagnoses"]:
        if set(explains) - failed:
            wrong.append(f"{mistake} explains checks that did not fail: {set(explains) - failed}")
    leaks = [c for c, o in outcomes.items() if c.endswith(".sizes") and hidden_sizes_in(o["message"])]
    if leaks:
        wrong.append(f"a sizes check shows a hidden size: {', '.join(leaks)}")
    if entry.max_fraction is not None and result["score"] > entry.max_fraction * result["max_score"]:
        wrong.append(f"expected at most {entry.max_fraction:.0%} of {result['max_score']:g} points, "
                     f"got {result['score']:g}")
    assert not wrong, (f"mutant {entry.name} ({entry.description}):\n  " + "\n  ".join(wrong)
                       + "\n" + describe(result))


def expect_degenerate_verdict(entry, result):
    """Every target of a degenerate submission earns at most DEGENERATE_SHARE of its points; its
    gate fails and names the root once: every check behind the gate is skipped, none fails on
    its own."""
    checks = plans.resolve(COURSE, entry.assignment).checks
    outcomes = result["outcomes"]
    wrong = []
    for target in dict.fromkeys(c.target for c in checks):
        mine = [c for c in checks if c.target == target]
        earned, total = sum(outcomes[c.id]["score"] for c in mine), sum(c.points for c in mine)
        if earned > DEGENERATE_SHARE * total + 1e-9:
            wrong.append(f"{target}: {earned:g} of {total:g} points (> {DEGENERATE_SHARE:.0%})")
        for gate in gates(checks, target):
            if outcomes[gate.id]["status"] != "failed":
                wrong.append(f"{target}: its gate {gate.id} {outcomes[gate.id]['status']} (it must fail)")
                continue
            loud = [c for c in sorted(_behind(checks, gate.id)) if outcomes[c]["status"] != "skipped"]
            if loud:
                wrong.append(f"{target}: behind {gate.id}, these were not skipped: {', '.join(loud)}")
    assert not wrong, (f"degenerate {entry.name} ({entry.description}):\n  " + "\n  ".join(wrong)
                       + "\n" + describe(result, only_lost=False))


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_reference_gets_full_marks(assignment, grader, references):
    require_checks(assignment)
    result = grader.result(assignment, references[assignment])
    assert result["score"] == result["max_score"] > 0, describe(result)
    assert result["forced"] == [], f"the reference is diagnosed: {result['forced']}"


def test_every_mistake_has_a_mutant():
    """Fast (no grading): each catalogue entry is the `# diagnosis:` of some mutant (graded in
    test_corpus_submission, which asserts that it gets it)."""
    named = {e.diagnosis for e in ENTRIES if e.kind == "mutant"}
    missing = [m.id for m in catalogue.CATALOGUE if m.id not in named]
    assert not missing, f"no mutant declares `# diagnosis:` for: {', '.join(missing)}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_diagnosis_is_produced_by_its_mutants(assignment, grader):
    """Every mutant that names a diagnosis gets it (one line per assignment, for the overview)."""
    missed = []
    for entry in ENTRIES:
        if entry.assignment == assignment and entry.kind == "mutant" and entry.diagnosis not in (None, "none"):
            named = [m for _, m, _ in grader.result(assignment, entry.path)["diagnoses"]]
            if entry.diagnosis not in named:
                missed.append(f"{entry.name}: expected {entry.diagnosis}, got {', '.join(named) or 'none'}")
    assert not missed, "\n".join(missed)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_check_is_failed_by_some_mutant(assignment, grader):
    ids = require_checks(assignment)
    failed = set()
    for entry in ENTRIES:
        if entry.assignment == assignment and entry.kind in ("mutant", "degenerate"):
            outcomes = grader.result(assignment, entry.path)["outcomes"]
            failed |= {c for c, o in outcomes.items() if o["status"] == "failed"}
    uncovered = [c for c in ids if c not in failed]
    assert not uncovered, (f"no mutant or degenerate file of {assignment!r} fails these checks (add one per check): "
                           f"{', '.join(uncovered)}")


# -- every verdict pinned: the condition for lighter checks (issue 25) ----------------------------
VERDICTS = CORPUS / "verdicts.json"
REPIN = "CORPUS_REPIN"  # set to 1 to write the pins of the assignments a run grades


def pinned_verdict(result):
    """What a one-bug or degenerate file's grade must keep: the status of every check that did
    not pass (failed, skipped, timeout), and the catalogue's diagnoses, (target, mistake)."""
    return {"not_passed": {c: o["status"] for c, o in sorted(result["outcomes"].items())
                           if o["status"] != "passed"},
            "diagnoses": sorted(catalogue_diagnoses(result))}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_mutant_keeps_its_pinned_verdict(assignment, grader):
    """Every mutant and degenerate file is caught by exactly the checks, and named by exactly
    the diagnoses, that tests/corpus/verdicts.json pins (the correct files' full marks are
    test_corpus_submission's). A change to a check that moves any of them (a lighter check, a
    new one, another tolerance) fails here until the pins are written again with
    ``CORPUS_REPIN=1`` and the diff of verdicts.json is reviewed: the headers say what must
    hold, this says what does."""
    require_checks(assignment)
    entries = [e for e in ENTRIES if e.assignment == assignment and e.kind in ("mutant", "degenerate")]
    graded = {f"{e.path.parent.name}/{e.path.stem}": pinned_verdict(grader.result(assignment, e.path))
              for e in entries}
    pins = json.loads(VERDICTS.read_text(encoding="utf-8")) if VERDICTS.exists() else {}
    if os.environ.get(REPIN) == "1":
        pins[assignment] = graded
        VERDICTS.write_text(json.dumps(pins, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        pytest.fail(f"{VERDICTS.name} written for {assignment}: review its diff, then run without {REPIN}")
    pinned = pins.get(assignment, {})
    moved = []
    for name in sorted(set(graded) | set(pinned)):
        now, then = graded.get(name), pinned.get(name)
        if now is None or then is None:
            moved.append(f"{name}: {'not pinned' if then is None else 'pinned, but no such file'}")
            continue
        for check_id in sorted(set(now["not_passed"]) | set(then["not_passed"])):
            a, b = then["not_passed"].get(check_id, "passed"), now["not_passed"].get(check_id, "passed")
            if a != b:
                moved.append(f"{name}: {check_id} was {a}, now {b}")
        if now["diagnoses"] != then["diagnoses"]:
            moved.append(f"{name}: diagnoses were {then['diagnoses']}, now {now['diagnoses']}")
    assert not moved, (f"{len(moved)} verdict(s) of {assignment} moved from tests/corpus/verdicts.json "
                       f"(rewrite with {REPIN}=1 only if the change is meant):\n  " + "\n  ".join(moved))


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_do_nothing_scores_at_most_ten_percent(assignment, grader):
    require_checks(assignment)
    do_nothing = [e for e in ENTRIES if e.assignment == assignment and e.max_fraction is not None]
    assert do_nothing, f"the corpus has no do-nothing submission (expect-score-at-most) for {assignment!r}"
    report = []
    for entry in do_nothing:
        assert entry.max_fraction <= DO_NOTHING_BOUND, f"{entry.name}: bound above 10%"
        result = grader.result(assignment, entry.path)
        if result["score"] > DO_NOTHING_BOUND * result["max_score"]:
            report.append(f"{entry.name} scores {result['score']:g}/{result['max_score']:g} "
                          f"(> 10%):\n" + describe(result, only_lost=False))
    assert not report, "\n".join(report)
