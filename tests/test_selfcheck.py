"""The students' self-check (autograder/selfcheck/, `autograder selfcheck build`): one file that
needs only torch, runs the public checks at the chapter's sizes with the registry's hints, in
Indonesian or English, and makes real `nbgrader validate` fail for an untouched or shape-broken
notebook and pass a correct one."""

import ast
import json
import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import config, selfcheck
from conftest import ROOT, Background, run_autograder
from nbgrader_helpers import (
    COURSE_DIR, SELF_CHECK_ID, is_self_check, is_solution, nbgrader_meta, read_notebook,
    run_nbgrader, strip_solution_markers,
)

SLOW_FIXTURES = {"built", "runs"}  # the command, then a fresh interpreter per case: their tests are slow

CORPUS = ROOT / "tests" / "corpus"
ALLOWED_IMPORTS = {"contextlib", "io", "math", "os", "sys", "traceback", "warnings", "torch"}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("selfcheck")
    done = run_autograder("selfcheck", "build", "-o", out)
    assert done.returncode == 0, done.stderr
    return out / "cek_mandiri.py"


def run_selfcheck(built, assignment, files, lang="id", cwd=None):
    """Run the built file in a fresh interpreter that cannot import the kit (as on Colab),
    on the names the ``files`` define; returns (passed, printed table)."""
    code = f"""
import json, runpy, sys
sys.modules["autograder"] = None  # not installed: the file must stand alone
sys.modules["solutions"] = None
sys.path.insert(0, {str(built.parent)!r})
import cek_mandiri
namespace = {{}}
for path in {[str(f) for f in files]!r}:
    namespace.update(runpy.run_path(path))
ok = cek_mandiri.cek_mandiri({assignment!r}, namespace, bahasa={lang!r}, gagal_bila_salah=False)
print("RESULT", json.dumps(ok))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=cwd or built.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr == ""  # nbgrader counts anything on stderr as a failure
    return json.loads(done.stdout.rsplit("RESULT", 1)[1]), done.stdout


def test_the_file_stands_alone_and_holds_only_public_things(built):
    text = built.read_text(encoding="utf-8")
    tree = ast.parse(text)
    roots = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
             for alias in node.names}
    roots |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert roots <= ALLOWED_IMPORTS, roots
    course = config.load()
    sizes = next(node for node in tree.body if isinstance(node, ast.Assign)
                 and getattr(node.targets[0], "id", "") == "SIZES")
    assert ast.literal_eval(sizes.value) == vars(course.chapter)
    defined = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    targets = {"scaled_dot_product_attention", "causal_mask", "MultiHeadAttention",
               "positional_encoding", "FeedForward", "EncoderBlock", "DecoderBlock"}
    assert not defined & targets  # no reference solution inside
    assert "reference_weights" not in text and "sizes.hidden" not in text


def test_the_built_copies_next_to_the_notebooks_are_up_to_date():
    """nbgrader releases source/<assignment>/cek_mandiri.py with the notebook: scripts/setup.sh
    builds it (assignments/build_notebooks.py), and one built from an older template, course
    or registry is stale."""
    fresh = selfcheck.source()
    for assignment in config.load().assignments:
        path = COURSE_DIR / "source" / assignment / selfcheck.FILE_NAME
        assert path.is_file(), f"{path} is missing: run bash scripts/setup.sh --install-only"
        assert path.read_text(encoding="utf-8") == fresh, (
            f"{path} is stale: run python assignments/build_notebooks.py (or bash scripts/setup.sh)")


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="not a git checkout")
def test_the_built_copies_are_not_committed():
    """Generated from autograder/selfcheck/template.py: git neither holds nor offers them."""
    paths = [f"assignments/source/{a}/{selfcheck.FILE_NAME}" for a in config.load().assignments]
    tracked = subprocess.run(["git", "ls-files", "--", *paths], cwd=ROOT, capture_output=True, text=True)
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=ROOT, capture_output=True,
                             text=True)
    assert tracked.returncode == 0 and tracked.stdout == "", tracked.stdout
    assert ignored.stdout.split() == paths, ignored.stdout


def reference_file(assignment, folder):
    """solutions/ as one notebook's code: the modules the assignment builds on, in order."""
    parts = {"attention": ["attention"], "encoder": ["attention", "encoder"],
             "decoder": ["attention", "encoder", "decoder"],
             "transformer": ["attention", "encoder", "decoder", "transformer"]}[assignment]
    texts = [(ROOT / "solutions" / f"{part}.py").read_text(encoding="utf-8") for part in parts]
    code = "\n\n".join("\n".join(line for line in text.splitlines() if not line.startswith("from solutions"))
                       for text in texts)
    path = folder / "reference.py"
    path.write_text(code, encoding="utf-8")
    return path


