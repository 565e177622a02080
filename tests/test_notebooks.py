"""The nbgrader source notebooks: built by assignments/build_notebooks.py from the text files in
assignments/notebooks/ and the code in solutions/, true to the reference solution, one hidden
test cell per graded target, and runnable top to bottom with full marks."""

import ast
import math
import sys
import tomllib

import jupytext
import pytest
from nbclient import NotebookClient

from nbgrader_helpers import (
    ASSIGNMENTS, COURSE, COURSE_DIR, SOLUTION_MARKERS, environment, hidden_target, hidden_test_source,
    is_hidden_test, is_read_only, is_self_check, is_solution, load_build_script, nbgrader_meta, read_notebook,
    reference_definitions, registry_points, source_notebook, strip_solution_markers,
    top_level_definitions,
)

TEXTS = COURSE_DIR / "notebooks"

# What each notebook defines: the targets students write, plus the code given to them.
DEFINED = {
    "attention": {"scaled_dot_product_attention", "causal_mask", "MultiHeadAttention"},
    "encoder": {"scaled_dot_product_attention", "MultiHeadAttention", "positional_encoding",
                "FeedForward", "EncoderBlock"},
    "decoder": {"scaled_dot_product_attention", "causal_mask", "MultiHeadAttention",
                "FeedForward", "DecoderBlock"},
    "transformer": {"scaled_dot_product_attention", "causal_mask", "MultiHeadAttention",
                    "positional_encoding", "FeedForward", "EncoderBlock", "DecoderBlock",
                    "shift_right", "make_batch", "Transformer", "train_step", "greedy_decode",
                    "sequence_accuracy"},
}
# Notebooks whose hidden cells train a model (train.outcome, tens of seconds): the kernel run
# below leaves their hidden cells out; tests/test_nbgrader.py grades the reference through
# nbgrader autograde and the command line instead.
TRAINED = {"transformer"}


@pytest.fixture(scope="module")
def builder():
    return load_build_script()


@pytest.fixture(scope="module")
def built(builder):
    return builder.build_all()


@pytest.fixture(scope="module")
def reference():
    return reference_definitions()


def code_cells(nb):
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def definitions_by_cell(nb):
    """[(cell, {name: dump})] for every code cell except the hidden tests."""
    return [(cell, top_level_definitions(strip_solution_markers(cell.source)))
            for cell in code_cells(nb) if not is_hidden_test(cell)]


# -- the files --------------------------------------------------------------------------------------
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_committed_notebook_is_what_the_build_script_writes(assignment, built):
    path = source_notebook(assignment)
    assert path.exists(), f"{path} is missing: run python assignments/build_notebooks.py"
    assert path.read_text(encoding="utf-8") == built[path], (
        f"{path.name} differs from what assignments/build_notebooks.py builds from "
        f"assignments/notebooks/{assignment}.py, solutions/ and the check registry's points: "
        "rerun the script")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_text_file_holds_no_reference_code(assignment, reference):
    """Solutions and given code come from solutions/ through `# fill:`, never as a copy."""
    text = (TEXTS / f"{assignment}.py").read_text(encoding="utf-8")
    for cell in jupytext.reads(text, fmt="py:percent").cells:
        if cell.cell_type != "code":
            continue
        copied = set(top_level_definitions(cell.source)) & set(reference)
        assert not copied, f"{assignment}.py copies {sorted(copied)}: use `# fill: solutions...`"
        assert not set(SOLUTION_MARKERS) & {line.strip() for line in cell.source.split("\n")}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_notebook_stores_no_outputs(assignment):
    for cell in code_cells(read_notebook(source_notebook(assignment))):
        assert cell.outputs == [] and cell.execution_count is None, cell.id


