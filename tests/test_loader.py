"""Finding submissions and taking only definitions from notebooks and scripts."""

import ast
import json
import re
from pathlib import Path

import nbformat
import pytest

from autograder import loading
from autograder.loading import cells as notebook_cells, statements
from autograder.grading import messages
from nbgrader_helpers import cell_by_id, released_notebook

ROOT = Path(__file__).resolve().parent.parent
SOURCE = {a: ROOT / "assignments" / "source" / a / f"{a}.ipynb" for a in ("attention", "encoder", "decoder")}


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


def load_text(source, origin="cell 1"):
    loaded = loading.LoadedCode()
    statements.add_definitions(source, origin, loaded)
    return notebook_cells.finish(loaded)


def problem_codes(loaded):
    return [p["code"] for p in loaded.problems]


def sentences(loaded, lang="en"):
    return " | ".join(messages.load_problem(p)[lang] for p in loaded.problems)


def test_only_definitions_are_kept_and_the_rest_is_one_note(tmp_path):
    path = notebook(tmp_path / "a.ipynb", [
        "# md text",
        "%matplotlib inline\nimport torch\n!pip install nothing\nD_MODEL = 16\nNEG = float('-inf')",
        "def f(x):\n    return x + 1\n\nprint(f(1))\nfor _ in range(10**9):\n    pass",
        "model = train_forever()\nwhile True:\n    pass",
        "@staticmethod\ndef g():\n    return 2",
        "class A:\n    pass\nimport os; os.system('echo hi')",
    ])
    loaded = loading.load(path)
    code = codes(loaded)
    assert "def f" in code and "class A" in code and "import torch" in code and "D_MODEL = 16" in code
    assert "NEG = float('-inf')" in code and "@staticmethod" in code
    for dropped in ("print(", "range(10**9)", "train_forever", "while True", "os.system", "%matplotlib", "!pip"):
        assert dropped not in code
    assert not loaded.fatal
    [note] = loaded.problems  # one note, with every dropped statement's cell and line
    assert note["code"] == "dropped"
    assert note["places"] == [["cell 2", 4], ["cell 2", 5], ["cell 3", 1], ["cell 3", 2], ["cell 5", 3]]
    text = messages.load_problem(note)
    assert "sel 2, baris 4, 5; sel 3, baris 1, 2; sel 5, baris 3" in text["id"]
    assert "cell 2, lines 4, 5; cell 3, lines 1, 2; cell 5, line 3" in text["en"]
    assert "tidak mengurangi nilai" in text["id"] and "costs nothing" in text["en"]


STYLES = '''\
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, Optional

import torch
from torch import Tensor, nn

try:
    from einops import rearrange
except ImportError:  # not installed when grading: view/transpose instead
    rearrange = None

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Attention", "Config", "LOG_BASE"]
OptTensor = Optional[Tensor]
LOG_BASE = math.log(10000.0)
NEG_INF = float("-inf")
SCALE = torch.tensor(2.0)
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
ACTIVATIONS = {"gelu": nn.GELU, "relu": nn.ReLU}
gelu = functools.partial(torch.nn.functional.gelu, approximate="none")
HEADS = [2 ** i for i in range(3)]


class Shape(NamedTuple):
    batch: int
    length: int


@dataclass(frozen=True)
class Config:
    d_model: int = 16
    num_heads: int = 4


DEFAULT = Config()
SMALL = Shape(2, 5)


def twice(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)
    return wrapper


class Attention(nn.Module):
    def __init__(self, cfg: Config = DEFAULT, mask: OptTensor = None) -> None:
        super().__init__()
        self.cfg = cfg

    @twice
    def forward(self, x: Tensor) -> Tensor:
        return x * SCALE
'''