REFERENCES = ["attention", "encoder", "decoder", "transformer"]
# Correct code in another style passes too (the transformer's loss written with a transpose moves a
# few weights with zero gradients the other way at Adam's first step).
OTHER_STYLES = [("transformer", "sequential_style")]
MUTANTS = [  # (assignment, mutant in tests/corpus/<assignment>/mutants/, the public check it fails)
    ("attention", "mha_mask_ignored", "mha.masking"),
    ("attention", "softmax_query_axis", "sdpa.rows_sum_to_one"),
    ("attention", "causal_tril", "causal.values"),
    ("encoder", "ffn_relu", "ffn.gelu"),
    ("encoder", "pe_sin_cos_swapped", "pe.values"),
    ("decoder", "dec_no_causal_mask", "dec.causality"),
    # what the notebooks' visible check cells catch, nbgrader validate and the self-check catch too
    ("encoder", "enc_post_missing_residual", "enc.postln_wiring"),
    ("encoder", "enc_pre_residual_from_ln1", "enc.preln_wiring"),
    ("decoder", "dec_self_missing_residual", "dec.wiring"),
    ("decoder", "dec_post_ln", "dec.wiring"),
    ("transformer", "mistake_no_zero_grad", "train.update"),
    ("transformer", "mistake_greedy_all_positions", "greedy.last_position"),
]


