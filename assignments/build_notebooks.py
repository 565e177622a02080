"""Build the nbgrader source notebooks from their text form in assignments/notebooks/.

    python assignments/build_notebooks.py          # (re)write source/<name>/<name>.ipynb and cek_mandiri.py
    python assignments/build_notebooks.py --check  # exit 1 if one of them is stale or missing

Rebuild after editing assignments/notebooks/, solutions/ or the checks and points (the points
of each hidden test cell are read from the check registry and course.toml at build time).

Beside each notebook it writes ``cek_mandiri.py``, the students' self-check
(``autograder selfcheck build``), which ``nbgrader generate_assignment`` releases with the
notebook. The notebooks are committed (tests/test_notebooks.py fails when one is stale); the
self-check files are not (assignments/.gitignore): scripts/setup.sh runs this script, and
tests/test_selfcheck.py fails when a built one is stale.

The text files
--------------
``assignments/notebooks/<assignment>.py`` is the notebook in jupytext's percent format: every
cell starts with a ``# %%`` line, prose is a ``# %% [markdown]`` cell written as ``#`` comments.
Comment lines before the first cell (a short preamble) are not part of the notebook. Every code
cell says its nbgrader role in its header:

    # %% nbgrader="read-only" grade_id="check_causal_mask"   locked: imports, given code, checks
    # %% nbgrader="solution" grade_id="solution_causal_mask"  the student writes it
    # %% nbgrader="hidden-test"                               a hidden test (grade_id: test_<target>)
    # %% nbgrader="self-check" grade_id="cek_mandiri"        the self-check, 0 points (see cek_mandiri.py)

A code cell holds code, or only directives, which the build replaces:

    # fill: solutions.attention.causal_mask
        The definition of ``causal_mask`` in solutions/attention.py, with the docstrings of
        assignments/notebooks/docstrings.toml instead of the English ones. In a ``solution``
        cell, the body of each function and method (after its docstring and a leading
        ``super().__init__()``) is wrapped in ``### BEGIN SOLUTION`` / ``### END SOLUTION``,
        which nbgrader turns into ``raise NotImplementedError()`` in the released notebook; in a
        ``read-only`` cell the code is given in full. Several ``# fill:`` lines in one cell give
        several definitions, two blank lines apart. So the text files hold no reference code.
    # grade: causal_mask
        The only line of a ``hidden-test`` cell: the call that grades ``causal_mask``, worth the
        points its checks have in the registry. There is one hidden cell per graded target.

In markdown, ``{{points:causal_mask}}`` is replaced by those points.

Where the earlier blocks come from
----------------------------------
A cell whose header also says ``blocks="given"`` or ``blocks="own"`` (markdown cells too) is
built only when course.toml's ``assignments.<name>.blocks`` has that value, so one text file
holds both versions of the notebook (assignment 4):

    # %% nbgrader="read-only" grade_id="given_code" blocks="given"   the course's blocks, locked
    # %% nbgrader="solution" grade_id="own_blocks" blocks="own"      the student pastes their own

With ``"own"``, the blocks' ``# fill:`` lines in a solution cell become stubs in the released
notebook, and the grader (which takes a read-only cell's code from the source notebook, and a
solution cell's from the submission) grades the model around the student's blocks.

Drafts
------
Only the assignments course.toml lists are built. A text file in assignments/notebooks/ that
course.toml does not list yet is a draft: the build still reads it in full (its ``# fill:``
lines, so that its docstrings in docstrings.toml count as used, and its cells), with 0 points for
each ``# grade:`` target, and stops on the same errors, but writes nothing. ``preview(name)``
returns a draft's notebook, e.g. to run it before its checks exist.
"""

import argparse
import ast
import re
import sys
import tomllib
from pathlib import Path

import jupytext
import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder import config, selfcheck

ROOT = Path(__file__).resolve().parent
REPO = ROOT.parent

TEXTS = ROOT / "notebooks"
DOCSTRINGS = TEXTS / "docstrings.toml"
SOURCE = ROOT / "source"
BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"