# -- the code in the notebooks is the reference's ------------------------------------------------------
def test_drift_check_ignores_docstrings_and_comments_but_not_code():
    base = top_level_definitions('def f(x):\n    """Satu."""\n    return x / 2  # half\n')
    assert base == top_level_definitions('def f(x):\n    """One."""\n    return x / 2\n')
    assert base != top_level_definitions("def f(x):\n    return x\n")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solution_and_given_code_equal_the_reference(assignment, reference):
    defined = {}
    for cell, definitions in definitions_by_cell(read_notebook(source_notebook(assignment))):
        for name, dump in definitions.items():
            assert name not in defined, f"{name} is defined twice in {assignment}"
            defined[name] = dump
    assert set(defined) == DEFINED[assignment]
    drifted = [name for name, dump in defined.items() if dump != reference.get(name)]
    assert not drifted, (f"{assignment}: {drifted} differ from solutions/*.py: rebuild with "
                         "assignments/build_notebooks.py (if that does not help, its `# fill:` broke)")


def _docstrings(nodes, prefix=""):
    """{qualified name: docstring} of the functions, classes and methods among ``nodes``."""
    found = {}
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            docstring = ast.get_docstring(node, clean=True)
            if docstring is not None:
                found[prefix + node.name] = docstring
            if isinstance(node, ast.ClassDef):
                found.update(_docstrings(node.body, prefix=f"{node.name}."))
    return found


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_students_see_the_indonesian_docstrings(assignment):
    """Every docstring of the reference code in a notebook is the one in docstrings.toml."""
    with open(TEXTS / "docstrings.toml", "rb") as handle:
        wanted = {name: text.strip("\n") for name, text in tomllib.load(handle).items()}
    nb = read_notebook(source_notebook(assignment))
    for cell in code_cells(nb):
        if is_hidden_test(cell) or not top_level_definitions(strip_solution_markers(cell.source)):
            continue
        code = ast.parse(strip_solution_markers(cell.source))
        for name, docstring in _docstrings(code.body).items():
            assert docstring == wanted.get(name), f"{cell.id}: the docstring of {name}"


def test_fill_wraps_every_function_body_of_a_solution(builder):
    code = builder.Definitions().code("solutions.attention", "MultiHeadAttention", solution=True)
    lines = code.split("\n")
    assert lines.count("        ### BEGIN SOLUTION") == lines.count("        ### END SOLUTION") == 3
    assert lines[lines.index("    def __init__(self, d_model, num_heads):") + 1] == \
        "        super().__init__()"  # outside the region: nbgrader's stub keeps it
    given = builder.Definitions().code("solutions.attention", "MultiHeadAttention", solution=False)
    assert given == strip_solution_markers(code)


BROKEN_TEXTS = {  # (text in attention.py, replacement): each one the build must refuse
    "literal solution": ("# fill: solutions.attention.causal_mask",
                         "def causal_mask(t):\n    return torch.ones(t, t).triu(1).bool()"),
    "unknown name": ("# fill: solutions.attention.causal_mask", "# fill: solutions.attention.mask"),
    "unknown module": ("# fill: solutions.attention.causal_mask", "# fill: solutions.attn.causal_mask"),
    "fill mixed with code": ("# fill: solutions.attention.causal_mask",
                             "# fill: solutions.attention.causal_mask\nprint(1)"),
    "hidden test for no target": ("# grade: causal_mask", "# grade: causal_masks"),
    "no role": ('# %% nbgrader="read-only" grade_id="imports"', "# %%"),
    "points of no target": ("{{points:causal_mask}}", "{{points:causal}}"),
}


