"""Gradescope: ``autograder bundle gradescope`` builds the autograder zip to upload, and inside
Gradescope's container ``run_autograder`` grades the submission with this module.

The zip holds ``setup.sh`` (run once when Gradescope builds the image: a Python >= 3.11 venv
with what grading needs and nothing else), ``run_autograder`` (run per submission),
``requirements.txt`` and ``kit/``: ``autograder/``, ``solutions/``, the course's
``course.toml`` and the assignment's nbgrader source notebook (to spot deleted cells).

``requirements.txt`` is the grading subset of the kit's pinned requirements (``grading_
requirements``): ``GRADING_PACKAGES``, the packages ``run`` imports (torch, numpy, nbformat,
hypothesis; what runs in the sandbox imports only torch and numpy), with their own dependencies,
each at the kit's pinned version. No JupyterLab, nbgrader, pytest, dask, rich or linters.
``setup.sh`` installs it from whatever package index pip is configured with (``autograder
bundle gradescope --extra-index-url URL`` adds one, e.g. PyTorch's CPU wheels, where that index
is the instructor's choice); it names no index itself.

``run_autograder`` grades the notebook found in ``/autograder/submission`` (the file named in
course.toml, else the only notebook, else the only .py file) with the same loader, sandbox and
checks as ``autograder grade``, and writes ``/autograder/results/results.json`` in Gradescope's
documented fields, the sandbox's isolation included. ``$GRADESCOPE_ROOT`` replaces
``/autograder`` (tests use a folder of that shape) and ``$AUTOGRADER_PYTHON`` the venv's
interpreter; ``$AUTOGRADER_SETUP_PYTHON`` picks the Python that ``setup.sh`` makes the venv with.
"""

import argparse
import json
import shlex
import sys
import time
import traceback
import zipfile
from pathlib import Path

KIT_ROOT = Path(__file__).resolve().parent.parent.parent
ROOT_ENV, PYTHON_ENV = "GRADESCOPE_ROOT", "AUTOGRADER_PYTHON"
# Gradescope's documented results.json fields (https://gradescope-autograders.readthedocs.io/en/latest/specs/).
TOP_LEVEL = ("score", "execution_time", "output", "output_format", "test_output_format",
             "test_name_format", "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard")
TEST_FIELDS = ("score", "max_score", "status", "name", "name_format", "number", "output",
               "output_format", "tags", "visibility", "extra_data")
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
FAILED = {"id": "Kesalahan internal autograder; beri tahu pengajar.",
          "en": "Internal autograder error; please tell the instructor."}
# What ``run`` imports (the rest of its imports is the standard library and the kit itself).
GRADING_PACKAGES = ("torch", "numpy", "nbformat", "hypothesis")
SANDBOX = {"id": "Mode sandbox", "en": "Sandbox mode"}
NO_CODE_RAN = {"id": "tidak ada (tidak ada kode mahasiswa yang dijalankan)", "en": "none (no student code ran)"}
SETUP_WORDS = {
    "id": {"installing": "memasang paket penilaian dari indeks pip yang dikonfigurasi",
           "cuda": "PERINGATAN: torch dari indeks ini adalah build CUDA (berjalan di CPU, tetapi image "
                   "jauh lebih besar); bundel ulang dengan --extra-index-url indeks wheel CPU PyTorch",
           "ready": "siap"},
    "en": {"installing": "installing the grading packages from the package index pip is configured with",
           "cuda": "WARNING: the torch from this index is a CUDA build (it runs on the CPU, but the image "
                   "is much larger); bundle again with --extra-index-url PyTorch's CPU wheel index",
           "ready": "ready"},
}

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image: a venv with a
# Python >= 3.11 and the grading packages of requirements.txt, from the package index pip is
# configured with{index_note}. $AUTOGRADER_SETUP_PYTHON: the Python to make the venv with.
set -euo pipefail
cd "$(dirname "${{BASH_SOURCE[0]}}")"
PYTHON="${{AUTOGRADER_SETUP_PYTHON:-}}"
if [ -z "$PYTHON" ]; then
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 \\
       && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      PYTHON=$candidate; break
    fi
  done
fi
if [ -z "$PYTHON" ]; then
  apt-get update -q
  apt-get install -y -q python3.11 python3.11-venv
  PYTHON=python3.11
fi
if ! "$PYTHON" -m venv .venv; then  # Debian and Ubuntu ship ensurepip separately
  apt-get update -q
  apt-get install -y -q "$(basename "$(readlink -f "$(command -v "$PYTHON")")")-venv"
  "$PYTHON" -m venv .venv