ROLES = {  # the nbgrader flags of each role
    "read-only": {"grade": False, "solution": False, "locked": True},
    "solution": {"grade": False, "solution": True, "locked": False},
    "hidden-test": {"grade": True, "solution": False, "locked": True},
    # the student's self-check (cek_mandiri.py): a visible test cell worth 0 points, so that
    # `nbgrader validate` fails while a public check fails
    "self-check": {"grade": True, "solution": False, "locked": True},
}
FILL = re.compile(r"# fill: (?P<module>solutions(?:\.\w+)+)\.(?P<name>\w+)")
GRADE = re.compile(r"# grade: (?P<target>\w+)")
POINTS = re.compile(r"\{\{points:(?P<target>\w+)\}\}")
BLOCKS = config.BLOCKS  # the values of a cell's ``blocks=`` header key


class BuildError(Exception):
    """A text file, the docstrings or the registry do not fit together."""


def target_points(assignment):
    """Points per target (the student's function or class), in declaration order."""
    from autograder import plan as plans

    points = plans.resolve(config.load(), assignment).points_by_target()
    return {t: int(p) if float(p).is_integer() else p for t, p in points.items()}


# -- code from solutions/ -------------------------------------------------------------------------
def _docstring_node(node):
    first = node.body[0]
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return first
    return None


def _is_super_init(statement):
    return (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
            and ast.unparse(statement.value) == "super().__init__()")


def _docstring_lines(text, indent):
    lines = text.strip("\n").split("\n")
    if '"""' in text or "\\" in text or text.rstrip().endswith('"'):
        raise BuildError(f"docstrings.toml: a docstring may not contain a backslash or end in a quote: {lines[0]!r}")
    if len(lines) == 1:
        return [f'{indent}"""{lines[0]}"""']
    return ([f'{indent}"""{lines[0]}'] + [indent + line if line else "" for line in lines[1:]]
            + [f'{indent}"""'])


class Definitions:
    """The functions and classes of solutions/, rewritten for a notebook."""

    def __init__(self):
        with open(DOCSTRINGS, "rb") as handle:
            self.docstrings = tomllib.load(handle)
        self.used = set()

    def code(self, module, name, solution):
        path = REPO.joinpath(*module.split(".")).with_suffix(".py")
        if not path.is_file():
            raise BuildError(f"# fill: {module}.{name}: there is no {path.relative_to(REPO)}")
        source = path.read_text(encoding="utf-8")
        for node in ast.parse(source).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
                return "\n".join(self._definition(node, source.split("\n"), name, solution))
        raise BuildError(f"# fill: {module}.{name}: {path.relative_to(REPO)} defines no {name}")

    def _docstring(self, qualname, node, indent):
        if qualname in self.docstrings:
            self.used.add(qualname)
            return _docstring_lines(self.docstrings[qualname], indent)
        if _docstring_node(node):
            raise BuildError(f"docstrings.toml has no docstring for {qualname} (solutions/ has one)")
        return []

    def _definition(self, node, lines, qualname, solution):
        """The lines of ``node`` with its (and its methods') docstrings replaced and, for a
        solution, each function body in a solution region."""
        first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
        body = list(node.body)
        if body[0].lineno == node.lineno:
            raise BuildError(f"{qualname}: write the body on its own lines")
        indent = " " * body[0].col_offset
        out = lines[first - 1:body[0].lineno - 1]  # the def or class line(s)
        out += self._docstring(qualname, node, indent)
        cursor = body[0].lineno - 1  # index of the first line not yet copied
        if _docstring_node(node):
            cursor = body.pop(0).end_lineno
        if isinstance(node, ast.ClassDef):
            for statement in body:
                start = (statement.decorator_list[0].lineno if getattr(statement, "decorator_list", None)
                         else statement.lineno) - 1
                out += lines[cursor:start]
                if isinstance(statement, ast.FunctionDef):
                    out += self._definition(statement, lines, f"{qualname}.{statement.name}", solution)
                else:
                    out += lines[start:statement.end_lineno]
                cursor = statement.end_lineno
            return out
        if body and _is_super_init(body[0]):
            out += lines[cursor:body[0].end_lineno]
            cursor = body.pop(0).end_lineno
        region = lines[cursor:node.end_lineno]
        while region and not region[0].strip():
            region.pop(0)
        if solution and region:
            region = [indent + BEGIN_SOLUTION, *region, indent + END_SOLUTION]
        return out + region

    def check_all_used(self):
        unused = sorted(set(self.docstrings) - self.used)
        if unused:
            raise BuildError(f"docstrings.toml: no notebook uses {unused}")