@pytest.mark.parametrize("case", BROKEN_TEXTS)
def test_build_refuses_a_broken_text_file(builder, case, tmp_path, monkeypatch):
    old, new = BROKEN_TEXTS[case]
    text = (TEXTS / "attention.py").read_text(encoding="utf-8")
    assert old in text
    (tmp_path / "attention.py").write_text(text.replace(old, new, 1), encoding="utf-8")
    monkeypatch.setattr(builder, "TEXTS", tmp_path)
    with pytest.raises(builder.BuildError):
        builder.notebook("attention", builder.Definitions())


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_targets_are_solution_cells_and_given_code_is_locked(assignment):
    targets = set(registry_points(assignment))
    assert targets, f"no checks are registered for {assignment}"
    for cell, definitions in definitions_by_cell(read_notebook(source_notebook(assignment))):
        if not definitions:
            continue
        if is_solution(cell):
            own_blocks = cell.id == "own_blocks" and COURSE.assignments[assignment].blocks == "own"
            assert own_blocks or set(definitions) <= targets, cell.id  # (own blocks: pasted, not graded)
            lines = [line.strip() for line in cell.source.split("\n")]
            begins, ends = (lines.count(marker) for marker in SOLUTION_MARKERS)
            assert begins == ends >= 1, f"{cell.id}: unbalanced solution regions"
        else:
            assert is_read_only(cell), f"{cell.id} defines {sorted(definitions)} but is not locked"
            assert not set(definitions) & targets, f"{cell.id} gives a target away"


# -- nbgrader metadata -----------------------------------------------------------------------------
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_code_cell_has_a_clear_nbgrader_role(assignment):
    nb = read_notebook(source_notebook(assignment))
    grade_ids = [nbgrader_meta(cell)["grade_id"] for cell in nb.cells if nbgrader_meta(cell)]
    assert len(grade_ids) == len(set(grade_ids)), "duplicate grade_id"
    roles = {  # (grade, solution, locked)
        "solution": (False, True, False), "read-only": (False, False, True),
        "hidden test": (True, False, True)}
    for cell in code_cells(nb):
        meta = nbgrader_meta(cell)
        flags = (meta.get("grade"), meta.get("solution"), meta.get("locked"))
        assert flags in roles.values(), f"{cell.id}: unexpected nbgrader flags {flags}"
        assert meta["schema_version"] == 3 and meta["grade_id"] == cell.id


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_imports_cell_makes_the_notebook_self_contained(assignment):
    cell = read_notebook(source_notebook(assignment)).cells[1]
    assert is_read_only(cell)
    imported = {(alias.name, alias.asname) for node in ast.parse(cell.source).body
                for alias in node.names}
    assert imported == {("math", None), ("torch", None), ("torch.nn", "nn"),
                        ("torch.nn.functional", "F")}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_one_hidden_cell_per_target_with_the_registry_points(assignment):
    nb = read_notebook(source_notebook(assignment))
    points = registry_points(assignment)
    hidden = [(index, cell) for index, cell in enumerate(nb.cells) if is_hidden_test(cell)]
    targets = [hidden_target(cell) for _, cell in hidden]
    assert sorted(targets) == sorted(points), "hidden cells and registry targets differ"
    for index, cell in hidden:
        target = hidden_target(cell)
        meta = nbgrader_meta(cell)
        assert cell.source == hidden_test_source(assignment, target)
        assert meta["grade_id"] == f"test_{target}"
        assert meta["points"] == pytest.approx(points[target])
        note = nb.cells[index - 1]  # a visible note says what the hidden cell grades
        assert note.cell_type == "markdown" and f"`{target}`" in note.source


# -- running the notebooks ------------------------------------------------------------------------
def execute(nb, workdir):
    NotebookClient(nb, timeout=300, startup_timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(workdir)}}).execute()
    return nb


