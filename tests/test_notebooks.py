"""The nbgrader source notebooks: built by assignments/build_notebooks.py, true to the reference
solution, one hidden test cell per graded target, and runnable top to bottom with full marks."""

import ast

import pytest
from nbclient import NotebookClient

from nbgrader_helpers import (
    ASSIGNMENTS, SOLUTION_MARKERS, environment, hidden_target, hidden_test_source, is_hidden_test,
    is_read_only, is_solution, load_build_script, nbgrader_meta, read_notebook,
    reference_definitions, registry_points, source_notebook, strip_solution_markers,
    top_level_definitions,
)

# What each notebook defines: the targets students write, plus the code given to them.
DEFINED = {
    "attention": {"scaled_dot_product_attention", "causal_mask", "MultiHeadAttention"},
    "encoder": {"scaled_dot_product_attention", "MultiHeadAttention", "positional_encoding",
                "FeedForward", "EncoderBlock"},
    "decoder": {"scaled_dot_product_attention", "causal_mask", "MultiHeadAttention",
                "FeedForward", "DecoderBlock"},
}


@pytest.fixture(scope="module")
def built():
    return load_build_script().build_all()


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
        f"{path.name} differs from what assignments/build_notebooks.py produces (the script is the "
        "source of truth, and the points come from the check registry): rerun the script")


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
    assert not drifted, (f"{assignment}: {drifted} differ from solutions/*.py; update the code in "
                         "assignments/build_notebooks.py and rebuild")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_targets_are_solution_cells_and_given_code_is_locked(assignment):
    targets = set(registry_points(assignment))
    assert targets, f"no checks are registered for {assignment}"
    for cell, definitions in definitions_by_cell(read_notebook(source_notebook(assignment))):
        if not definitions:
            continue
        if is_solution(cell):
            assert set(definitions) <= targets, cell.id
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


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_source_notebook_runs_and_the_reference_earns_full_marks(assignment, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", environment()["PATH"])  # the kernelspec starts `python` from PATH
    nb = execute(read_notebook(source_notebook(assignment)), tmp_path)  # raises on any error
    points = registry_points(assignment)
    for cell in code_cells(nb):
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