def test_real_world_styles_are_all_kept():
    loaded = load_text(STYLES)
    assert not loaded.problems, sentences(loaded)
    code = codes(loaded)
    for kept in ("OptTensor = Optional[Tensor]", "LOG_BASE = math.log(10000.0)", 'NEG_INF = float("-inf")',
                 "SCALE = torch.tensor(2.0)", "DEVICE = torch.device(", "__all__ =", "DEFAULT = Config()",
                 "SMALL = Shape(2, 5)", "gelu = functools.partial(", "HEADS = [2 ** i", "ACTIVATIONS =",
                 "if TYPE_CHECKING:", "rearrange = None", "@twice", "@dataclass(frozen=True)"):
        assert kept in code, kept
    namespace = {"__name__": "submission"}
    for chunk in loaded.chunks:  # the kept code runs, chunk by chunk as the worker runs it
        exec(compile(chunk["code"], f"<{chunk['origin']}>", "exec"), namespace)
    assert namespace["Attention"]()(torch_ones()).tolist() == [2.0, 2.0]
    assert namespace["LOG_BASE"] == pytest.approx(9.2103, abs=1e-4)
    assert namespace["Attention"].__init__.__annotations__["mask"] == "OptTensor"  # PEP 563 kept


def torch_ones():
    import torch

    return torch.ones(2)


def test_a_print_in_a_guarded_import_is_reported_but_the_guard_stays():
    loaded = load_text("try:\n    import einops\nexcept ImportError:\n    print('no einops')\n")
    assert "import einops" in codes(loaded) and "pass" in codes(loaded)
    assert loaded.problems == [{"code": "dropped", "detail": "", "places": [["cell 1", 4]]}]


def test_future_annotations_apply_to_later_cells_with_their_line_numbers(tmp_path):
    path = notebook(tmp_path / "a.ipynb", [
        "from __future__ import annotations\nimport torch",
        "def f(x: Later,\n      y: list[\n          Later] = None) -> Later:\n    return x\n\n\nclass Later:\n    z: Undefined = 1",
    ])
    loaded = loading.load(path)
    assert not loaded.problems
    namespace = {}
    for chunk in loaded.chunks:
        exec(compile(chunk["code"], "<chunk>", "exec"), namespace)
    assert namespace["f"].__annotations__ == {"x": "Later", "y": "list[Later]", "return": "Later"}
    chunk = next(c for c in loaded.chunks if "class Later" in c["code"])
    assert chunk["code"].split("\n").index("class Later:") == 6  # still line 7 of its cell


@pytest.mark.parametrize("statement", [
    "model = MultiHeadAttention(16, 4)",  # the student's own class: demo work (and maybe a stub)
    "out = helper(3)",
    "data = open('train.txt').read()",
    "weights = torch.load('model.pt')",
    "g = torch.manual_seed(0)",
    "loader = torch.utils.data.DataLoader([1, 2])",
    "opt = torch.optim.Adam([torch.zeros(1)])",
    "x = undefined_name + 1",
    "y = (z := 3)",
    "text = print('hi')",
    "mha.weight = 3",
    "torch.allclose = lambda *a, **k: True",
    "values[0] = 1",
    "result = (lambda: helper(1))()",
    "if __name__ == '__main__':\n    helper(2)",
    "if torch.cuda.is_available():\n    helper(2)",
    "with torch.no_grad():\n    y = 1",
    "assert helper(1) == 1",
    "del helper",
])
def test_demo_work_is_dropped_and_reported(statement):
    prelude = ("import torch\nclass MultiHeadAttention(torch.nn.Module):\n    pass\n"
               "def helper(x):\n    return x\nmha = torch.nn.Linear(2, 2)\nvalues = [0]\n")
    loaded = load_text(prelude + statement)
    assert statement.split("\n")[0] not in codes(loaded)
    assert loaded.problems == [{"code": "dropped", "detail": "", "places": [["cell 1", 8]]}]


def test_calls_into_denied_namespaces_are_work_however_imported():
    loaded = load_text("from torch.utils.data import DataLoader\nimport torch.hub as hub\n"
                       "loader = DataLoader([1, 2])\nmodel = hub.load('x', 'y')\n")
    assert "loader =" not in codes(loaded) and "model =" not in codes(loaded)
    assert loaded.problems[0]["places"] == [["cell 1", 3], ["cell 1", 4]]


def test_an_old_caller_s_grade_ids_are_no_source_notebook(tmp_path):
    path = notebook(tmp_path / "a.ipynb", ["def f():\n    return 1"])
    assert "def f" in codes(loading.load(path, ("imports", "check_x")))