# -- cells -------------------------------------------------------------------------------------
def _nbgrader(role, grade_id, points=None):
    meta = {"grade": ROLES[role]["grade"], "grade_id": grade_id, "locked": ROLES[role]["locked"],
            "schema_version": 3, "solution": ROLES[role]["solution"], "task": False}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def hidden_test_source(assignment, target):
    return "\n".join([
        "### BEGIN HIDDEN TESTS",
        "from autograder.notebook import grade_target",
        f'grade_target("{assignment}", "{target}")',
        "### END HIDDEN TESTS",
    ])


def _code_cell(assignment, cell, points, definitions):
    """(the target of a hidden-test cell or None, the notebook cell)."""
    metadata = {key: value for key, value in cell.metadata.items() if key != "lines_to_next_cell"}
    role = metadata.pop("nbgrader", None)
    if role not in ROLES:
        raise BuildError('a code cell needs nbgrader="read-only", "solution" or "hidden-test" '
                         f"in its header, not {role!r}")
    lines = [line for line in cell.source.split("\n") if line.strip()]
    if role == "hidden-test":
        match = GRADE.fullmatch(cell.source.strip())
        if metadata or not match:
            raise BuildError("a hidden-test cell is the one line `# grade: <target>` and has no "
                             "other header keys")
        target = match["target"]
        if target not in points:
            raise BuildError(f"the registry has no checks for {target!r} in {assignment}")
        return target, new_code_cell(hidden_test_source(assignment, target),
                                     metadata=_nbgrader(role, f"test_{target}", points[target]))
    grade_id = metadata.pop("grade_id", None)
    if not isinstance(grade_id, str) or metadata:
        raise BuildError(f'a {role} cell needs grade_id="..." and no other header keys '
                         f"(got {sorted(metadata)})")
    fills = [FILL.fullmatch(line) for line in lines]
    if fills and all(fills):
        source = "\n\n\n".join(definitions.code(m["module"], m["name"], role == "solution")
                               for m in fills)
    elif any(fills) or role == "solution":
        raise BuildError(f"{grade_id}: a {role} cell holds only `# fill:` lines"
                         + ("" if role == "solution" else " or only code"))
    elif any(line.strip() in (BEGIN_SOLUTION, END_SOLUTION) for line in lines):
        raise BuildError(f"{grade_id}: solution regions come from `# fill:` only")
    else:
        source = cell.source.strip("\n")
    try:
        ast.parse(source)
    except SyntaxError as error:
        raise BuildError(f"{grade_id}: {error}") from None
    return None, new_code_cell(source, metadata=_nbgrader(role, grade_id, 0 if role == "self-check" else None))


def _markdown(cell, points):
    if any(key != "lines_to_next_cell" for key in cell.metadata):
        raise BuildError("a markdown cell takes no header keys")

    def replace(match):
        if match["target"] not in points:
            raise BuildError(f"{match[0]}: the registry has no checks for that target")
        return f"{points[match['target']]:g}"

    text = POINTS.sub(replace, cell.source.strip("\n"))
    if "{{points:" in text:
        raise BuildError("malformed {{points:<target>}}")
    return new_markdown_cell(text)


