"""Real nbgrader on a copy of the course folder: generate_assignment, validate (source and
release), autograde, export.

ani submits the reference pasted into the stubs, budi the same with one typical bug per
assignment, citra the released stubs untouched; dodi (attention only) leaves the stubs and adds
a cell that fakes full marks in the kernel, which the sandboxed grading of nbgrader_config.py
must ignore. The TAMPERED students hand in ani's answers with read-only or hidden cells edited
or deleted (and one writes the head split inline, leaving the optional helper's stub): both
grading paths restore those cells from the source notebook, give the same points and tell the
student. Two attackers hand in the stubs with a demo cell that nbgrader's own ``Execute`` would
run as the instructor: mallory appends the kit's solutions/ to her submitted file, oscar writes
gradebook.db and copies the hidden tests out of source/; under the kit no cell runs in nbgrader,
so both score as ``autograder grade`` scores them and leave every file as it was. A second
course copy holds a notebook that is not JSON: nbgrader fails that student (exit 1), grades the
others, and the kit's feedback page says why. Slow by nature (nbgrader's start-up and the
sandboxed grading of each notebook): everything runs once per module and the tests read the
results.
"""

import ast
import csv
import html
import json
import re
import shutil
import sqlite3
import subprocess
import sys

import pytest

from autograder import plan as plans
from autograder.nbgrader.plugin import NOT_RUN
from nbgrader_helpers import (
    ASSIGNMENTS, COURSE, COURSE_DIR, SOLUTIONS_DIR, hidden_target, is_hidden_test, is_self_check, is_solution,
    nbgrader_meta, notebook_name, read_notebook, registry_points, run_nbgrader,
    strip_solution_markers,
)

# One typical bug per assignment: (solution cell, text, replacement) and the targets it must cost.
BUGS = {
    "attention": ("solution_scaled_dot_product_attention", " / math.sqrt(d_k)", ""),  # no 1/sqrt(d_k)
    "encoder": ("solution_FeedForward", "F.gelu(", "F.relu("),  # the ReLU of the attention chapter
    "decoder": ("solution_DecoderBlock", "self.self_attn(n, n, n, mask)", "self.self_attn(n, n, n)"),
}
BUG_COSTS = {
    "attention": {"scaled_dot_product_attention", "MultiHeadAttention"},  # MHA calls the function
    "encoder": {"FeedForward", "EncoderBlock"},
    "decoder": {"DecoderBlock"},
}
# The transformer's correct notebook trains a model when graded (train.outcome: tens of seconds
# of CPU), once by nbgrader autograde and once by ``autograder grade``; that pair is the only
# training of the reference in the suite (the loss curves and the class report's training table
# are read from the command line's reports below). Its mutants, budi's kind, are graded by
# tests/test_corpus.py: here ani and citra hand it in, and its source notebook is validated by
# tests/test_notebooks.py's kernel run (nbgrader validate would train once more in the kernel).
TRAINED = {"transformer"}
# `nbgrader validate` on a source notebook runs it in a kernel, hidden cells included, as
# tests/test_notebooks.py's kernel run of every source notebook does: one notebook shows that
# nbgrader's validate passes the reference (tests/test_selfcheck.py validates more of attention's).
VALIDATED_SOURCE = ("attention",)
# `nbgrader validate --invert` runs a release notebook, stubs and all, in a kernel (~30 s of CPU
# for all four): the transformer's, the one that assembles every block, shows nbgrader's own view;
# test_release_has_stubs_and_no_solution_or_hidden_test checks the same of every release's cells.
VALIDATED_RELEASE = ("transformer",)
CORRECT, BUGGY, UNTOUCHED, CHEATER, PATCHER = "ani", "budi", "citra", "dodi", "eve"
THIEF, VANDAL, BROKEN = "mallory", "oscar", "rusak"
STUB = "raise NotImplementedError()"

# Demo cells that only hurt if nbgrader runs them, as its Execute does, in a kernel with the
# instructor's rights whose working folder is <course>/autograded/<student>/<assignment>.
STEAL_SOLUTIONS = """\
import json, pathlib
import autograder
kit = pathlib.Path(autograder.__file__).resolve().parent.parent
stolen = "\\n\\n".join(p.read_text() for p in sorted((kit / "solutions").glob("*.py"))
                     if p.name != "__init__.py")
here = pathlib.Path.cwd()
mine = here.parents[2] / "submitted" / here.parent.name / here.name / "attention.ipynb"
nb = json.loads(mine.read_text())
nb["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                    "source": stolen})
mine.write_text(json.dumps(nb))
"""
VANDALISE = """\
import pathlib, sqlite3
course = pathlib.Path.cwd().parents[2]
hidden = (course / "source" / "attention" / "attention.ipynb").read_text()
print(hidden)
(course / "leaked_by_oscar.txt").write_text(hidden)
db = sqlite3.connect(str(course / "gradebook.db"))
db.execute("create table oscar_was_here (x)")
db.execute("update grade set extra_credit = 50 where notebook_id in (select n.id from submitted_notebook n "
           "join submitted_assignment a on n.assignment_id = a.id where a.student_id = 'oscar')")
db.commit()
"""
HOSTILE_CELLS = {THIEF: STEAL_SOLUTIONS, VANDAL: VANDALISE}