@pytest.mark.slow  # a kernel runs each notebook
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_source_notebook_runs_and_the_reference_earns_full_marks(assignment, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", environment()["PATH"])  # the kernelspec starts `python` from PATH
    nb = read_notebook(source_notebook(assignment))
    if assignment in TRAINED:
        nb.cells = [cell for cell in nb.cells if not is_hidden_test(cell)]
    nb = execute(nb, tmp_path)  # raises on any error
    points = registry_points(assignment)
    if assignment == "transformer":
        _the_training_cell_learns_and_plots(nb)
    for cell in code_cells(nb):
        if is_self_check(cell):  # the last line ends in `;`: the table, and no value echoed
            assert not [o for o in cell.outputs if o.output_type == "execute_result"], cell.outputs
            assert "✓" in "".join(o.get("text", "") for o in cell.outputs), cell.outputs
        streams = {output.name for output in cell.outputs if output.output_type == "stream"}
        if is_read_only(cell) and cell.id.startswith("check_"):
            assert "✓" in "".join(o.get("text", "") for o in cell.outputs), cell.id
        if not is_hidden_test(cell):
            continue
        assert "stderr" not in streams, f"{cell.id} writes to stderr: nbgrader would give 0 points"
        results = [o for o in cell.outputs if o.output_type == "execute_result"]
        assert len(results) == 1, f"{cell.id} has no numeric result"
        earned = float(results[0].data["text/plain"])
        assert earned == pytest.approx(points[hidden_target(cell)]), (cell.id, cell.outputs)


def _outputs_text(nb, cell_id):
    return "".join(o.get("text", "") for o in next(c for c in nb.cells if c.id == cell_id).outputs)


def _the_training_cell_learns_and_plots(nb):
    """The transformer notebook's training cell reaches the target within its 200 steps, well
    inside a laptop's two minutes, and the next cell draws the loss (a PNG with matplotlib)."""
    trained = _outputs_text(nb, "train")
    assert "✓ akurasi urutan-tepat ≥ 95%" in trained, trained
    seconds = float(trained.split("waktu CPU: ")[1].split(" detik")[0])
    assert seconds < 30, trained  # measured 3-8 s of one core here; the notebook promises < 2 min
    plotted = next(c for c in nb.cells if c.id == "plot_loss").outputs
    assert any("image/png" in o.get("data", {}) for o in plotted)
    decoded = _outputs_text(nb, "examples")
    assert sum(line.startswith("sumber ") for line in decoded.splitlines()) == 5, decoded
    assert "cermin L-1-t" in decoded, decoded


def test_transformer_loss_plot_falls_back_to_text_without_matplotlib(monkeypatch, capsys):
    nb = read_notebook(source_notebook("transformer"))
    source = next(cell.source for cell in nb.cells if cell.get("id") == "plot_loss")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    losses = [2.5 * 0.97 ** step for step in range(200)]
    exec(compile(source, "plot_loss", "exec"), {"math": math, "TGT_VOCAB": 11, "losses": losses,
                                                 "accuracies": [(25, 0.0), (200, 1.0)]})
    out = capsys.readouterr().out
    line = out.split("\n")[0]
    assert line.startswith("loss  2.") and "█" in line and "▁" in line, out
    assert "25: 0%" in out and "200: 100%" in out


# -- drafts and the blocks switch --------------------------------------------------------------------
def test_a_draft_is_read_by_the_build_but_not_written(builder, tmp_path, monkeypatch):
    """A text file course.toml does not list is a draft: built (its errors stop the build), not
    written. The kit's course lists every notebook it has."""
    built = builder.build_all()
    assert builder.drafts() == []
    assert {path.parent.name for path in built} == set(COURSE.assignments)
    for path in builder.TEXTS.iterdir():
        (tmp_path / path.name).write_bytes(path.read_bytes())
    (tmp_path / "draft.py").write_text(
        '# %% nbgrader="read-only" grade_id="given"\n# fill: solutions.transformer.no_such_name\n',
        encoding="utf-8")
    monkeypatch.setattr(builder, "TEXTS", tmp_path)
    assert builder.drafts() == ["draft"]
    with pytest.raises(builder.BuildError, match="no_such_name"):
        builder.build_all()


BLOCKS = {"scaled_dot_product_attention", "causal_mask", "MultiHeadAttention", "positional_encoding",
          "FeedForward", "EncoderBlock", "DecoderBlock"}
BLOCK_BUG = ("return h + self.ffn(self.ln2(h))", "return h + 0.5 * self.ffn(self.ln2(h))")  # in EncoderBlock (pre-LN)


def _course_with_blocks(tmp_path, blocks):
    """A copy of the kit's course.toml whose transformer says ``blocks = BLOCKS``, with the
    transformer's source notebook built for it beside the file, as nbgrader's course root holds it."""
    text = (COURSE_DIR.parent / "course.toml").read_text(encoding="utf-8")
    assert 'blocks = "given"' in text
    path = tmp_path / "course.toml"
    path.write_text(text.replace('blocks = "given"', f'blocks = "{blocks}"'), encoding="utf-8")
    return path


def _build_for(builder, course_path, monkeypatch):
    monkeypatch.setenv("AUTOGRADER_COURSE", str(course_path))
    nb = builder.notebook("transformer", builder.Definitions())
    where = course_path.parent / "assignments" / "source" / "transformer" / "transformer.ipynb"
    where.parent.mkdir(parents=True)
    where.write_text(nbformat_writes(nb), encoding="utf-8")
    return nb, where


def nbformat_writes(nb):
    import nbformat

    return nbformat.writes(nb) + "\n"


def _student_notebook(nb, bug_in):
    """The reference with the markers stripped, and one bug inside EncoderBlock in ``bug_in``."""
    import copy

    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = strip_solution_markers(cell.source)
            if cell.id == bug_in:
                assert BLOCK_BUG[0] in cell.source
                cell.source = cell.source.replace(*BLOCK_BUG)
    return nb


def test_blocks_switch_builds_given_or_own_blocks_and_the_loader_follows_it(builder, tmp_path, monkeypatch):
    """course.toml's assignments.transformer.blocks: "given" builds the course's blocks into a
    read-only cell (an edit there is undone and reported: the grader runs the course's blocks);
    "own" builds a solution cell of stubs where the student pastes their blocks, and the grader
    runs what the student pasted."""
    from autograder import loading

    results = {}
    for blocks in ("given", "own"):
        folder = tmp_path / blocks
        folder.mkdir()
        course_path = _course_with_blocks(folder, blocks)
        nb, source = _build_for(builder, course_path, monkeypatch)
        assert config_blocks(course_path) == blocks
        cells = {cell.id: cell for cell in nb.cells}
        cell_id = "given_code" if blocks == "given" else "own_blocks"
        other = "own_blocks" if blocks == "given" else "given_code"
        assert other not in cells and set(top_level_definitions(
            strip_solution_markers(cells[cell_id].source))) == BLOCKS
        if blocks == "given":
            assert is_read_only(cells[cell_id]) and SOLUTION_MARKERS[0] not in cells[cell_id].source
            assert "## Kode yang diberikan" in "".join(c.source for c in nb.cells if c.cell_type == "markdown")
        else:
            assert is_solution(cells[cell_id])
            lines = [line.strip() for line in cells[cell_id].source.split("\n")]
            assert lines.count(SOLUTION_MARKERS[0]) == lines.count(SOLUTION_MARKERS[1]) > len(BLOCKS)
            prose = "".join(c.source for c in nb.cells if c.cell_type == "markdown")
            assert "Tempel, jangan impor" in prose and "## Kode yang diberikan" not in prose
        submitted = folder / "andi.ipynb"
        submitted.write_text(nbformat_writes(_student_notebook(nb, cell_id)), encoding="utf-8")
        loaded = loading.load(submitted, source)
        code = "\n".join(chunk["code"] for chunk in loaded.chunks)
        changed = [p for p in loaded.problems if p["code"] == "changed_cell"]
        results[blocks] = (BLOCK_BUG[1] in code, [p["detail"] for p in changed])
    assert results == {"given": (False, ["given_code"]), "own": (True, [])}


def config_blocks(course_path):
    from autograder import config

    return config.load(course_path).assignments["transformer"].blocks
