"""Which cells of a notebook are the student's and which the course's (as ``nbgrader
autograde`` treats them, with the assignment's source notebook):

* solution cells and cells the student added are the student's code;
* read-only (locked) cells and hidden test cells are the course's: they are matched with the
  source notebook by nbgrader ``grade_id`` and taken from there, so an edited or deleted
  read-only cell is restored (and reported). A locked cell that defines things (the imports,
  given code) loads; a sanity-check cell (``check_*``, or asserts and prints without a
  definition) and a hidden test cell never load. A cell without nbgrader metadata whose text
  is exactly a course cell is treated as that cell.

What each cell contributes is decided statement by statement in ``statements``.
"""

import ast
import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

import nbformat
import nbformat.reader

from autograder.loading.code import LoadedCode, parse_python
from autograder.loading.statements import (_is_docstring, _strip_ipython, _top_level_names,
                                           add_definitions)

HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


def read_notebook(text):
    """A notebook (format 4) from its JSON text, as ``nbformat.reads(text, as_version=4)``
    reads it, less the schema validation: nbformat only logs what that finds, and the kit
    checks each cell's metadata and source where it reads them. The validation's first use
    compiles the whole schema (~80 ms of every grading command's start)."""
    return nbformat.convert(nbformat.reader.reads(text), 4)


def read_notebook_file(path):
    return read_notebook(Path(path).read_text(encoding="utf-8"))


# -- the source notebook ----------------------------------------------------------------------------
@dataclass(frozen=True)
class CourseCell:
    """One nbgrader cell of the assignment's source notebook."""

    grade_id: str
    index: int  # among the source notebook's nbgrader cells
    role: str  # "solution", "test" (a hidden test / grade cell) or "locked"
    kind: str  # "solution", "test", "check" (a sanity check, never loads) or "given" (loads)
    code: str  # the source notebook's text (a test cell's hidden part included)
    cell_type: str
    points: float | None = None  # of a grade cell

    @property
    def released(self):
        """The text the released notebook holds: the hidden tests cut out."""
        return _strip_hidden_tests(self.code)


@dataclass(frozen=True)
class CourseNotebook:
    cells: tuple  # CourseCell, in notebook order

    @functools.cached_property
    def by_id(self):
        return {cell.grade_id: cell for cell in self.cells}

    @functools.cached_property
    def by_text(self):
        """Read-only and test cells by their normalised text (released and full)."""
        found = {}
        for cell in self.cells:
            if cell.role != "solution":
                for text in (cell.code, cell.released):
                    if _normalise(text):
                        found.setdefault(_normalise(text), cell)
        return found


def course_notebook(source):
    """The parsed source notebook (``source`` a path, a CourseNotebook or None)."""
    if source is None or isinstance(source, CourseNotebook):
        return source
    if not isinstance(source, (str, Path)):  # e.g. the grade ids older callers passed
        return None
    path = Path(source)
    try:
        stat = path.stat()
    except OSError:
        return None
    return _read_course_notebook(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=16)
def _read_course_notebook(path, _mtime, _size):
    notebook = read_notebook_file(path)
    cells = []
    for cell in notebook.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        grade_id = meta.get("grade_id")
        if not grade_id:
            continue
        code = _text(cell.get("source", ""))
        if meta.get("solution"):
            role = kind = "solution"
        elif meta.get("grade"):
            role = kind = "test"
        else:
            role = "locked"
            kind = "check" if _is_sanity_check(grade_id, code) else "given"
        if cell.get("cell_type") != "code" and role != "solution":
            kind = "text"  # a read-only Markdown cell: never code
        cells.append(CourseCell(grade_id, len(cells), role, kind, code, cell.get("cell_type", "code"),
                                meta.get("points")))
    return CourseNotebook(tuple(cells))


def _is_sanity_check(grade_id, code):
    """A read-only cell that checks rather than defines: named ``check...``, or it has top-level
    work (asserts, prints, calls) and defines no function or class."""
    if grade_id.lower().startswith("check"):
        return True
    try:
        body = parse_python(_strip_ipython(code)).body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return True
    defines = any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for n in body)
    definitions_only = all(isinstance(n, (ast.Import, ast.ImportFrom, ast.FunctionDef,
                                          ast.AsyncFunctionDef, ast.ClassDef, ast.Assign,
                                          ast.AnnAssign, ast.Pass))
                           or _is_docstring(n) for n in body)
    return not defines and not definitions_only


def _strip_hidden_tests(code):
    kept, hidden = [], False
    for line in code.split("\n"):
        if line.strip() == HIDDEN_BEGIN:
            hidden = True
        elif line.strip() == HIDDEN_END:
            hidden = False
        elif not hidden:
            kept.append(line)
    return "\n".join(kept)


def _normalise(code):
    return "\n".join(line.rstrip() for line in code.split("\n") if line.strip())


def _text(source):
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    return source


def _role_of(meta):
    if meta.get("solution"):
        return "solution"
    if meta.get("grade"):
        return "test"
    return "locked" if meta.get("locked") else None


