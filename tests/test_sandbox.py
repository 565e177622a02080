"""The worker process: student code runs there, only plain data comes back."""

import time

import pytest
import torch

import solutions
from autograder.sandbox.process import StudentError, WorkerFailure
from autograder.sandbox.session import Session

SOURCE = '''
import os, sys, time
import torch
import torch.nn as nn

class Echo(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)
    def forward(self, x, mode="ok"):
        if mode == "raise":
            raise ValueError("student bug")
        if mode == "loop":
            while True:
                pass
        if mode == "sleep":
            time.sleep(60)
        if mode == "exit":
            os._exit(3)
        if mode == "sysexit":
            sys.exit(0)
        return self.lin(x)

def try_import(name):
    try:
        __import__(name)
        return "imported"
    except ImportError:
        return "blocked"

def uses_reference(t):
    return MultiHeadAttention(8, 2)(t, t, t)[0]
'''


@pytest.fixture
def session():
    s = Session([{"code": SOURCE, "origin": "cell 1"}], ["Echo", "missing"], solutions,
                request_timeout=3, max_restarts=5)
    yield s
    s.close()


def test_load_describes_names(session):
    info = session.load()
    assert info["names"]["Echo"]["kind"] == "class" and info["names"]["Echo"]["is_module"]
    assert info["names"]["missing"] == {"kind": "missing"}


def test_student_exception_comes_back_with_its_line(session):
    obj = session.new("Echo", 4)
    with pytest.raises(StudentError) as error:
        session.call(obj, torch.zeros(1, 4), mode="raise")
    assert error.value.type == "ValueError" and "student bug" in error.value.message
    assert any("cell 1" in w for w in error.value.where)


@pytest.mark.parametrize("mode, kind", [("loop", "timeout"), ("sleep", "timeout"), ("exit", "crashed")])
def test_hang_or_exit_fails_that_request_and_the_next_one_works(session, mode, kind):
    obj = session.new("Echo", 4)
    started = time.monotonic()
    with pytest.raises(WorkerFailure) as failure:
        session.call(obj, torch.zeros(1, 4), mode=mode)
    assert failure.value.kind == kind and time.monotonic() - started < 10
    fresh = session.new("Echo", 4)  # a new worker, the code loaded again
    result = session.call(fresh, torch.ones(2, 4))
    assert result.shape == (2, 4)


def test_sys_exit_is_just_an_error(session):
    obj = session.new("Echo", 4)
    with pytest.raises(StudentError, match="SystemExit"):
        session.call(obj, torch.zeros(1, 4), mode="sysexit")


def test_neither_reference_nor_grader_is_importable(session):
    for name in ("solutions", "autograder", "autograder.checks"):
        assert session.call("try_import", name) == "blocked"
    assert session.call("try_import", "torch") == "imported"


def test_swapped_reference_sublayer_runs_in_the_grader(session):
    t = torch.randn(1, 3, 8)
    out = session.call("uses_reference", t, proxies=["MultiHeadAttention"])
    assert out.shape == (1, 3, 8)


def test_weights_copied_by_attribute_path(session):
    obj = session.new("Echo", 2)
    missing, mismatched = session.set_params(obj, {
        "lin.weight": torch.eye(2), "lin.bias": torch.zeros(2), "nope.weight": torch.eye(2),
        "lin.bias ": torch.zeros(3)})
    assert missing == ["nope.weight", "lin.bias "] or "nope.weight" in missing
    x = torch.tensor([[1.0, 2.0]])
    assert torch.equal(session.call(obj, x), x)


def test_gives_up_after_too_many_restarts():
    s = Session([{"code": SOURCE, "origin": "cell 1"}], ["Echo"], solutions,
                request_timeout=1, max_restarts=1)
    try:
        for _ in range(2):
            with pytest.raises(WorkerFailure):
                s.call(s.new("Echo", 2), torch.zeros(1, 2), mode="loop")
        with pytest.raises(WorkerFailure) as failure:
            s.new("Echo", 2)
        assert failure.value.kind == "gave_up"
    finally:
        s.close()


def test_hanging_import_is_a_load_failure_without_retries():
    s = Session([{"code": "import time\nclass X:\n    time.sleep(100)", "origin": "cell 1"}], ["X"],
                solutions, startup_timeout=3)
    try:
        with pytest.raises(WorkerFailure) as failure:
            s.load()
        assert failure.value.kind == "load_timeout"
        started = time.monotonic()
        with pytest.raises(WorkerFailure):
            s.new("X")
        assert time.monotonic() - started < 1
    finally:
        s.close()