def test_a_name_defined_by_a_dropped_statement_drops_its_users_too():
    loaded = load_text("import torch\nmodel = build()\nweights = model.state_dict()\nN = 3\nM = N * 2")
    assert "M = N * 2" in codes(loaded) and "model" not in codes(loaded)
    assert loaded.problems[0]["places"] == [["cell 1", 2], ["cell 1", 3]]


def test_a_class_attribute_and_a_method_patched_in_later_are_definitions():
    loaded = load_text("class A:\n    def forward(self):\n        raise NotImplementedError()\n"
                       "def forward(self):\n    return 1\nA.forward = forward\nA.size = 3")
    assert "A.forward = forward" in codes(loaded) and "A.size = 3" in codes(loaded)
    assert not loaded.problems and "A" not in loaded.stubs


def test_a_missing_library_is_one_problem_naming_it():
    loaded = load_text("import torch\nimport einops\nfrom einops import rearrange, repeat\n"
                       "from einops.layers.torch import Rearrange\nSPLIT = Rearrange('b t (h d) -> b h t d')\n"
                       "def f(x):\n    return rearrange(x, 'b t d -> b d t')\n")
    assert problem_codes(loaded) == ["unavailable_module"]
    [problem] = loaded.problems
    assert problem["detail"] == "einops"
    text = messages.load_problem(problem)
    assert "`einops`" in text["en"] and "cell 1, lines 2, 3, 4" in text["en"]
    assert "torch" in text["en"] and "numpy" in text["en"] and "sel 1, baris 2, 3, 4" in text["id"]
    assert "import einops" not in codes(loaded) and "def f" in codes(loaded)
    assert loaded.unavailable["rearrange"] == "einops" and loaded.unavailable["Rearrange"] == "einops"
    assert not any("SPLIT" in c["code"] for c in loaded.chunks)  # needs einops: no second problem


def test_the_kit_s_own_packages_are_not_available_to_a_submission():
    loaded = load_text("from solutions.attention import MultiHeadAttention\nimport numpy, math, torch")
    assert problem_codes(loaded) == ["unavailable_module"] and loaded.problems[0]["detail"] == "solutions"


def test_a_guarded_missing_import_is_no_problem():
    loaded = load_text("try:\n    from einops import rearrange\nexcept ImportError:\n    rearrange = None\n"
                       "try:\n    import tqdm_not_here\nexcept ModuleNotFoundError:\n    pass\n")
    assert not loaded.problems
    assert loaded.unavailable == {"tqdm_not_here": "tqdm_not_here"}  # a later NameError names it


def test_line_numbers_are_kept_for_tracebacks(tmp_path):
    path = notebook(tmp_path / "a.ipynb", ["x = 1\n\n\ndef f():\n    return 1"])
    chunk = [c for c in loading.load(path).chunks if "def f" in c["code"]][0]
    assert chunk["code"].splitlines()[3] == "def f():" and chunk["origin"] == "cell 1"


def test_syntax_error_cell_is_reported_and_others_load(tmp_path):
    path = notebook(tmp_path / "a.ipynb", ["def ok():\n    return 1", "def broken(:\n    pass", "def ok2():\n    return 2"])
    loaded = loading.load(path)
    assert "def ok()" in codes(loaded) and "def ok2()" in codes(loaded)
    assert problem_codes(loaded) == ["syntax_error"]
    assert loaded.problems[0]["places"] == [["cell 2", 1]]
    assert "sel 2, baris 1" in messages.load_problem(loaded.problems[0])["id"]


# -- stubs ------------------------------------------------------------------------------------
SPLIT_HEADS_STUB = '''\
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads

    def _split_heads(self, x):
        """optional helper"""
        raise NotImplementedError()

    def forward(self, q, k, v, mask=None):
        b, t, d = q.shape
        return q.view(b, t, self.h, d // self.h).transpose(1, 2), None
'''


def test_an_untouched_optional_helper_stub_does_not_make_its_class_a_stub():
    loaded = load_text("import torch.nn as nn\n" + SPLIT_HEADS_STUB, "cell 5")
    assert loaded.stubs == set()
    assert loaded.stub_sites == {"cell 5:9": "MultiHeadAttention._split_heads"}