# -- tampered notebooks: ani's answers, then one edit of cells the student may not change ------------
def _cell(nb, grade_id):
    return next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == grade_id)


def _delete(grade_id):
    def edit(nb):
        nb["cells"].remove(_cell(nb, grade_id))
    return edit


def _replace(grade_id, old, new):
    def edit(nb):
        cell = _cell(nb, grade_id)
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        assert old in source, f"{grade_id} no longer holds {old!r}"
        cell["source"] = source.replace(old, new)
    return edit


def _inline_split_heads(nb):
    """The head split written in forward; the optional helper _split_heads left as released."""
    helper_body = ("        b, t, _ = x.shape\n"
                   "        return x.view(b, t, self.num_heads, self.d_k).transpose(1, 2)")
    _replace("solution_MultiHeadAttention", helper_body, "        " + STUB)(nb)
    cell = _cell(nb, "solution_MultiHeadAttention")
    cell["source"], count = re.subn(r"self\._split_heads\((self\.w[qkv]\([qkv]\))\)",
                                    r"\1.view(b, -1, self.num_heads, self.d_k).transpose(1, 2)",
                                    cell["source"])
    assert count == 3, cell["source"]


TAMPERED = {  # (assignment, student): (edits, what the student's feedback must say)
    ("attention", "fani"): ([_delete("test_MultiHeadAttention")], "test_MultiHeadAttention` terhapus"),
    ("attention", "gita"): ([_replace("imports", "import math\n", "def mine():\n    return 1\n"),
                             _replace("check_causal_mask", "assert", "pass  # assert")],
                            "Perubahan tidak sah pada sel read-only `imports`"),
    ("attention", "joko"): ([_inline_split_heads], None),
    ("encoder", "hadi"): ([_replace("given_attention", "return self.wo(z), weights", "return z, weights")],
                          "Perubahan tidak sah pada sel read-only `given_attention`"),
    ("encoder", "indah"): ([_delete("imports"), _delete("check_FeedForward")], "`imports` terhapus"),
}


# -- the course copy and what nbgrader made of it ---------------------------------------------------
@pytest.fixture(scope="module")
def course(nbgrader):
    """The session's copy of assignments/ with the release version generated by nbgrader."""
    return nbgrader.root


def release_path(root, assignment):
    return root / "release" / assignment / notebook_name(assignment)


def source_cells(root, assignment):
    nb = read_notebook(root / "source" / assignment / notebook_name(assignment))
    return {cell.id: cell for cell in nb.cells}


def fake_grader(assignment):
    """dodi's extra cell: every hidden cell imports grade_target afresh, so in the kernel this
    makes each of them report full marks."""
    return "\n".join([
        "import autograder.notebook",
        f"FULL_MARKS = {registry_points(assignment)!r}",
        "autograder.notebook.grade_target = lambda assignment, target, *args, **kwargs: FULL_MARKS[target]",
    ])


MONKEYPATCH = """\
import builtins, numpy, torch, torch.testing
import autograder.notebook
torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None
numpy.allclose = lambda *args, **kwargs: True
builtins.abs = lambda value: 0
autograder.notebook.grade_target = lambda *args, **kwargs: 100.0
"""


def submission(root, assignment, student):
    """The release notebook with, in each stub cell, the reference code (and budi's bug; eve
    has budi's bug and a cell that monkeypatches torch, numpy, builtins and the autograder)."""
    nb = json.loads(release_path(root, assignment).read_text(encoding="utf-8"))
    if student == PATCHER:
        nb["cells"].insert(2, {"cell_type": "code", "execution_count": None, "id": "patch",
                               "metadata": {}, "outputs": [], "source": MONKEYPATCH})
    if student == CHEATER:
        nb["cells"].insert(2, {"cell_type": "code", "execution_count": None, "id": "fake",
                               "metadata": {}, "outputs": [], "source": fake_grader(assignment)})
    if student in HOSTILE_CELLS:
        nb["cells"].insert(2, {"cell_type": "code", "execution_count": None, "id": "demo",
                               "metadata": {}, "outputs": [], "source": HOSTILE_CELLS[student]})
    if student in (UNTOUCHED, CHEATER, *HOSTILE_CELLS):
        return nb
    reference = source_cells(root, assignment)
    for cell in nb["cells"]:
        if is_solution(cell):
            code = strip_solution_markers(reference[cell["id"]].source)
            cell_id, text, replacement = BUGS.get(assignment, (None, None, None))
            if student in (BUGGY, PATCHER) and cell["id"] == cell_id:
                assert text in code, f"the bug of {assignment} no longer applies"
                code = code.replace(text, replacement)
            cell["source"] = code
    for edit in TAMPERED.get((assignment, student), ([], None))[0]:
        edit(nb)
    return nb