def run_stub(built, folder):
    """The built file on a notebook that left one stub and lacks the rest, with its defaults."""
    stub = folder / "stub.py"
    stub.write_text("def scaled_dot_product_attention(q, k, v, mask=None):\n"
                    "    raise NotImplementedError()\n", encoding="utf-8")
    code = (f"import sys; sys.path.insert(0, {str(built.parent)!r}); import cek_mandiri, runpy\n"
            f"cek_mandiri.cek_mandiri('attention', runpy.run_path({str(stub)!r}))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def runs(built, tmp_path_factory):
    """Every run of the built file below, each a fresh interpreter, started at once side by side."""
    jobs = Background()
    for assignment in REFERENCES:
        files = [reference_file(assignment, tmp_path_factory.mktemp(assignment))]
        jobs.start(("reference", assignment), run_selfcheck, built, assignment, files)
    for assignment, name in OTHER_STYLES:
        files = [CORPUS / assignment / "correct" / f"{name}.py"]
        jobs.start(("style", name), run_selfcheck, built, assignment, files)
    for assignment, mutant, _ in MUTANTS:
        files = [CORPUS / assignment / "mutants" / f"{mutant}.py"]
        jobs.start(("mutant", mutant), run_selfcheck, built, assignment, files, "en")
    jobs.start("stub", run_stub, built, tmp_path_factory.mktemp("stub"))
    yield jobs
    jobs.close()


@pytest.mark.parametrize("assignment", REFERENCES)
def test_reference_passes_every_public_check(runs, assignment):
    ok, table = runs.result(("reference", assignment))
    assert ok, table
    assert "✗" not in table and "lulus" in table


@pytest.mark.parametrize("assignment, name", OTHER_STYLES)
def test_correct_code_in_another_style_passes(runs, assignment, name):
    ok, table = runs.result(("style", name))
    assert ok, table


@pytest.mark.parametrize("assignment, mutant, failing", MUTANTS)
def test_a_known_bug_fails_its_public_check_with_the_hint(runs, assignment, mutant, failing):
    ok, table = runs.result(("mutant", mutant))
    assert not ok
    line = next(line for line in table.splitlines() if f"[{failing}]" in line)
    assert line.startswith("✗"), table
    assert "Where to look:" in table


def test_stubs_are_named_and_indonesian_is_the_default(runs):
    done = runs.result("stub")
    assert done.returncode != 0 and "AssertionError: Cek mandiri:" in done.stderr
    assert "`scaled_dot_product_attention` masih berisi `raise NotImplementedError()`" in done.stdout
    assert "`MultiHeadAttention` belum didefinisikan" in done.stdout
    assert "Petunjuk:" in done.stdout


# -- real nbgrader validate --------------------------------------------------------------------------
def released(course, name, edit=None):
    """The released notebook, filled with the reference (``edit`` changes it), as ``name``."""
    release = course / "release" / "attention"
    source = {c.id: c for c in read_notebook(course / "source" / "attention" / "attention.ipynb").cells}
    nb = json.loads((release / "attention.ipynb").read_text(encoding="utf-8"))
    if edit is not None:
        for cell in nb["cells"]:
            if is_solution(cell):
                cell["source"] = edit(strip_solution_markers(source[cell["id"]].source))
    folder = course / name
    folder.mkdir()
    (folder / "attention.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    shutil.copy(release / selfcheck.FILE_NAME, folder)
    return folder / "attention.ipynb"


EDITS = {  # the notebooks validated, each filled from the reference with this edit
    "untouched": None,
    "broken": lambda code: code.replace("return self.wo(z), weights", "return self.wo(z), weights.mean(dim=1)"),
    "correct": lambda code: code,
}


def start_nbgrader_jobs(root, jobs):
    """Validate each notebook of EDITS in the session's course (conftest.py's ``nbgrader``
    fixture), beside the other modules' nbgrader commands."""
    for name, edit in EDITS.items():
        jobs.start(f"selfcheck validate {name}", run_nbgrader, "validate", released(root, name, edit), cwd=root)


@pytest.mark.parametrize("assignment", list(config.load().assignments))
def test_the_self_check_cell_is_a_visible_test_worth_nothing(nbgrader, assignment):
    release = nbgrader.root / "release" / assignment
    assert (release / selfcheck.FILE_NAME).is_file()  # released with it
    nb = read_notebook(release / f"{assignment}.ipynb")
    cells = [c for c in nb.cells if is_self_check(c)]
    assert len(cells) == 1 and cells[0] is nb.cells[-1]
    meta = nbgrader_meta(cells[0])
    assert meta["grade"] and meta["locked"] and meta["points"] == 0 and meta["grade_id"] == SELF_CHECK_ID
    # the last line ends in `;`: Jupyter shows the table, not also the returned True
    assert cells[0].source.endswith(f'cek_mandiri("{assignment}", globals());')


def test_validate_fails_an_untouched_notebook(nbgrader):
    done = nbgrader.result("selfcheck validate untouched")
    assert "VALIDATION FAILED ON 1 CELL(S)!" in done.stdout, done.output[-5000:]
    assert "AssertionError: Cek mandiri: 17 pemeriksaan publik gagal" in done.stdout
    assert "  ✗ sdpa.shape\n      " in done.stdout  # which ones and why, also where only errors show
    assert "tabel di atas" not in done.stdout  # nbgrader validate shows no table


def test_validate_fails_a_shape_broken_notebook(nbgrader):
    path = nbgrader.root / "broken" / "attention.ipynb"
    assert "weights.mean(dim=1)" in path.read_text(encoding="utf-8"), "the edit no longer applies"
    done = nbgrader.result("selfcheck validate broken")
    assert "VALIDATION FAILED ON 1 CELL(S)!" in done.stdout, done.output[-5000:]
    failed = done.stdout.split("pemeriksaan publik gagal:")[1].split("\n")[1]
    assert failed.strip() == "✗ mha.shape", failed


def test_validate_passes_a_correct_notebook(nbgrader):
    done = nbgrader.result("selfcheck validate correct")
    assert "Success! Your notebook passes all the tests." in done.stdout, done.output[-5000:]