@pytest.mark.parametrize("method", ["__init__", "forward"])
def test_an_entry_point_stub_makes_its_class_a_stub(method):
    lines = SPLIT_HEADS_STUB.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(f"    def {method}("))
    lines.insert(at + 1, "        raise NotImplementedError()")
    loaded = load_text("import torch.nn as nn\n" + "\n".join(lines))
    assert loaded.stubs == {"MultiHeadAttention"}


def test_a_function_stub_is_a_stub_until_redefined():
    loaded = load_text("def f(x):\n    raise NotImplementedError()\n")
    assert loaded.stubs == {"f"}
    statements.add_definitions("def f(x):\n    return x\n", "cell 2", loaded)
    assert loaded.stubs == set()


@pytest.mark.parametrize("body, stub", [
    ("    raise NotImplementedError()\n", True),  # the released stub
    ('    """doc"""\n    y = x * 2  # work begun, the stub line left below it\n'
     "    raise NotImplementedError()\n", True),  # every call still raises
    ("    if x is None:\n        return 0\n    if isinstance(x, int):\n        return x\n"
     '    raise NotImplementedError(f"unsupported {type(x)}")\n', False),  # finished: a fallback
    ("    def inner():\n        return 1\n    raise NotImplementedError()\n", True),  # inner return
])
def test_a_function_is_a_stub_only_if_every_call_reaches_its_raise(body, stub):
    loaded = load_text("def f(x):\n" + body)
    assert loaded.stubs == ({"f"} if stub else set())
    assert bool(loaded.stub_sites) == stub


# -- course cells: restored from the source notebook ----------------------------------------------
def source_cells(assignment):
    return nbformat.read(SOURCE[assignment], as_version=4)


def released(assignment, answers=True):
    return released_notebook(assignment, answers)


def by_id(nb, grade_id):
    return cell_by_id(nb, grade_id)


@pytest.mark.parametrize("assignment", list(SOURCE))
def test_a_clean_notebook_has_no_loading_problem_and_sanity_checks_never_load(assignment):
    loaded = loading.load_notebook(released(assignment), source=SOURCE[assignment])
    assert loaded.problems == []
    code = codes(loaded)
    assert "assert" not in code and "print(" not in code and "manual_seed" not in code
    assert "parts = " not in code  # the encoder check cell's dict of `block.attn` (a NameError)
    assert "grade_target" not in code
    assert "import torch" in code


def test_the_source_notebook_s_classification_of_its_cells():
    kinds = {c.grade_id: c.kind for c in loading.course_notebook(SOURCE["encoder"]).cells}
    assert kinds["imports"] == kinds["given_attention"] == "given"
    assert kinds["check_EncoderBlock"] == kinds["check_EncoderBlock_properties"] == "check"
    assert kinds["solution_FeedForward"] == "solution" and kinds["test_EncoderBlock"] == "test"


def test_an_edited_read_only_cell_is_restored_and_reported():
    nb = released("encoder")
    given = by_id(nb, "given_attention")
    given.source = given.source.replace("return self.wo(z), weights", "return z, weights") + \
        "\n\n\ndef my_helper():\n    return 1\n"
    check = by_id(nb, "check_FeedForward")
    check.source = "pass  # no more checks"
    loaded = loading.load_notebook(nb, source=SOURCE["encoder"])
    assert "return self.wo(z), weights" in codes(loaded) and "my_helper" not in codes(loaded)
    changed = [p for p in loaded.problems if p["code"] == "changed_cell"]
    assert [(p["detail"], p["kind"]) for p in changed] == [("given_attention", "given"),
                                                           ("check_FeedForward", "check")]
    assert changed[0]["names"] == ["my_helper"]
    given_text, check_text = (messages.load_problem(p) for p in changed)
    assert "Perubahan tidak sah" in given_text["id"] and "perusakan" not in given_text["id"]
    assert "`my_helper`" in given_text["id"] and "`given_attention`" in given_text["id"]
    assert "tidak mengurangi nilai" in check_text["id"] and "costs no points" in check_text["en"]


