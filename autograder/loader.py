"""Find submissions and take from them only the code that defines things.

From a notebook (or a ``.py`` file) only imports, function and class
definitions and simple assignments are kept: demo, training and test cells
never run. IPython magics and shell escapes are dropped. A cell with a syntax
error is reported and the other cells still load. nbgrader's test cells are
ignored: they are the course's code, not the student's.
"""

import ast
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

SOURCE_SUFFIXES = (".ipynb", ".py")
# Calls allowed on the right of a top-level assignment: conversions, never work.
SIMPLE_CALLS = {"float", "int", "bool", "str", "tuple", "frozenset", "set", "list", "dict"}
MAX_SOURCE_BYTES = 5 * 1024 * 1024


@dataclass
class Submission:
    student: str
    assignment: str
    path: Path | None  # None when nothing gradable was found
    problem: str | None = None  # why it could not be found


@dataclass
class LoadedCode:
    chunks: list = field(default_factory=list)  # {"code", "origin"} in execution order
    problems: list = field(default_factory=list)  # {"code": ..., "detail": ...}, for the report
    fatal: bool = False  # nothing could be read at all
    nbgrader_cells: dict = field(default_factory=dict)  # grade_id -> cell, for tamper checks
    stubs: set = field(default_factory=set)  # names whose last definition is still an unfilled stub


def discover(paths, assignment, notebook_name=None):
    """Every student found under the given paths, in a stable order."""
    found = []
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            found.append(Submission(path.stem, assignment, path))
        elif path.is_dir():
            found.extend(_discover_folder(path, assignment, notebook_name))
        else:
            found.append(Submission(path.stem or str(path), assignment, None, "not_found"))
    return found


def _discover_folder(folder, assignment, notebook_name):
    if (folder / "submitted").is_dir():  # an nbgrader course root
        folder = folder / "submitted"
    if (folder / assignment).is_dir() and _pick_sources(folder / assignment, notebook_name):
        # one student's folder (<student>/<assignment>/...), not a folder of students
        return [Submission(folder.name, assignment, _pick_sources(folder / assignment, notebook_name))]
    students = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    files = sorted(p for p in folder.iterdir()
                   if p.is_file() and p.suffix in SOURCE_SUFFIXES and not p.name.startswith("."))
    single = notebook_name and (folder / notebook_name).is_file() or len(files) == 1
    if single and not students:  # one student's repository or assignment folder
        return [Submission(folder.name, assignment, _pick_sources(folder, notebook_name))]
    found = [Submission(p.stem, assignment, p) for p in files]
    for student in students:
        assignment_dir = student / assignment
        source = _pick_sources(assignment_dir, notebook_name) if assignment_dir.is_dir() else None
        source = source or _pick_sources(student, notebook_name)
        found.append(Submission(student.name, assignment, source, None if source else "no_notebook"))
    return found


def _pick_sources(folder, notebook_name):
    if notebook_name and (folder / notebook_name).is_file():
        return folder / notebook_name
    notebooks = sorted(p for p in folder.glob("*.ipynb") if not p.name.startswith("."))
    if notebooks:
        return notebooks[0]
    scripts = sorted(p for p in folder.glob("*.py") if not p.name.startswith("."))
    return scripts[0] if scripts else None


def load(path, expected_cells=()):
    """Read a notebook or a Python file into definition chunks. ``expected_cells`` are the
    grade ids of the assignment's nbgrader cells, to report deleted ones."""
    loaded = LoadedCode()
    try:
        raw = Path(path).read_bytes()
    except OSError as error:
        loaded.fatal = True
        loaded.problems.append({"code": "unreadable", "detail": str(error)})
        return loaded
    if len(raw) > MAX_SOURCE_BYTES and Path(path).suffix != ".ipynb":
        loaded.fatal = True
        loaded.problems.append({"code": "too_large", "detail": f"{len(raw)} bytes"})
        return loaded
    if Path(path).suffix == ".ipynb":
        notebook = _parse_notebook(raw, loaded)
        return loaded if notebook is None else load_notebook(notebook, loaded, expected_cells)
    add_definitions(_decode(raw, loaded, "file"), "file", loaded)
    return loaded


def _decode(raw, loaded, origin):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        loaded.problems.append({"code": "not_utf8", "detail": f"{origin}: {error.reason} at byte {error.start}"})
        return raw.decode("utf-8", errors="replace")


def _parse_notebook(raw, loaded):
    text = _decode(raw, loaded, "notebook")
    try:
        json.loads(text)
        return nbformat.reads(text, as_version=4)
    except Exception as error:  # nbformat raises several kinds for a broken file
        loaded.fatal = True
        loaded.problems.append({"code": "bad_notebook", "detail": str(error)[:300]})
        return None


def load_notebook(notebook, loaded=None, expected_cells=()):
    """Definition chunks of a parsed notebook (also used inside nbgrader's autograde)."""
    loaded = loaded or LoadedCode()
    _check_nbgrader_cells(notebook, loaded, expected_cells)
    code_number = 0
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        code_number += 1
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution"):
            continue  # an nbgrader test cell: the course's code, never the student's
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        add_definitions(source, f"cell {code_number}", loaded)
    if code_number == 0:
        loaded.problems.append({"code": "no_code", "detail": ""})
    return loaded


