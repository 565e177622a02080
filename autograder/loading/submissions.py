"""Find submissions (a class folder, nbgrader's ``submitted/``, one student's repository) and
read one file into definitions: a notebook goes through ``cells``, a Python file straight to
``statements``."""

import json
from pathlib import Path

from autograder.loading.cells import finish, load_notebook, read_notebook
from autograder.loading.code import LoadedCode, Submission
from autograder.loading.statements import add_definitions

SOURCE_SUFFIXES = (".ipynb", ".py")
MAX_SOURCE_BYTES = 5 * 1024 * 1024


# -- finding submissions -------------------------------------------------------------------------
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


# -- reading ---------------------------------------------------------------------------------------
def load(path, source=None):
    """Read a notebook or a Python file into definition chunks. ``source`` is the assignment's
    nbgrader source notebook (a path), where read-only cells are restored from."""
    try:
        raw = Path(path).read_bytes()
    except OSError as error:
        loaded = LoadedCode()
        loaded.fatal = True
        loaded.problems.append({"code": "unreadable", "detail": str(error)})
        return loaded
    return load_bytes(raw, Path(path).suffix, source)


def load_bytes(raw, suffix, source=None):
    """``load`` of a file's bytes already read (``suffix``: ".ipynb" or ".py"); the nbgrader
    plugin grades the bytes nbgrader itself read, so the file is read only once."""
    loaded = LoadedCode()
    if len(raw) > MAX_SOURCE_BYTES and suffix != ".ipynb":
        loaded.fatal = True
        loaded.problems.append({"code": "too_large", "detail": f"{len(raw)} bytes"})
        return loaded
    if suffix == ".ipynb":
        notebook = _parse_notebook(raw, loaded)
        return loaded if notebook is None else load_notebook(notebook, loaded, source)
    add_definitions(_decode(raw, loaded, "file"), "file", loaded)
    return finish(loaded)


def _decode(raw, loaded, origin):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        loaded.problems.append({"code": "not_utf8", "detail": f"{error.reason} at byte {error.start}",
                                "places": [[origin, None]]})
        return raw.decode("utf-8", errors="replace")


def _parse_notebook(raw, loaded):
    text = _decode(raw, loaded, "notebook")
    try:
        json.loads(text)
        return read_notebook(text)
    except Exception as error:  # nbformat raises several kinds for a broken file
        loaded.fatal = True
        loaded.problems.append({"code": "bad_notebook", "detail": str(error)[:300]})
        return None