def test_deleted_cells_are_restored_where_they_were_and_reported():
    nb = released("encoder")
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id")
                not in ("imports", "test_FeedForward", "solution_positional_encoding")]
    loaded = loading.load_notebook(nb, source=SOURCE["encoder"])
    deleted = {p["detail"]: p["kind"] for p in loaded.problems if p["code"] == "deleted_cell"}
    assert deleted == {"imports": "given", "test_FeedForward": "test",
                       "solution_positional_encoding": "solution"}
    assert loaded.chunks[0]["code"].strip() == "import math" and loaded.chunks[0]["origin"] == "cell imports"
    assert "def positional_encoding" not in codes(loaded)  # an answer is never restored
    texts = {p["detail"]: messages.load_problem(p) for p in loaded.problems}
    assert "nilai tidak berkurang" in texts["imports"]["id"] or "tidak mengurangi" in texts["imports"]["id"]
    assert "costs no points" in texts["test_FeedForward"]["en"]
    assert "terhapus" in texts["solution_positional_encoding"]["id"]


def test_a_copied_nbgrader_cell_counts_once_the_last_copy_is_the_course_s():
    nb = released("attention")
    check = by_id(nb, "check_causal_mask")
    nb.cells.insert(1, nbformat.from_dict(json.loads(json.dumps(check))))
    loaded = loading.load_notebook(nb, source=SOURCE["attention"])
    assert problem_codes(loaded) == ["duplicate_cell"]
    assert "print(" not in codes(loaded)  # the earlier copy is the same text: a course cell


def test_a_notebook_without_metadata_is_matched_by_text():
    nb = released("encoder")
    for cell in nb.cells:
        cell.metadata = {}
    loaded = loading.load_notebook(nb, source=SOURCE["encoder"])
    assert loaded.problems == [] and "parts = " not in codes(loaded)
    assert "class MultiHeadAttention" in codes(loaded)


def test_unknown_grade_ids_make_plain_cells_as_in_nbgrader():
    nb = released("attention")
    nb.cells.append(nbformat.v4.new_code_cell("def extra():\n    return 1\nextra()", metadata={
        "nbgrader": {"grade": False, "solution": False, "locked": True, "grade_id": "mine"}}))
    loaded = loading.load_notebook(nb, source=SOURCE["attention"])
    assert "def extra" in codes(loaded)
    assert problem_codes(loaded) == ["dropped"]


def test_kernel_history_recognises_course_cells_by_their_text():
    nb = source_cells("encoder")
    history = [c.source for c in nb.cells if c.cell_type == "code"] + ["x = torch.randn(2)\nprint(x)"]
    loaded = loading.load_history(history, SOURCE["encoder"])
    assert [p["code"] for p in loaded.problems] == ["dropped"]
    assert loaded.problems[0]["places"] == [[f"In [{len(history)}]", 2]]
    assert "parts = " not in codes(loaded) and "grade_target" not in codes(loaded)


def test_nbgrader_test_cells_never_load(tmp_path):
    path = notebook(tmp_path / "a.ipynb", [
        ("def answer():\n    return 42", {"solution": True, "grade": False, "grade_id": "s1"}),
        ("def answer():\n    return 0\nassert answer() == 42", {"solution": False, "grade": True, "grade_id": "t1", "points": 1}),
        "from autograder.notebook import grade_target",
    ])
    loaded = loading.load(path)
    assert "return 42" in codes(loaded) and "return 0" not in codes(loaded)
    assert "autograder" not in codes(loaded)
    assert set(loaded.nbgrader_cells) == {"s1", "t1"}


def test_broken_notebooks_are_clear_errors(tmp_path):
    bad_json = tmp_path / "bad.ipynb"
    bad_json.write_text('{"cells": [')
    loaded = loading.load(bad_json)
    assert loaded.fatal and loaded.problems[0]["code"] == "bad_notebook"
    empty = notebook(tmp_path / "empty.ipynb", ["# md only"])
    assert [p["code"] for p in loading.load(empty).problems] == ["no_code"]


def test_nbformat_v3_is_converted(tmp_path):
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [
        {"cell_type": "code", "input": "def old():\n    return 3", "language": "python",
         "outputs": [], "metadata": {}}]}]}
    path = tmp_path / "v3.ipynb"
    path.write_text(json.dumps(v3))
    assert "def old" in codes(loading.load(path))