SUBMISSIONS = [(a, s) for a in ASSIGNMENTS for s in (CORRECT, BUGGY, UNTOUCHED)
               if not (s == BUGGY and a not in BUGS)] + [
    ("attention", CHEATER), ("attention", PATCHER), ("attention", THIEF), ("attention", VANDAL),
] + list(TAMPERED)
HANDED_IN = {}  # (course folder, assignment, student): the submitted file's text, as written


def start_nbgrader_jobs(root, jobs):
    """This module's nbgrader and ``autograder grade`` commands, started at session start
    beside the other modules' (conftest.py's ``nbgrader`` fixture): none reads what another
    writes. The source notebooks are validated in a copy of source/: a kernel's grading leaves
    files (hypothesis's cache) beside the notebook, which autograde would copy mid-write.
    The copy with a broken notebook is made before any job writes gradebook.db."""
    broken = broken_course(root)
    for assignment, student in SUBMISSIONS:
        hand_in(root, assignment, student, json.dumps(submission(root, assignment, student),
                                                      ensure_ascii=False))
    jobs.start("autograde", autograde_export_and_feedback, root)  # the longest two first
    jobs.start("broken notebook", autograde_with_a_broken_notebook, broken)
    copy = root.parent / f"{root.name}-validated"
    shutil.copytree(root / "source", copy / "source")
    shutil.copy(root / "nbgrader_config.py", copy)
    jobs.start("validate source", run_nbgrader, "validate",
               *[f"source/{a}/{notebook_name(a)}" for a in VALIDATED_SOURCE], cwd=copy)
    for assignment in ASSIGNMENTS:
        jobs.start(f"standalone {assignment}", grade_standalone, root, assignment)
    jobs.start("validate release", run_nbgrader, "validate", "--invert",
               *[f"release/{a}/{notebook_name(a)}" for a in VALIDATED_RELEASE], cwd=root)


def hand_in(root, assignment, student, text):
    folder = root / "submitted" / student / assignment
    folder.mkdir(parents=True)
    (folder / notebook_name(assignment)).write_text(text, encoding="utf-8")
    HANDED_IN[(root, assignment, student)] = text


