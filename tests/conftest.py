"""Shared fixtures: run the real ``autograder`` command in a subprocess."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "submissions"


def run_autograder(*args, cwd=ROOT, timeout=300):
    """``python -m autograder ARGS`` with the interpreter running the tests (the venv's)."""
    env = {**os.environ, "PYTHONUTF8": "1"}
    return subprocess.run([sys.executable, "-m", "autograder", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def attention_batch(tmp_path_factory):
    """The bundled attention examples graded once, in the default language (course.toml's: id)."""
    out = tmp_path_factory.mktemp("reports") / "attention"
    done = run_autograder("grade", EXAMPLES, "--assignment", "attention", "--out", out)
    return done, out


def course_with(folder, **grading):
    """A copy of the kit's course.toml with some [grading] values changed; returns the course."""
    import re

    from autograder import config

    text = Path(config.DEFAULT_PATH).read_text()
    for key, value in grading.items():
        text, count = re.subn(rf"(?m)^{key} = \S+", f"{key} = {value}", text)
        assert count == 1, f"course.toml has no single '{key} = ...' line"
    path = Path(folder) / "course.toml"
    path.write_text(text)
    return config.load(path)