def test_non_utf8_source_is_reported(tmp_path):
    path = tmp_path / "latin.py"
    path.write_bytes("# caf\xe9\ndef f():\n    return 1\n".encode("latin-1"))
    loaded = loading.load(path)
    assert "def f" in codes(loaded) and loaded.problems[0]["code"] == "not_utf8"


def test_discover_layouts(tmp_path):
    course = tmp_path / "course"
    (course / "submitted" / "ani" / "attention").mkdir(parents=True)
    (course / "submitted" / "ani" / "attention" / "attention.ipynb").write_text("{}")
    (course / "submitted" / "ani" / "attention" / "other.ipynb").write_text("{}")
    (course / "submitted" / "bayu" / "encoder").mkdir(parents=True)
    found = loading.discover([course], "attention", "attention.ipynb")
    assert [(s.student, s.path and s.path.name, s.problem) for s in found] == [
        ("ani", "attention.ipynb", None), ("bayu", None, "no_notebook")]
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "citra.py").write_text("x = 1")
    (loose / "dewi.ipynb").write_text("{}")
    assert [s.student for s in loading.discover([loose], "attention")] == ["citra", "dewi"]
    assert loading.discover([loose / "citra.py"], "attention")[0].student == "citra"
    assert loading.discover([tmp_path / "nope.ipynb"], "attention")[0].problem == "not_found"


def test_checksum_is_nbgrader_s(tmp_path):
    from nbgrader.utils import compute_checksum

    notebooks = sorted(ROOT.glob("assignments/source/*/*.ipynb"))
    cells = [cell for path in notebooks for cell in nbformat.read(path, as_version=4).cells
             if cell.metadata.get("nbgrader", {}).get("grade_id")]
    assert len(cells) > 20
    variants = [{"grade": True, "solution": True, "points": 2}, {"locked": True}, {"grade": False}]
    for cell in cells + [nbformat.from_dict({**c, "metadata": {"nbgrader": {**c.metadata.nbgrader, **v}}})
                         for c in cells[:3] for v in variants]:
        assert notebook_cells.nbgrader_checksum(cell) == compute_checksum(cell)


def test_a_statement_too_deep_to_rewrite_is_the_student_s_problem_not_a_crash():
    """Two statements on one line are re-written with ast.unparse, which recurses."""
    source = "import math\nX = " + " + ".join(["1"] * 600) + "; Y = 2\n"
    loaded = load_text(source)
    assert [p["code"] for p in loaded.problems] == ["syntax_error"]
    assert loaded.problems[0]["places"] == [["cell 1", 2]] and "RecursionError" in loaded.problems[0]["detail"]
    assert "import math" in loaded.chunks[0]["code"]  # the rest still loads


# -- messages about the student's exceptions ------------------------------------------------------
def test_student_errors_are_plain_localized_text():
    error = {"type": "RuntimeError", "message": "shape '[3, 4, 4, 8]' is invalid for input of size 288",
             "where": ["cell 4, line 18, in forward", "cell 4, line 9, in <module>"]}
    shown = messages.student_error(error)
    assert "sel 4, baris 18, di `forward`; sel 4, baris 9" in shown["id"]
    assert "cell 4, line 18, in `forward`; cell 4, line 9)" in shown["en"]
    assert "<module>" not in shown["en"] and "&lt;" not in shown["en"] and "[3, 4, 4, 8]" in shown["en"]
    # at the hidden sizes: a built-in exception's name and the places the cells' text fixes
    # (forward is written in cell 4), never the message
    loaded = load_text("def forward(self, x):\n    return x\n", "cell 4")
    hidden = messages.student_error(error, hidden=True, loaded=loaded)
    assert "RuntimeError" in hidden["en"] and "sel 4, baris 18" in hidden["id"], hidden["id"]
    assert not re.search(r"\b(3|8|288)\b", hidden["en"]) and "invalid" not in hidden["en"], hidden["en"]
    spelled = messages.student_error({**error, "type": "Size_twenty_four", "where": [
        "cell 4, line 2, in raised_at_twenty_four", "cell 4, line 18, in forward"]}, hidden=True, loaded=loaded)
    assert "twenty" not in spelled["en"] and "exception" in spelled["en"] and "line 18" in spelled["en"]


