"""autograder/sandbox/inprocess.py, the worker in the caller's process that tests/test_mistakes.py
and bench/checks_alone.py use on trusted code: the kit never imports it, and it answers as a
sandboxed worker does."""

import ast
from pathlib import Path

import pytest
import torch

import solutions
from autograder.sandbox import inprocess
from autograder.sandbox.process import StudentError
from autograder.sandbox.session import Session

ROOT = Path(__file__).resolve().parent.parent

CODE = '''
import torch
import torch.nn as nn


class Scale(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Parameter(torch.ones(d))
        self.inner = nn.Linear(d, d)

    def forward(self, x):
        return self.inner(x * self.w), x.sum()


def broken(x):
    return x[10]
'''


def _imports(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def test_the_kit_never_imports_the_in_process_worker():
    """Only tests/ and bench/ may: a student's code must never run outside the sandbox."""
    users = sorted(str(path.relative_to(ROOT)) for folder in ("autograder", "solutions", "examples", "assignments")
                   for path in (ROOT / folder).rglob("*.py")
                   if any("inprocess" in name for name in _imports(path)))
    assert users == [], users
    assert any("inprocess" in name for name in _imports(ROOT / "bench" / "checks_alone.py"))  # the scan sees one


def _exchange(session):
    """The same requests, as a check makes them; returns what came back."""
    obj = session.new("Scale", 3)
    weights = {"w": torch.tensor([1.0, 2.0, 3.0]), "inner.weight": torch.arange(9.0).reshape(3, 3) / 9,
               "nope": torch.ones(1), "inner.bias": torch.ones(2)}  # every parameter but the bias set
    missing, mismatched = session.set_params(obj, weights)
    session.set_params(obj, {"inner.bias": torch.full((3,), 0.5)})
    x = torch.arange(6.0).reshape(2, 3)
    out, total = session.call(obj, x)
    grads = session.grad(obj, torch.ones(2, 3), x)
    try:
        session.call("broken", torch.zeros(2))
        error = None
    except StudentError as raised:
        error = {"type": raised.type, "message": raised.message, "where": raised.where}
    return {"params": obj.params, "modules": obj.modules, "missing": missing, "mismatched": mismatched,
            "out": out, "total": total, "grads": grads, "error": error,
            "names": session.load_info["names"]}


def _same(a, b):
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return a == b


def test_it_answers_as_a_sandboxed_worker_does():
    here = inprocess.session(CODE, names=["Scale", "broken", "missing"])
    sandboxed = Session([{"code": CODE, "origin": "cell 1"}], ["Scale", "broken", "missing"], solutions,
                        request_timeout=30, max_restarts=0)
    try:
        got, wanted = _exchange(here), _exchange(sandboxed)
    finally:
        sandboxed.close()
    assert wanted["error"]["type"] == "IndexError" and wanted["missing"] == ["nope"]  # the requests hit
    assert {key for key in wanted if not _same(got[key], wanted[key])} == set(), (got, wanted)
    assert here.zygote.requests >= 6  # the load and every request above, counted


def test_code_that_does_not_load_is_the_callers_error():
    with pytest.raises(RuntimeError, match="broken.py does not load"):
        inprocess.session("import torch\nraise ValueError('no')\n", origin="broken.py")