def notebook(assignment, definitions, points=None):
    """The source notebook of ``assignment``; cell ids are stable so that rebuilding gives the
    same file. ``points`` (target -> points) replaces the registry's, for a draft."""
    path = TEXTS / f"{assignment}.py"
    shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    if not path.is_file():
        raise BuildError(f"course.toml lists {assignment!r}, but there is no {shown}")
    text = path.read_text(encoding="utf-8")
    text_cells = jupytext.reads(text, fmt="py:percent").cells
    if (text_cells and text_cells[0].cell_type == "code" and not text_cells[0].metadata
            and all(line.startswith("#") for line in text_cells[0].source.split("\n"))):
        text_cells = text_cells[1:]  # the preamble
    headers = [number for number, line in enumerate(text.split("\n"), 1) if line.startswith("# %%")]
    points = target_points(assignment) if points is None else points
    blocks = _blocks_setting(assignment)
    cells, graded = [], []
    for index, cell in enumerate(text_cells):
        where = (f"{shown}:{headers[index]}" if len(headers) == len(text_cells)
                 else f"{shown}, cell {index + 1}")
        try:
            wanted = cell.metadata.pop("blocks", None)
            if wanted is not None and wanted not in BLOCKS:
                raise BuildError(f"blocks={wanted!r}: a cell's blocks= is one of {', '.join(BLOCKS)}")
            if wanted is not None and wanted != blocks:
                continue  # the other version of the notebook's blocks
            if cell.cell_type == "markdown":
                cells.append(_markdown(cell, points))
            elif cell.cell_type == "code":
                target, built = _code_cell(assignment, cell, points, definitions)
                cells.append(built)
                graded += [target] if target else []
            else:
                raise BuildError(f"{cell.cell_type} cells are not used")
        except BuildError as error:
            raise BuildError(f"{where}: {error}") from None
    if sorted(graded) != sorted(points):
        raise BuildError(f"{shown}: the hidden-test cells grade {graded}, the registry has "
                         f"checks for {list(points)}: one `# grade:` cell per target")
    for index, cell in enumerate(cells):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        cell["id"] = grade_id or f"{assignment}-{index:02d}"
    ids = [cell["id"] for cell in cells]
    if len(ids) != len(set(ids)):
        raise BuildError(f"{shown}: a grade_id is used twice")
    return new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                       "name": "python3"},
        "language_info": {"name": "python"},
    })


def _blocks_setting(assignment):
    """course.toml's ``assignments.<name>.blocks`` ("given" for a draft it does not list)."""
    listed = config.load().assignments
    return listed[assignment].blocks if assignment in listed else "given"


# -- writing --------------------------------------------------------------------------------------
def notebook_path(assignment):
    return SOURCE / assignment / config.load().assignments[assignment].notebook


def drafts():
    """The text files in assignments/notebooks/ that course.toml does not list (yet)."""
    listed = config.load().assignments
    return sorted(path.stem for path in TEXTS.glob("*.py") if path.stem not in listed)


def preview(assignment, definitions=None):
    """The notebook of a draft, with 0 points for each target it grades (it has no checks yet)."""
    text = (TEXTS / f"{assignment}.py").read_text(encoding="utf-8")
    points = {match["target"]: 0 for match in GRADE.finditer(text)}
    return notebook(assignment, definitions or Definitions(), points)


def build_all():
    """{path: notebook text} for every assignment, exactly as it is written to disk. Drafts are
    built too (their errors stop the build) but not written."""
    definitions = Definitions()
    texts = {}
    for assignment in config.load().assignments:
        nb = notebook(assignment, definitions)
        nbformat.validate(nb)
        texts[notebook_path(assignment)] = nbformat.writes(nb) + "\n"
        texts[notebook_path(assignment).with_name(selfcheck.FILE_NAME)] = selfcheck.source()
    for draft in drafts():
        nbformat.validate(preview(draft, definitions))
    definitions.check_all_used()
    return texts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="only compare with the files on disk; exit 1 if one differs or is missing")
    args = parser.parse_args(argv)
    try:
        built = build_all()
    except BuildError as error:
        print(f"build_notebooks: {error}", file=sys.stderr)
        return 2
    stale = []
    for path, text in built.items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append((path, "missing" if current is None else "stale"))
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    for path, why in stale:
        print(f"{why if args.check else 'wrote'}: {path.relative_to(ROOT)}")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