def test_a_call_into_an_unfinished_helper_names_it():
    loaded = load_text("import torch.nn as nn\n" + SPLIT_HEADS_STUB, "cell 5")
    error = {"type": "NotImplementedError", "message": "",
             "where": ["cell 5, line 13, in forward", "cell 5, line 9, in _split_heads"]}
    shown = messages.student_error(error, loaded=loaded)
    assert "`MultiHeadAttention._split_heads`" in shown["id"] and "stub" in shown["en"]
    assert "sel 5, baris 9" in shown["id"]


def test_a_name_from_a_missing_module_is_named_with_its_module():
    loaded = load_text("from einops import rearrange\n")
    error = {"type": "NameError", "message": "name 'rearrange' is not defined",
             "where": ["cell 1, line 7, in forward"]}
    shown = messages.student_error(error, loaded=loaded)
    assert "`rearrange`" in shown["en"] and "`einops`" in shown["en"] and "not available" in shown["en"]


def test_every_kept_chunk_compiles_for_every_source_notebook():
    for path in SOURCE.values():
        loaded = loading.load_notebook(nbformat.read(path, as_version=4), source=path)
        for chunk in loaded.chunks:
            ast.parse(chunk["code"])


def test_the_corpus_einops_mutant_has_exactly_one_loading_problem():
    loaded = loading.load(ROOT / "tests" / "corpus" / "attention" / "mutants" / "einops_import.py")
    assert [(p["code"], p["detail"]) for p in loaded.problems] == [("unavailable_module", "einops")]


def test_the_corpus_style_files_keep_everything():
    for path in sorted((ROOT / "tests" / "corpus").glob("*/correct/style_*.py")):
        loaded = loading.load(path)
        assert loaded.problems == [], (path.name, sentences(loaded))


def test_the_kit_keeps_jsonschemas_costly_optional_formats_out():
    """autograder/__init__.py: nbformat's jsonschema would compile rfc3987_syntax's grammars
    (~1 s of CPU), import isoduration (arrow, dateutil: ~40 ms) and the other format checkers
    (rfc3986_validator alone ~50 ms) for string formats no notebook schema uses; a notebook
    still validates."""
    import subprocess
    import sys

    code = ("import sys, autograder, nbformat; nbformat.validate(nbformat.v4.new_notebook()); "
            "print(sorted(n for n in ('rfc3987_syntax', 'isoduration', 'arrow', 'lark', 'rfc3986_validator',"
            " 'rfc3339_validator', 'webcolors', 'uri_template') if sys.modules.get(n)))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["[]"]


def test_notebooks_are_read_as_nbformat_reads_them_without_compiling_its_schema():
    """``read_notebook`` is ``nbformat.reads(text, as_version=4)`` less the validation, which
    only logs and, the first time, compiles the schema (~80 ms of every grading command)."""
    import subprocess
    import sys
    import textwrap

    root = Path(__file__).parent.parent
    notebooks = sorted((root / "assignments" / "source").glob("*/*.ipynb"))
    notebooks += sorted((root / "examples" / "submissions").glob("*/*/*.ipynb"))
    for path in notebooks:
        text = path.read_text(encoding="utf-8")
        try:
            expected = nbformat.reads(text, as_version=4)
        except nbformat.reader.NotJSONError:  # an example of a broken notebook
            with pytest.raises(nbformat.reader.NotJSONError):
                loading.read_notebook(text)
            continue
        assert loading.read_notebook(text) == expected, path
    v3 = nbformat.v3.writes_json(nbformat.v3.new_notebook(worksheets=[nbformat.v3.new_worksheet(
        cells=[nbformat.v3.new_code_cell(input="x = 1")])]))
    upgraded, expected = loading.read_notebook(v3), nbformat.reads(v3, as_version=4)
    for cell in upgraded.cells + expected.cells:  # the upgrade gives each cell a random id
        assert len(cell.pop("id")) == 8
    assert upgraded == expected
    probe = textwrap.dedent(f"""
        import nbformat.validator
        from autograder import loading, plan
        grading = plan.load("encoder")
        loaded = loading.load({str(root / "examples" / "submissions" / "andi" / "encoder" / "encoder.ipynb")!r},
                              grading.source_notebook)
        assert loaded.chunks and not loaded.fatal
        print(len(nbformat.validator.validators))
    """)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=root, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["0"]