fi
echo "setup: {installing}"
{index_export}.venv/bin/python -m pip install --disable-pip-version-check --no-input -q -r requirements.txt
# The kit imports, or the build fails here rather than on a student's submission.
PYTHONPATH=kit .venv/bin/python -c 'import torch, numpy, nbformat, hypothesis, autograder.plan, autograder.grading.grader'
if [ "$(.venv/bin/python -c 'import torch; print(torch.version.cuda or "")')" != "" ]; then
  echo "setup: {cuda}" >&2
fi
echo "setup: {ready} ($(.venv/bin/python --version); torch $(.venv/bin/python -c 'import torch; print(torch.__version__)'))"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission: grade /autograder/submission into
# /autograder/results/results.json. $GRADESCOPE_ROOT and $AUTOGRADER_PYTHON are for tests.
set -uo pipefail
ROOT="${{GRADESCOPE_ROOT:-/autograder}}"
KIT="$ROOT/source/kit"
PY="${{AUTOGRADER_PYTHON:-$ROOT/source/.venv/bin/python}}"
mkdir -p "$ROOT/results"
cd "$KIT"
export PYTHONPATH="$KIT" AUTOGRADER_COURSE="$KIT/course.toml" PYTHONUTF8=1
exec "$PY" -m autograder.channels.gradescope run --root "$ROOT" --assignment {assignment}{language}
"""


class BundleError(Exception):
    pass


def grading_requirements(requirements):
    """The lines of the kit's ``requirements`` (text, ``name==version`` per line) that grading
    needs: ``GRADING_PACKAGES`` and the dependencies they declare for this platform, found in
    the installed packages' metadata. A needed package without a pin is a ``BundleError``
    (except pip's own tools, which requirements.txt leaves to pip as ``pip freeze`` does)."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    pins = {}
    for line in requirements.splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            pins[canonicalize_name(line.split("==", 1)[0])] = line
    needed, todo = [], list(GRADING_PACKAGES)
    while todo:
        name = canonicalize_name(todo.pop(0))
        if name in needed:
            continue
        needed.append(name)
        try:
            declared = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            raise BundleError(f"{name} is needed for grading but not installed here: "
                              "bundle from the kit's venv (bash scripts/setup.sh --install-only)") from None
        for text in declared:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    # pip freeze leaves out its own tools, and pip installs them as any dependency: torch's setuptools.
    missing = [name for name in needed if name not in pins and name not in ("pip", "setuptools", "wheel")]
    if missing:
        raise BundleError(f"grading needs {', '.join(missing)}, not pinned in requirements.txt")
    return [pins[name] for name in needed if name in pins]


def bundle(course, plan, output, language=None, extra_index_url=None):
    """Write the zip for ``plan``'s assignment of ``course`` to ``output``; returns its names.
    ``language``: of the feedback, when not course.toml's. ``extra_index_url``: a package index
    setup.sh's pip also reads (none: pip's own configuration only)."""
    requirements = KIT_ROOT / "requirements.txt"
    if not requirements.is_file():
        raise BundleError(f"{requirements} is missing: bundle from a checkout of the kit")
    words = SETUP_WORDS[language or plan.language]
    index_export = (f"export PIP_EXTRA_INDEX_URL={shlex.quote(extra_index_url)}  # chosen at bundle time\n"
                    if extra_index_url else "")
    setup = SETUP_SH.format(
        index_note=f" (and {extra_index_url}, chosen when bundling)" if extra_index_url else "",
        index_export=index_export, installing=words["installing"], cuda=words["cuda"], ready=words["ready"])
    pinned = grading_requirements(requirements.read_text(encoding="utf-8"))
    files = {"setup.sh": setup.encode(),
             "run_autograder": RUN_AUTOGRADER.format(
                 assignment=shlex.quote(plan.name),
                 language=f" --lang {shlex.quote(language)}" if language else "").encode(),
             "requirements.txt": ("# What grading needs, at the kit's pinned versions "
                                  "(autograder.channels.gradescope.grading_requirements)\n"
                                  + "\n".join(pinned) + "\n").encode(),
             "kit/course.toml": Path(course.path).read_bytes()}
    for package in ("autograder", "solutions"):
        for path in sorted((KIT_ROOT / package).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo"):
                files[f"kit/{path.relative_to(KIT_ROOT).as_posix()}"] = path.read_bytes()
    roster = getattr(course.late, "roster", "")
    if roster:  # course.toml names it: without it the course file does not load (Gradescope
        # applies its own late policy; the roster's extensions are not used there)
        if Path(roster).is_absolute() or ".." in Path(roster).parts:
            raise BundleError(f"late.roster {roster!r} must be a path below course.toml's folder to be bundled")
        files[f"kit/{Path(roster).as_posix()}"] = (Path(course.path).parent / roster).read_bytes()
    if plan.source_notebook:
        files[f"kit/assignments/source/{plan.name}/{plan.notebook}"] = Path(plan.source_notebook).read_bytes()
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    temporary = output.with_name(f".{output.name}.tmp")
    with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))  # the same kit, the same zip
            executable = name in ("setup.sh", "run_autograder")
            info.external_attr = (0o100755 if executable else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    temporary.replace(output)
    return list(files)


def find_submission(folder, notebook):
    """The file to grade in Gradescope's submission folder (uploads may sit in sub-folders)."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    visible = [p for p in sorted(folder.rglob("*")) if p.is_file()
               and not any(part.startswith((".", "__MACOSX")) for part in p.relative_to(folder).parts)]
    for choice in ([p for p in visible if p.name == notebook], [p for p in visible if p.suffix == ".ipynb"],
                   [p for p in visible if p.suffix == ".py"]):
        if choice:
            return choice[0]
    return None


def results_json(result, plan, sandbox=None):
    """Gradescope's results.json of one record: the report's, in the documented fields only,
    with the sandbox's isolation (``sandbox``) as the output's last line."""
    from autograder import reports

    data = reports.results_json(result, plan.language, plan.title)
    extra = dict(data.get("extra_data", {}))
    extra.update({"max_score": data.get("max_score", result.max_score), "assignment": plan.name,
                  "status": result.status, "sandbox": sandbox or NO_CODE_RAN["en"]})
    data["output"] += f"\n{SANDBOX[plan.language]}: {sandbox or NO_CODE_RAN[plan.language]}"
    out = {key: data[key] for key in TOP_LEVEL if key in data}
    out["extra_data"] = extra
    out["stdout_visibility"] = "hidden"  # the grader's log is for the instructor
    out["tests"] = [{key: test[key] for key in TEST_FIELDS if key in test} for test in data["tests"]]
    return out


def run(root, assignment, lang=None):
    """Grade ``root``/submission into ``root``/results/results.json; 0 when graded."""
    root = Path(root)
    results = root / "results"
    results.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    status, language = 0, "en"
    try:
        from autograder.sandbox import launch

        launch.start_early(hide=[root / "submission", results])
        from autograder import plan as plans
        from autograder.grading.grader import grade
        from autograder.loading import Submission

        plan = plans.load(assignment, None, lang)
        language = plan.language
        path = find_submission(root / "submission", plan.notebook)
        print(f"course: {plan.course_path}; grading {path or 'nothing (no notebook found)'}", flush=True)
        result = grade(Submission("submission", plan.name, path, None if path else "no_notebook"), plan)
        from autograder.sandbox.process import sandbox_mode

        # Nothing could be loaded (no file, a broken notebook): no student code ran, whatever
        # zygote this process may have started.
        loaded_nothing = result.status == "not_graded" and any(o.message in result.problems for o in result.outcomes)
        mode = None if loaded_nothing else sandbox_mode()
        data = results_json(result, plan, None if mode is None else (f"{mode[0]} ({mode[1]})" if mode[1] else mode[0]))
        print(f"sandbox: {data['extra_data']['sandbox']}", flush=True)
        if result.status == "grader_error":
            status = 3
    except Exception:  # the student still sees a result, the instructor the traceback (stdout)
        traceback.print_exc(file=sys.stdout)
        data = {"score": 0, "execution_time": round(time.monotonic() - started, 3),
                "output": FAILED.get(language, FAILED["en"]), "visibility": "visible",
                "stdout_visibility": "hidden", "tests": [], "extra_data": {"status": "grader_error"}}
        status = 3
    from autograder.reports import write_atomic

    write_atomic(results / "results.json", json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    print(f"results: {results / 'results.json'}: {data.get('score')} points", flush=True)
    return status


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autograder.channels.gradescope")
    commands = parser.add_subparsers(dest="command", required=True)
    runner = commands.add_parser("run", help="grade Gradescope's submission folder")
    runner.add_argument("--root", default="/autograder")
    runner.add_argument("--assignment", required=True)
    runner.add_argument("--lang", choices=("id", "en"))
    args = parser.parse_args(argv)
    return run(args.root, args.assignment, args.lang)


if __name__ == "__main__":
    sys.exit(main())
