"""Finding submissions and taking only definitions from notebooks and scripts."""

import json
from pathlib import Path

import nbformat

from autograder import loader


def notebook(path, cells):
    nb = nbformat.v4.new_notebook()
    for cell in cells:
        if isinstance(cell, tuple):
            source, meta = cell
            nb.cells.append(nbformat.v4.new_code_cell(source, metadata={"nbgrader": meta}))
        elif cell.startswith("# md"):
            nb.cells.append(nbformat.v4.new_markdown_cell(cell))
        else:
            nb.cells.append(nbformat.v4.new_code_cell(cell))
    nbformat.write(nb, path)
    return path


def codes(loaded):
    return "\n".join(chunk["code"] for chunk in loaded.chunks)


def test_only_definitions_are_kept(tmp_path):
    path = notebook(tmp_path / "a.ipynb", [
        "# md text",
        "%matplotlib inline\nimport torch\n!pip install nothing\nD_MODEL = 16\nNEG = float('-inf')",
        "def f(x):\n    return x + 1\n\nprint(f(1))\nfor _ in range(10**9):\n    pass",
        "model = train_forever()\nwhile True:\n    pass",
        "@staticmethod\ndef g():\n    return 2",
        "class A:\n    pass\nimport os; os.system('echo hi')",
    ])
    loaded = loader.load(path)
    code = codes(loaded)
    assert "def f" in code and "class A" in code and "import torch" in code and "D_MODEL = 16" in code
    assert "NEG = float('-inf')" in code and "@staticmethod" in code
    for dropped in ("print(", "range(10**9)", "train_forever", "while True", "os.system", "%matplotlib", "!pip"):
        assert dropped not in code
    assert not loaded.problems and not loaded.fatal


def test_line_numbers_are_kept_for_tracebacks(tmp_path):
    path = notebook(tmp_path / "a.ipynb", ["x = 1\n\n\ndef f():\n    return 1"])
    chunk = [c for c in loader.load(path).chunks if "def f" in c["code"]][0]
    assert chunk["code"].splitlines()[3] == "def f():" and chunk["origin"] == "cell 1"


def test_syntax_error_cell_is_reported_and_others_load(tmp_path):
    path = notebook(tmp_path / "a.ipynb", ["def ok():\n    return 1", "def broken(:\n    pass", "def ok2():\n    return 2"])
    loaded = loader.load(path)
    assert "def ok()" in codes(loaded) and "def ok2()" in codes(loaded)
    assert [p["code"] for p in loaded.problems] == ["syntax_error"]
    assert "cell 2" in loaded.problems[0]["detail"]


def test_nbgrader_test_cells_never_load(tmp_path):
    path = notebook(tmp_path / "a.ipynb", [
        ("def answer():\n    return 42", {"solution": True, "grade": False, "grade_id": "s1"}),
        ("def answer():\n    return 0\nassert answer() == 42", {"solution": False, "grade": True, "grade_id": "t1", "points": 1}),
        "from autograder.notebook import grade_target",
    ])
    loaded = loader.load(path)
    assert "return 42" in codes(loaded) and "return 0" not in codes(loaded)
    assert "autograder" not in codes(loaded)
    assert set(loaded.nbgrader_cells) == {"s1", "t1"}


def test_broken_notebooks_are_clear_errors(tmp_path):
    bad_json = tmp_path / "bad.ipynb"
    bad_json.write_text('{"cells": [')
    loaded = loader.load(bad_json)
    assert loaded.fatal and loaded.problems[0]["code"] == "bad_notebook"
    empty = notebook(tmp_path / "empty.ipynb", ["# md only"])
    assert [p["code"] for p in loader.load(empty).problems] == ["no_code"]


def test_nbformat_v3_is_converted(tmp_path):
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [
        {"cell_type": "code", "input": "def old():\n    return 3", "language": "python",
         "outputs": [], "metadata": {}}]}]}
    path = tmp_path / "v3.ipynb"
    path.write_text(json.dumps(v3))
    assert "def old" in codes(loader.load(path))


def test_non_utf8_source_is_reported(tmp_path):
    path = tmp_path / "latin.py"
    path.write_bytes("# caf\xe9\ndef f():\n    return 1\n".encode("latin-1"))
    loaded = loader.load(path)
    assert "def f" in codes(loaded) and loaded.problems[0]["code"] == "not_utf8"


def test_discover_layouts(tmp_path):
    course = tmp_path / "course"
    (course / "submitted" / "ani" / "attention").mkdir(parents=True)
    (course / "submitted" / "ani" / "attention" / "attention.ipynb").write_text("{}")
    (course / "submitted" / "ani" / "attention" / "other.ipynb").write_text("{}")
    (course / "submitted" / "bayu" / "encoder").mkdir(parents=True)
    found = loader.discover([course], "attention", "attention.ipynb")
    assert [(s.student, s.path and s.path.name, s.problem) for s in found] == [
        ("ani", "attention.ipynb", None), ("bayu", None, "no_notebook")]
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "citra.py").write_text("x = 1")
    (loose / "dewi.ipynb").write_text("{}")
    assert [s.student for s in loader.discover([loose], "attention")] == ["citra", "dewi"]
    assert loader.discover([loose / "citra.py"], "attention")[0].student == "citra"
    assert loader.discover([tmp_path / "nope.ipynb"], "attention")[0].problem == "not_found"


def test_checksum_is_nbgrader_s(tmp_path):
    from nbgrader.utils import compute_checksum

    notebooks = sorted(Path(__file__).resolve().parent.parent.glob("assignments/source/*/*.ipynb"))
    cells = [cell for path in notebooks for cell in nbformat.read(path, as_version=4).cells
             if cell.metadata.get("nbgrader", {}).get("grade_id")]
    assert len(cells) > 20
    variants = [{"grade": True, "solution": True, "points": 2}, {"locked": True}, {"grade": False}]
    for cell in cells + [nbformat.from_dict({**c, "metadata": {"nbgrader": {**c.metadata.nbgrader, **v}}})
                         for c in cells[:3] for v in variants]:
        assert loader.nbgrader_checksum(cell) == compute_checksum(cell)


def test_a_statement_too_deep_to_rewrite_is_the_student_s_problem_not_a_crash():
    """Two statements on one line are re-written with ast.unparse, which recurses."""
    source = "import math\nX = " + " + ".join(["1"] * 600) + "; Y = 2\n"
    loaded = loader.LoadedCode()
    loader.add_definitions(source, "cell 1", loaded)
    assert [p["code"] for p in loaded.problems] == ["syntax_error"]
    assert "line 2" in loaded.problems[0]["detail"] and "RecursionError" in loaded.problems[0]["detail"]
    assert "import math" in loaded.chunks[0]["code"]  # the rest still loads