def _check_nbgrader_cells(notebook, loaded, expected_cells):
    """Report duplicated, deleted and changed nbgrader cells. Grading never runs test-cell
    code, so this is for the instructor's eyes; nbgrader's own checksums decide "changed"."""
    seen = []
    for cell in notebook.get("cells", []):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        grade_id = meta.get("grade_id")
        if not grade_id:
            continue
        if grade_id in loaded.nbgrader_cells:
            loaded.problems.append({"code": "duplicate_cell", "detail": grade_id})
        loaded.nbgrader_cells[grade_id] = cell
        seen.append(grade_id)
        protected = (meta.get("locked") or meta.get("grade")) and not meta.get("solution")
        if protected and meta.get("checksum"):
            try:
                changed = nbgrader_checksum(cell) != meta["checksum"]
            except Exception:  # metadata too broken to checksum is a change too
                changed = True
            if changed:
                loaded.problems.append({"code": "changed_cell", "detail": grade_id})
    missing = [grade_id for grade_id in expected_cells if grade_id not in seen]
    if missing and seen:  # a notebook without any nbgrader cell is a plain notebook
        loaded.problems.append({"code": "deleted_cell", "detail": ", ".join(missing)})


def nbgrader_checksum(cell):
    """nbgrader's cell checksum (``nbgrader.utils.compute_checksum``, same algorithm; a test
    keeps them equal). Importing nbgrader starts Jupyter server code: ~1.7 s per grader run."""
    meta = cell["metadata"]["nbgrader"]
    source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
    grade, solution = meta.get("grade", False), meta.get("solution", False)
    locked = False if solution else True if grade else meta.get("locked", False)
    digest = hashlib.md5()
    for part in (source, cell["cell_type"], str(grade), str(solution), str(locked), meta["grade_id"]):
        digest.update(part.encode("utf-8"))
    if meta.get("grade"):
        digest.update(str(float(meta["points"])).encode("utf-8"))
    return digest.hexdigest()


def _strip_ipython(source):
    """Blank out magics and shell escapes, keeping line numbers; a cell magic drops the cell."""
    lines = source.splitlines()
    if lines and lines[0].lstrip().startswith("%%"):
        return ""
    kept = []
    for line in lines:
        stripped = line.lstrip()
        if stripped.startswith(("%", "!")) or (stripped.endswith("?") and not stripped.startswith("#")):
            kept.append("")
        else:
            kept.append(line)
    return "\n".join(kept)


def add_definitions(source, origin, loaded):
    """Append the definition statements of one cell (or file) to ``loaded``."""
    if not isinstance(source, str):
        loaded.problems.append({"code": "bad_cell", "detail": origin})
        return
    source = _strip_ipython(source)
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        loaded.problems.append({"code": "syntax_error",
                                "detail": f"{origin}, line {error.lineno}: {error.msg}"})
        return
    except (MemoryError, RecursionError, ValueError) as error:  # absurdly nested or null bytes
        loaded.problems.append({"code": "syntax_error", "detail": f"{origin}: {type(error).__name__}"})
        return
    lines = source.splitlines()
    body = tree.body
    for index, node in enumerate(body):
        if not _is_definition(node):
            continue
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        end = node.end_lineno
        alone = (index == 0 or body[index - 1].end_lineno < start) and (
            index == len(body) - 1 or body[index + 1].lineno > end)
        try:
            segment = "\n".join(lines[start - 1:end]) if alone else ast.unparse(node)
        except (RecursionError, MemoryError, ValueError) as error:  # e.g. a 600-term expression
            loaded.problems.append({"code": "syntax_error",
                                    "detail": f"{origin}, line {start}: {type(error).__name__}"})
            continue
        loaded.chunks.append({"code": "\n" * (start - 1) + segment, "origin": origin})
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            (loaded.stubs.add if _is_stub(node) else loaded.stubs.discard)(node.name)


def _is_definition(node):
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)):
        return not _imports_grader(node)
    if isinstance(node, ast.Assign):
        return all(map(_binds_names_only, node.targets)) and _is_simple(node.value)
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and node.value is not None and _is_simple(node.value)
    return False


def _binds_names_only(target):
    """``x = ...`` or ``a, b = ...``; not ``x[0] = ...`` or ``x.y = ...`` (they need ``x``)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return all(map(_binds_names_only, target.elts))
    if isinstance(target, ast.Starred):
        return _binds_names_only(target.value)
    return isinstance(target, ast.Name)


def _is_stub(node):
    """A function (or a class with a method) whose body still raises NotImplementedError at its
    top level: the released assignment stub, decided here from the source, not by running it."""
    if isinstance(node, ast.ClassDef):
        return any(_is_stub(item) for item in node.body if isinstance(item, ast.FunctionDef))
    for statement in node.body:
        if isinstance(statement, ast.Raise) and statement.exc is not None:
            raised = statement.exc.func if isinstance(statement.exc, ast.Call) else statement.exc
            if isinstance(raised, ast.Name) and raised.id == "NotImplementedError":
                return True
    return False


def _imports_grader(node):
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] == "autograder" for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] == "autograder"
    return False


def _is_simple(expr):
    for node in ast.walk(expr):
        if isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id in SIMPLE_CALLS):
                return False
        elif isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                               ast.GeneratorExp, ast.Await, ast.Yield, ast.YieldFrom,
                               ast.NamedExpr, ast.Subscript)):
            return False
    return True