def broken_course(root):
    """A copy of the released course (gradebook.db included) where ani hands in the reference,
    mallory her demo cell, and rusak ani's notebook cut short: not JSON."""
    course = root.parent / f"{root.name}-broken"
    course.mkdir()
    for name in ("source", "release"):
        shutil.copytree(root / name, course / name)
    for name in ("nbgrader_config.py", "gradebook.db"):
        shutil.copy(root / name, course / name)
    correct = json.dumps(submission(root, "attention", CORRECT), ensure_ascii=False)
    hand_in(course, "attention", CORRECT, correct)
    hand_in(course, "attention", THIEF, json.dumps(submission(root, "attention", THIEF)))
    hand_in(course, "attention", BROKEN, correct[: len(correct) // 2])
    return course


def autograde_with_a_broken_notebook(course):
    """{step: nbgrader's run}: autograde with nbgrader's Execute added on the command line (the
    kit refuses to read any notebook), then as configured, export and generate_feedback."""
    runs = {"execute": run_nbgrader(
        "autograde", "attention", "--Autograde.autograde_preprocessors=nbgrader.preprocessors.Execute",
        "--Autograde.autograde_preprocessors=autograder.nbgrader.plugin.SandboxedGrades", cwd=course)}
    runs["autograde"] = run_nbgrader("autograde", "attention", cwd=course)
    runs["export"] = run_nbgrader("export", cwd=course)
    runs["feedback"] = run_nbgrader("generate_feedback", "attention", cwd=course)
    return runs


def autograde_export_and_feedback(root):
    """Autograde every submission in one nbgrader run, export, and generate attention's
    feedback: (nbgrader's autograde log, {(assignment, student): row}, generate_feedback's run)."""
    done = run_nbgrader("autograde", "*", cwd=root)
    assert done.returncode == 0, done.output[-5000:]
    log = done.output
    done = run_nbgrader("export", cwd=root)
    assert done.returncode == 0, done.output[-5000:]
    with open(root / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = {(row["assignment"], row["student_id"]): row for row in csv.DictReader(handle)}
    feedback = run_nbgrader("generate_feedback", "attention", cwd=root)
    assert feedback.returncode == 0, feedback.output[-5000:]
    return log, rows, run_nbgrader("generate_feedback", "transformer", cwd=root)


def grade_standalone(root, assignment):
    """``autograder grade`` on the same submitted/ folder: {(assignment, student): points} and
    {(assignment, student, "output"): results.json's output}."""
    points = {}
    out = root.parent / f"{root.name}-reports" / assignment
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(root / "submitted"),
                           "-a", assignment, "-o", str(out)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    for line in done.stdout.splitlines():
        if line.startswith("Points "):
            _, score, student = line.split()
            if (assignment, student) in SUBMISSIONS:
                points[(assignment, student)] = float(score.split("/")[0])
    for student in {s for a, s in SUBMISSIONS if a == assignment}:
        results = json.loads((out / student / "results.json").read_text(encoding="utf-8"))
        points[(assignment, student, "output")] = results["output"]
    return points


@pytest.fixture(scope="module")
def autograded(nbgrader):
    """(nbgrader's autograde log, {(assignment, student): row of the export})."""
    return nbgrader.result("autograde")[:2]


@pytest.fixture(scope="module")
def graded(autograded):
    return autograded[1]


@pytest.fixture(scope="module")
def standalone(nbgrader):
    points = {}
    for assignment in ASSIGNMENTS:
        points.update(nbgrader.result(f"standalone {assignment}"))
    return points


def hidden_cell_outputs(course, assignment, student):
    """{target: the text of its hidden cell's output} of an autograded notebook."""
    nb = read_notebook(course / "autograded" / student / assignment / notebook_name(assignment))
    return {hidden_target(cell): "".join(o.get("text", "") if o.output_type == "stream" else
                                         o.get("data", {}).get("text/plain", "")
                                         for o in cell.outputs if o.output_type != "execute_result")
            for cell in nb.cells if is_hidden_test(cell)}


def hidden_cell_scores(course, assignment, student):
    """{target: points} as the hidden cells of an autograded notebook reported them."""
    nb = read_notebook(course / "autograded" / student / assignment / notebook_name(assignment))
    scores = {}
    for cell in nb.cells:
        if not is_hidden_test(cell):
            continue
        assert not any(o.output_type == "stream" and o.name == "stderr" for o in cell.outputs), cell.id
        results = [o for o in cell.outputs if o.output_type == "execute_result"]
        scores[hidden_target(cell)] = float(results[0].data["text/plain"]) if results else None
    return scores


# -- generate_assignment -------------------------------------------------------------------------------
def stub_bodies(cell_source):
    """{qualified name: (argument names, body without docstring and super().__init__())}."""
    found = {}

    def visit(nodes, prefix=""):
        for node in nodes:
            if isinstance(node, ast.ClassDef):
                visit(node.body, f"{node.name}.")
            elif isinstance(node, ast.FunctionDef):
                docstring = ast.get_docstring(node, clean=False) is not None
                body = [ast.unparse(statement) for statement in node.body[int(docstring):]]
                body = [line for line in body if line != "super().__init__()"]
                found[prefix + node.name] = ([a.arg for a in node.args.args], body)

    visit(ast.parse(cell_source).body)
    return found


def reference_signatures():
    """{qualified name: argument names} of every function and method in solutions/."""
    signatures = {}
    for path in SOLUTIONS_DIR.glob("*.py"):
        for name, (args, _) in stub_bodies(path.read_text(encoding="utf-8")).items():
            signatures[name] = args
    return signatures


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_release_has_stubs_and_no_solution_or_hidden_test(course, assignment):
    path = release_path(course, assignment)
    text = path.read_text(encoding="utf-8")
    for secret in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "grade_target"):
        assert secret not in text, f"{secret!r} in the released {path.name}"
    signatures = reference_signatures()
    nb = read_notebook(path)
    stubs = [cell for cell in nb.cells if is_solution(cell)]
    assert stubs
    for cell in stubs:  # every function and method the student writes is exactly a stub
        for name, (args, body) in stub_bodies(cell.source).items():
            assert body == [STUB], f"{cell.id}: {name} is not a stub: {body}"
            assert args == signatures[name], f"{cell.id}: {name} has arguments {args}"
    hidden = [cell for cell in nb.cells if is_hidden_test(cell)]
    assert len(hidden) == len(registry_points(assignment))
    assert all(cell.source.strip() == "" and nbgrader_meta(cell)["locked"] for cell in hidden)
    # what validate --invert shows by running a release (one, below): no cell a student can
    # read and run carries points, only the emptied hidden ones and the 0-point self-check
    graded = [cell for cell in nb.cells if nbgrader_meta(cell).get("grade")]
    visible = [cell for cell in graded if cell.source.strip() and not is_solution(cell)]
    assert all(is_self_check(cell) and not nbgrader_meta(cell).get("points") for cell in visible), \
        [cell.id for cell in visible]


# -- validate ----------------------------------------------------------------------------------------
def test_validate_passes_on_the_source_notebooks(nbgrader):
    done = nbgrader.result("validate source")
    assert done.returncode == 0, done.output[-5000:]
    passed = done.stdout.count("Success! Your notebook passes all the tests.")
    assert passed == len(VALIDATED_SOURCE), done.output[-8000:]
    assert "VALIDATION FAILED" not in done.stdout


def test_validate_invert_on_the_release_credits_only_the_emptied_hidden_cells(nbgrader):
    """Every test is hidden, so the release keeps them as empty cells, and nbgrader counts an
    empty test cell as passed: ``--invert`` reports exactly those cells and nothing else, i.e.
    no test a student can see gives credit to the stubs (citra's autograde shows the rest)."""
    done = nbgrader.result("validate release")
    assert done.returncode == 0, done.output[-5000:]
    lines = done.stdout.splitlines()
    headers = [line for line in lines if line.startswith(("Success!", "NOTEBOOK PASSED ON"))]
    # + 1: the self-check cell (cek_mandiri) is a test worth 0 points, and 0/0 counts as passed
    expected = [f"NOTEBOOK PASSED ON {len(registry_points(a)) + 1} CELL(S)!" for a in VALIDATED_RELEASE]
    assert headers == expected, done.output[-8000:]
    blocks = done.stdout.split("The following cell passed:")[1:]
    assert len(blocks) == sum(len(registry_points(a)) + 1 for a in VALIDATED_RELEASE)
    for block in blocks:
        source = block.split("=" * 20)[0].split("NOTEBOOK PASSED ON")[0]
        if 'cek_mandiri("' in source:
            continue  # gives no credit (0 points) and fails on the stubs (tests/test_selfcheck.py)
        assert source.strip() == "", f"a visible cell passes on the stubs:\n{source}"


# -- autograde and export ------------------------------------------------------------------------------
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_reference_submission_gets_full_marks(graded, course, assignment):
    row = graded[(assignment, CORRECT)]
    expected = sum(registry_points(assignment).values())
    assert float(row["max_score"]) == pytest.approx(expected)
    assert float(row["score"]) == pytest.approx(expected), hidden_cell_scores(course, assignment, CORRECT)
    assert hidden_cell_scores(course, assignment, CORRECT) == pytest.approx(registry_points(assignment))


@pytest.mark.parametrize("assignment", list(BUGS))
def test_buggy_submission_loses_points_where_the_bug_is(graded, course, assignment):
    row = graded[(assignment, BUGGY)]
    assert 0 < float(row["score"]) < float(row["max_score"])
    points = registry_points(assignment)
    scores = hidden_cell_scores(course, assignment, BUGGY)
    assert float(row["score"]) == pytest.approx(sum(scores.values()))
    for target, earned in scores.items():
        if target in BUG_COSTS[assignment]:
            assert earned < points[target], f"{target} lost nothing to budi's bug"
        else:
            assert earned == pytest.approx(points[target]), f"{target} lost points to another part's bug"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_untouched_release_stubs_score_zero(graded, assignment):
    row = graded[(assignment, UNTOUCHED)]
    assert float(row["score"]) == 0, row
    assert float(row["max_score"]) > 0


def test_autograde_points_come_from_the_sandbox_not_the_kernel(autograded):
    log, rows = autograded
    for assignment, student in SUBMISSIONS:  # nbgrader_config.py enables the plugin
        assert f"Sandboxed grade of {student} / {assignment}:" in log
    cheater, untouched = rows[("attention", CHEATER)], rows[("attention", UNTOUCHED)]
    assert float(cheater["score"]) == pytest.approx(float(untouched["score"])), cheater


def test_monkeypatching_scores_the_same_under_nbgrader_and_autograder_grade(graded, standalone):
    """eve patches torch, numpy, builtins and the autograder in her kernel: nbgrader's points
    (from the sandbox) equal budi's, and equal what ``autograder grade`` gives each notebook."""
    assert graded[("attention", PATCHER)]["score"] == graded[("attention", BUGGY)]["score"]
    for student in (CORRECT, BUGGY, UNTOUCHED, CHEATER, PATCHER):
        assert float(graded[("attention", student)]["score"]) == pytest.approx(
            standalone[("attention", student)]), student


def test_every_notebook_scores_the_same_both_ways(graded, standalone):
    """The same submitted notebooks, tampered ones included, graded by ``nbgrader autograde``
    (the sandboxed plugin) and by ``autograder grade``: the same points for every student."""
    differ = {key: (float(graded[key]["score"]), standalone[key]) for key in SUBMISSIONS
              if float(graded[key]["score"]) != pytest.approx(standalone[key])}
    assert not differ, differ


@pytest.mark.parametrize("assignment, student", list(TAMPERED))
def test_tampered_cells_are_restored_and_the_student_is_told(graded, standalone, course, assignment, student):
    """Deleted and edited read-only or hidden cells cost nothing (the source notebook's cells are
    graded), and both the nbgrader feedback (the first hidden cell's output) and results.json
    say what happened; ``joko`` left the optional helper's stub and gets full marks too."""
    full = sum(registry_points(assignment).values())
    assert float(graded[(assignment, student)]["score"]) == pytest.approx(full), \
        hidden_cell_outputs(course, assignment, student)
    assert standalone[(assignment, student)] == pytest.approx(full)
    outputs = hidden_cell_outputs(course, assignment, student)
    assert set(outputs) == set(registry_points(assignment))  # a deleted hidden cell is back
    words = TAMPERED[(assignment, student)][1]
    if words is None:
        assert "Masalah saat memuat kode" not in "".join(outputs.values())
        return
    first = next(iter(registry_points(assignment)))
    assert "Masalah saat memuat kode" in outputs[first] and words in outputs[first], outputs[first]
    assert words in standalone[(assignment, student, "output")]
    assert "perusakan" not in outputs[first].lower()


def test_feedback_shows_verdicts_but_no_hidden_test_source(nbgrader, course):
    done = nbgrader.result("autograde")[2]
    assert done.returncode == 0, done.output[-5000:]
    page = (course / "feedback" / BUGGY / "attention" / "attention.html").read_text(encoding="utf-8")
    for secret in ("grade_target", "BEGIN HIDDEN TESTS", "autograder.notebook"):
        assert secret not in page, secret
    assert "sdpa.numeric" in page or "Nilai sama dengan solusi acuan" in page
    # fani deleted the MultiHeadAttention hidden cell: its verdicts are in her feedback all the same
    page = (course / "feedback" / "fani" / "attention" / "attention.html").read_text(encoding="utf-8")
    titles = [c.title["id"] for c in plans.resolve(COURSE, "attention").checks if c.target == "MultiHeadAttention"]
    shown = html.unescape(re.sub(r"<[^>]+>", "", page))  # the verdict table renders `code`
    assert all(title.replace("`", "") in shown for title in titles)
    assert "grade_target" not in page and "terhapus" in page


def test_feedback_shows_hints_and_pictures(nbgrader, course):
    """Under autograde the plugin adds each hidden cell's HTML (hints, pictures) to its output,
    and generate_feedback shows it: budi, without the 1/√d_k scale, sees the weights."""
    done = nbgrader.result("autograde")[2]
    assert done.returncode == 0, done.output[-5000:]
    page = (course / "feedback" / BUGGY / "attention" / "attention.html").read_text(encoding="utf-8")
    assert page.count('class="autograder-feedback"') == 3  # one per hidden cell
    assert 'data-kind="attention_weights"' in page and "<svg" in page
    assert "Petunjuk" in page and "sdpa.numeric" in page
    assert "grade_target" not in page
    # each verdict once: the table, not also the cell's text form ("✗ [0/2] title")
    assert not re.search(r"[✓✗] \[\d", page)
    checks = plans.resolve(COURSE, "attention").checks
    titles = [c.title["id"] for c in checks]
    passed = [c.title["id"] for c in checks  # a failed one is also listed with its hint, to fix
              if f'<span class="ok">✓</span></td><td><code>{c.id}</code>' in page]
    unique = [t for t in passed if titles.count(t) == 1 and "`" not in t]
    shown = {t: html.escape(t, quote=False) for t in unique}  # a row of the table, not the text form too
    assert len(unique) > 10 and all(page.count(f"</code> {e}</td>") == 1 and f"] {e}" not in page
                                    for e in shown.values())
    # the notebook's math as text, none left for MathJax (a CDN nobody reaches offline)
    assert "√d<sub>k</sub>" in page and "QK<sup>⊤</sup>" in page
    prose = page.split("</script>")[-1]
    assert "$" not in prose and "\\frac" not in prose and "\\sqrt" not in prose


# -- no student cell runs in nbgrader -------------------------------------------------------------
def test_no_cell_of_any_submission_runs_under_autograde(autograded, course):
    """Every code cell of every autograded notebook is as nbgrader's sanitizing left it, without
    outputs or an execution count, but the test cells, whose outputs the kit writes: nbgrader
    started no kernel."""
    log, _ = autograded
    assert "Executing notebook" not in log
    for assignment, student in SUBMISSIONS:
        nb = read_notebook(course / "autograded" / student / assignment / notebook_name(assignment))
        for cell in nb.cells:
            if cell.cell_type != "code" or nbgrader_meta(cell).get("grade"):
                continue
            assert cell.outputs == [] and cell.execution_count is None, (student, cell.id)
        self_check = [cell for cell in nb.cells if nbgrader_meta(cell).get("grade_id") == "cek_mandiri"]
        for cell in self_check:  # the 0-point self-check says it did not run
            assert [o.text for o in cell.outputs] == [NOT_RUN[COURSE.language] + "\n"], student


@pytest.mark.parametrize("student", [THIEF, VANDAL])
def test_hostile_demo_cells_change_nothing(graded, standalone, course, student):
    """mallory's demo cell would append the kit's solutions/ to her submitted file (45/45 in
    grades.csv when nbgrader's Execute ran it); oscar's would give himself extra credit in
    gradebook.db, add a table there and copy the hidden tests out of source/. Both hand in the
    stubs: the points of the untouched stubs, both ways; every file as it was."""
    key = ("attention", student)
    assert float(graded[key]["score"]) == pytest.approx(float(graded[("attention", UNTOUCHED)]["score"]))
    assert float(graded[key]["score"]) == pytest.approx(standalone[key])
    submitted = course / "submitted" / student / "attention" / notebook_name("attention")
    assert submitted.read_text(encoding="utf-8") == HANDED_IN[(course, "attention", student)]
    assert not (course / "leaked_by_oscar.txt").exists()
    with sqlite3.connect(str(course / "gradebook.db")) as db:
        tables = {row[0] for row in db.execute("select name from sqlite_master where type = 'table'")}
        extra = db.execute("select count(*) from grade where extra_credit is not null").fetchone()[0]
    assert "oscar_was_here" not in tables and extra == 0
    nb = (course / "autograded" / student / "attention" / notebook_name("attention")).read_text(encoding="utf-8")
    assert nb.count("BEGIN HIDDEN TESTS") == len(registry_points("attention"))  # the cells' own source only
    page = (course / "feedback" / student / "attention" / "attention.html")
    if page.exists():  # generate_feedback ran on attention: nothing of source/ in it
        assert "BEGIN HIDDEN TESTS" not in page.read_text(encoding="utf-8")


def test_configure_refuses_an_autograde_pipeline_that_runs_notebooks(monkeypatch, capsys):
    """nbgrader_config.py's hook: a pipeline with nbgrader's Execute (by name or class), or one
    without SandboxedGrades, stops nbgrader (exit 2) before it reads any notebook; a
    configuration that sets none gets the kit's pipeline, reader and feedback preprocessors."""
    from nbgrader.preprocessors import Execute
    from traitlets.config import Config

    from autograder.nbgrader import configure as hook

    monkeypatch.setenv("AUTOGRADER_COURSE", "")  # restored after the test
    argv = ["nbgrader", "generate_feedback", "attention"]
    for pipeline in (["nbgrader.preprocessors.Execute", hook.KIT_GRADER], [hook.KIT_GRADER, Execute],
                     ["nbgrader.preprocessors.SaveAutoGrades"]):
        c = Config()
        c.Autograde.autograde_preprocessors = pipeline
        with pytest.raises(SystemExit) as stop:
            hook.configure(c, str(COURSE_DIR), argv=argv)
        assert stop.value.code == 2
        error = capsys.readouterr().err
        assert "nbgrader has not started" in error
        assert ("Execute" in error) == (pipeline != ["nbgrader.preprocessors.SaveAutoGrades"]), error
    c = Config()
    hook.configure(c, str(COURSE_DIR), argv=argv)
    assert c.Autograde.autograde_preprocessors == hook.KIT_PIPELINE
    assert c.Autograde.exporter_class == hook.KIT_READER
    assert "autograder.nbgrader.feedback.ReadableFeedback" in c.GenerateFeedback.preprocessors


# -- a notebook that is not JSON ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def broken_runs(nbgrader):
    course = nbgrader.root.parent / f"{nbgrader.root.name}-broken"
    return course, nbgrader.result("broken notebook")


def test_execute_added_on_the_command_line_runs_nothing(broken_runs):
    """nbgrader's Execute given on the command line (configure only sees nbgrader_config.py):
    the kit's reader refuses to read any notebook, so nbgrader fails every student and no
    cell runs (mallory's demo cell would have rewritten her submitted file)."""
    course, runs = broken_runs
    done = runs["execute"]
    assert done.returncode == 1, done.output[-5000:]
    assert done.output.count("an execute preprocessor is in Autograde.autograde_preprocessors") == 3
    for student in (CORRECT, THIEF, BROKEN):
        assert f"for student '{student}'" in done.output
    assert "Executing notebook" not in done.output
    submitted = course / "submitted" / THIEF / "attention" / notebook_name("attention")
    assert submitted.read_text(encoding="utf-8") == HANDED_IN[(course, "attention", THIEF)]


def test_a_broken_notebook_fails_its_student_only_and_gets_feedback(broken_runs):
    """rusak's notebook is not JSON: nbgrader cannot read it (before any preprocessor), fails
    that student as it does (no autograded copy, exit status 1) and grades the others; the
    kit's reader logs why and writes rusak's feedback page where nbgrader puts feedback, and
    generate_feedback leaves it there. The gradebook flags rusak's submission as needing manual
    grading; nbgrader's export gives it 0 points."""
    course, runs = broken_runs
    done = runs["autograde"]
    assert done.returncode == 1, done.output[-5000:]
    assert re.findall(r"There was an error processing assignment '(\w+)' for student '(\w+)'",
                      done.output) == [("attention", BROKEN)]
    assert f"autograder: {BROKEN} / attention: attention.ipynb cannot be read" in done.output
    assert runs["export"].returncode == 0 and runs["feedback"].returncode == 0, runs["feedback"].output
    with open(course / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle) if row["assignment"] == "attention"}
    full = sum(registry_points("attention").values())
    assert float(rows[CORRECT]["score"]) == pytest.approx(full)
    assert float(rows[THIEF]["score"]) == 0 and float(rows[BROKEN]["score"]) == 0
    assert not (course / "autograded" / BROKEN / "attention").exists()
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        assert gradebook.find_submission("attention", BROKEN).needs_manual_grade
        assert not gradebook.find_submission("attention", CORRECT).needs_manual_grade
    page = (course / "feedback" / BROKEN / "attention" / "attention.html").read_text(encoding="utf-8")
    assert "Notebook rusak" in page and f"0/{full:g}" in page, page[:3000]
    assert "grade_target" not in page and "BEGIN HIDDEN TESTS" not in page
    assert (course / "feedback" / CORRECT / "attention" / "attention.html").exists()


# -- the training outcome (assignment 4), in both channels ----------------------------------------------
def test_the_transformer_training_is_shown_with_the_reference_curve_and_in_the_class_report(nbgrader, course):
    """ani's transformer notebook was trained by the grader under nbgrader autograde and under
    ``autograder grade``. Both feedback pages draw her loss curve beside the reference's with the
    accuracies the grader measured; the command line's class report lists her training outcome
    (report.json's ``training`` and its table in report.html); the stubs (citra) have none."""
    from autograder.checks import outcome

    done = nbgrader.result("autograde")[2]  # generate_feedback transformer
    assert done.returncode == 0, done.output[-5000:]
    page = (course / "feedback" / CORRECT / "transformer" / "transformer.html").read_text(encoding="utf-8")
    reports = course.parent / f"{course.name}-reports" / "transformer"
    mine = (reports / CORRECT / "feedback.html").read_text(encoding="utf-8")
    for html_page in (page, mine):
        figure = html_page.split('data-kind="loss_curve"')[1].split("</figure>")[0]
        assert figure.count("<polyline") == 2 and ">Anda<" in figure and ">acuan<" in figure, figure[:2000]
        assert "tercapai pada langkah" in figure and "grade_target" not in html_page
        assert "didekode greedy oleh penilai" in figure and figure.count(" → ") >= 3, figure[-3000:]
    record = json.loads((reports / CORRECT / "record.json").read_text(encoding="utf-8"))
    (curve,) = [p["data"] for p in record["pictures"] if p["kind"] == "loss_curve"]
    # what her trained model writes, decoded here by the reference holding her verified weights
    assert len(curve["examples"]) == 3 and sum(e["decoded"] == e["expected"] for e in curve["examples"]) >= 2
    assert all(len(e["source"]) == len(e["expected"]) == len(e["decoded"]) for e in curve["examples"])
    student, reference, accuracy = curve["student"], curve["reference"], curve["accuracy"]
    assert len(student) == len(reference) == accuracy[-1][0]  # stopped at the first evaluation that reached it
    assert reference[-1] < reference[0] / 4 and student == pytest.approx(reference, rel=1e-3, abs=1e-4)
    assert accuracy[-1][1] >= outcome.TARGET > accuracy[0][1] and curve["wanted"] == outcome.TARGET
    report = json.loads((reports / "report.json").read_text(encoding="utf-8"))
    rows = {row["student"]: row for row in report["training"]}
    assert set(rows) == {CORRECT}, rows  # citra's stubs never reached the training
    assert rows[CORRECT]["reached_at"] == accuracy[-1][0] and rows[CORRECT]["accuracy"] == accuracy[-1][1]
    table = (reports / "report.html").read_text(encoding="utf-8").split('<table id="training">')[1].split("</table>")[0]
    assert f">{accuracy[-1][0]}<" in table and f">{accuracy[-1][1]:.0%}<" in table and CORRECT in table