# -- notebooks -------------------------------------------------------------------------------------
def load_notebook(notebook, loaded=None, source=None):
    """Definition chunks of a parsed notebook (also used by the nbgrader plugin)."""
    loaded = loaded or LoadedCode()
    course = course_notebook(source)
    cells = [cell for cell in notebook.get("cells", []) if isinstance(cell, dict)]
    owners = _nbgrader_owners(cells, loaded)
    derived = course is not None and any(
        grade_id in course.by_id for grade_id in owners.values())
    emitted, code_number = set(), 0
    for position, cell in enumerate(cells):
        is_code = cell.get("cell_type") == "code"
        code_number += is_code
        origin = f"cell {code_number}"
        grade_id = owners.get(position)
        course_cell = course.by_id.get(grade_id) if derived and grade_id else None
        if course_cell is not None:
            for earlier in course.cells[:course_cell.index]:  # deleted cells before this one
                if earlier.grade_id not in emitted and earlier.grade_id not in owners.values():
                    _restore_deleted(earlier, loaded)
                    emitted.add(earlier.grade_id)
            emitted.add(grade_id)
            _course_owned_cell(cell, course_cell, origin, loaded)
            continue
        if not is_code:
            continue
        source_text = _text(cell.get("source", ""))
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if course is None and grade_id:  # no source notebook: trust the cell's own flags
            _cell_without_source(cell, meta, source_text, origin, loaded)
            continue
        matched = course.by_text.get(_normalise(source_text)) if (
            course is not None and isinstance(source_text, str)) else None
        if matched is not None:  # a course cell without (or with foreign) nbgrader metadata
            if matched.kind == "given":
                add_definitions(matched.code, origin, loaded, report=False)
            continue
        add_definitions(source_text, origin, loaded)
    if derived:
        for course_cell in course.cells:  # deleted cells after the last one present
            if course_cell.grade_id not in emitted and course_cell.grade_id not in owners.values():
                _restore_deleted(course_cell, loaded)
    if code_number == 0:
        loaded.problems.append({"code": "no_code", "detail": ""})
    return finish(loaded)


def _nbgrader_owners(cells, loaded):
    """{cell position: grade_id} for the cells that hold an nbgrader role. As nbgrader's
    DeduplicateIds, the last cell with a grade_id keeps it; earlier copies are plain cells."""
    owners, seen = {}, set()
    for position in range(len(cells) - 1, -1, -1):
        meta = cells[position].get("metadata", {}).get("nbgrader", {})
        grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
        if not isinstance(grade_id, str) or not grade_id or _role_of(meta) is None:
            continue
        if grade_id in seen:
            loaded.problems.append({"code": "duplicate_cell", "detail": grade_id})
            continue
        seen.add(grade_id)
        owners[position] = grade_id
        loaded.nbgrader_cells[grade_id] = cells[position]
    return owners


def _course_owned_cell(cell, course_cell, origin, loaded):
    """A cell of the submission that carries a grade_id of the source notebook: the source
    decides its role; a read-only cell's text comes from the source."""
    text = _text(cell.get("source", ""))
    if course_cell.role == "solution":
        if cell.get("cell_type") == "code":
            add_definitions(text, origin, loaded)
        return
    unchanged = cell.get("cell_type", "code") == course_cell.cell_type and isinstance(text, str) and (
        _normalise(text) in (_normalise(course_cell.code), _normalise(course_cell.released)))
    if not unchanged:
        problem = {"code": "changed_cell", "detail": course_cell.grade_id, "kind": course_cell.kind}
        if course_cell.kind == "given":
            problem["names"] = sorted(_top_level_names(text) - _top_level_names(course_cell.code))
        loaded.problems.append(problem)
    if course_cell.kind == "given":
        add_definitions(course_cell.code, origin, loaded, report=False)


def _restore_deleted(course_cell, loaded):
    loaded.problems.append({"code": "deleted_cell", "detail": course_cell.grade_id,
                            "kind": course_cell.kind})
    if course_cell.kind == "given":
        add_definitions(course_cell.code, f"cell {course_cell.grade_id}", loaded, report=False)


def _cell_without_source(cell, meta, text, origin, loaded):
    """No source notebook to compare with: the cell's own flags and checksum decide."""
    role = _role_of(meta)
    if role == "solution":
        add_definitions(text, origin, loaded)
        return
    if meta.get("checksum"):
        try:
            changed = nbgrader_checksum(cell) != meta["checksum"]
        except Exception:  # metadata too broken to checksum is a change too
            changed = True
        if changed:
            loaded.problems.append({"code": "changed_cell", "detail": meta["grade_id"],
                                    "kind": "test" if role == "test" else "locked"})
    if role == "locked" and isinstance(text, str) and not _is_sanity_check(meta["grade_id"], text):
        add_definitions(text, origin, loaded, report=False)


def load_history(sources, source=None, loaded=None):
    """Definition chunks of the cells a kernel executed (IPython's ``In``), for the hidden
    cells' entry point: course cells are recognised by their text, as in a notebook."""
    loaded = loaded or LoadedCode()
    course = course_notebook(source)
    for number, text in enumerate(sources, 1):
        if not text:
            continue
        origin = f"In [{number}]"
        matched = course.by_text.get(_normalise(text)) if course is not None else None
        if matched is not None:
            if matched.kind == "given":
                add_definitions(matched.code, origin, loaded, report=False)
            continue
        add_definitions(text, origin, loaded)
    return finish(loaded)


def finish(loaded):
    """Add the loading notes that summarise the whole submission (once)."""
    if loaded.finished:
        return loaded
    loaded.finished = True
    if loaded.missing_modules:
        loaded.problems.append({
            "code": "unavailable_module", "detail": ", ".join(loaded.missing_modules),
            "places": [place for places in loaded.missing_modules.values() for place in places]})
    if loaded.dropped:
        loaded.problems.append({"code": "dropped", "detail": "", "places": list(loaded.dropped)})
    return loaded


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
