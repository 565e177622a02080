"""What the notebook tests share: where the course lives, how nbgrader marks cells, how the
reference solution is compared with notebook code, and how nbgrader itself is run."""

import ast
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

from autograder import config
from autograder import plan as plans

ROOT = Path(__file__).resolve().parent.parent
COURSE_DIR = ROOT / "assignments"
SOLUTIONS_DIR = ROOT / "solutions"
COURSE = config.load()
ASSIGNMENTS = list(COURSE.assignments)  # attention, encoder, decoder, transformer (course.toml's order)
# The venv's bin/ (not resolved: the venv's python is a symlink to the base interpreter).
VENV_BIN = Path(sys.executable).parent

SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
HIDDEN_CALL = re.compile(r'^grade_target\("(?P<assignment>\w+)", "(?P<target>\w+)"\)$', re.M)


# -- the course's notebooks ------------------------------------------------------------------
def notebook_name(assignment):
    return COURSE.assignments[assignment].notebook


def source_notebook(assignment):
    return COURSE_DIR / "source" / assignment / notebook_name(assignment)


def read_notebook(path):
    return nbformat.read(str(path), as_version=4)


def load_build_script():
    """assignments/build_notebooks.py as a module (it is a script, not a package)."""
    spec = importlib.util.spec_from_file_location("build_notebooks", COURSE_DIR / "build_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- nbgrader's cell kinds ---------------------------------------------------------------------
def nbgrader_meta(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def is_solution(cell):
    return bool(nbgrader_meta(cell).get("solution"))


def is_hidden_test(cell):
    meta = nbgrader_meta(cell)
    return bool(meta.get("grade")) and not meta.get("solution") and not is_self_check(cell)


SELF_CHECK_ID = "cek_mandiri"  # the visible 0-point test cell that runs cek_mandiri.py


def is_self_check(cell):
    return nbgrader_meta(cell).get("grade_id") == SELF_CHECK_ID


def is_read_only(cell):
    meta = nbgrader_meta(cell)
    return bool(meta.get("locked")) and not meta.get("grade") and not meta.get("solution")


def hidden_test_source(assignment, target):
    """The exact source of a hidden test cell."""
    return ("### BEGIN HIDDEN TESTS\n"
            "from autograder.notebook import grade_target\n"
            f'grade_target("{assignment}", "{target}")\n'
            "### END HIDDEN TESTS")


def hidden_target(cell):
    match = HIDDEN_CALL.search(cell.source)
    return match["target"] if match else None


def registry_points(assignment):
    """{target: sum of the points of its checks}, with course.toml's overrides applied."""
    points = {}
    for check in plans.resolve(COURSE, assignment).checks:
        points[check.target] = points.get(check.target, 0.0) + check.points
    return points


def released_notebook(assignment, answers=True):
    """The source notebook as nbgrader releases it, without running nbgrader: hidden tests cut
    out, and each solution region replaced by ``raise NotImplementedError()`` (``answers=False``:
    the untouched stubs) or by the reference code in it (``answers=True``: a correct submission)."""
    nb = read_notebook(source_notebook(assignment))
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell.outputs, cell.execution_count = [], None
        if is_hidden_test(cell):
            cell.source = _cut(cell.source, "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS", None)
        elif is_solution(cell):
            cell.source = _cut(cell.source, *SOLUTION_MARKERS,
                               None if answers else "raise NotImplementedError()", keep=answers)
    return nb


def _cut(source, begin, end, stub, keep=False):
    out, inside = [], False
    for line in source.split("\n"):
        if line.strip() == begin:
            inside = True
            if stub:
                out.append(line.replace(begin, stub))
        elif line.strip() == end:
            inside = False
        elif keep or not inside:
            out.append(line)
    return "\n".join(out)


def cell_by_id(nb, grade_id):
    return next(c for c in nb.cells if nbgrader_meta(c).get("grade_id") == grade_id)


# -- comparing code with the reference solution ---------------------------------------------------
def strip_solution_markers(code):
    return "\n".join(line for line in code.split("\n") if line.strip() not in SOLUTION_MARKERS)


def _without_docstrings(tree):
    """Docstrings are Indonesian in the notebooks and English in solutions/: ignore them."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (len(body) > 1 and isinstance(body[0], ast.Expr)
                    and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
                node.body = body[1:]
    return tree


def top_level_definitions(code):
    """{name: ast.dump without docstrings} of the top-level functions and classes in ``code``."""
    tree = _without_docstrings(ast.parse(code))
    return {node.name: ast.dump(node) for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def reference_definitions():
    found = {}
    for path in sorted(SOLUTIONS_DIR.glob("*.py")):
        found.update(top_level_definitions(path.read_text(encoding="utf-8")))
    return found


# -- running nbgrader ---------------------------------------------------------------------------
def environment():
    """The current environment with the venv's bin/ first on PATH: nbgrader runs ``alembic``
    from PATH when it creates gradebook.db, and the kernelspec starts ``python`` from PATH."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(VENV_BIN), env.get("PATH", "")])
    env["PYTHONUTF8"] = "1"
    return env


def run_nbgrader(*args, cwd, timeout=600):
    done = subprocess.run([str(VENV_BIN / "nbgrader"), *map(str, args)], cwd=cwd,
                          env=environment(), capture_output=True, text=True, timeout=timeout)
    # nbgrader logs to stderr and validate prints to stdout; every kernel start adds a warning
    # about TCP without encryption that only buries the interesting lines.
    done.output = "\n".join(line for line in (done.stdout + done.stderr).splitlines()
                            if "Kernel is running over TCP without encryption" not in line)
    return done


# -- one course for the whole session, its nbgrader commands run side by side ---------------------
def released_course(root):
    """A copy of assignments/ in ``root`` with every assignment released by nbgrader."""
    from autograder import selfcheck

    unbuilt = [a for a in ASSIGNMENTS if not (COURSE_DIR / "source" / a / selfcheck.FILE_NAME).is_file()]
    assert not unbuilt, (f"assignments/source/<{'|'.join(unbuilt)}>/{selfcheck.FILE_NAME} is not built (git "
                         "does not hold it): run bash scripts/setup.sh --install-only")
    shutil.copy(COURSE_DIR / "nbgrader_config.py", root)
    shutil.copytree(COURSE_DIR / "source", root / "source")
    done = run_nbgrader("generate_assignment", "*", cwd=root)  # "*": every assignment in source/
    assert done.returncode == 0, done.output[-5000:]
    return root
