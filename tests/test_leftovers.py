"""Nothing one student's worker leaves behind is visible to the next: kernel keys, SysV IPC
objects, files, processes (and what they serve). hostile/leave_traces.py plants one of each
(``plant``) and reports what it finds (``look``). A slot's uid is the same for every student
it grades and in every run that claims that uid block, and a slot's workers share a network
namespace: those are the channels these tests try, next student on the same slot, a student on
another slot while the first one still runs, and the next grader run after one that was killed.

Each runs with the system-call filter (keyctl refused) and without it (degraded mode, as on a
kernel without seccomp: then the keyrings are emptied when a slot's worker ends and when a
zygote starts, and each worker has a session keyring of its own)."""

import os
import signal
from pathlib import Path

import pytest

import solutions
from autograder.sandbox.launch import Launch
from autograder.sandbox.process import Zygote
from autograder.sandbox.session import Session

CODE = (Path(__file__).parent / "hostile" / "leave_traces.py").read_text()
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="namespaces and a separate uid need root")


@pytest.fixture(params=["seccomp", "no-seccomp"])
def filter_mode(request, monkeypatch):
    if request.param == "no-seccomp":
        monkeypatch.setenv("AUTOGRADER_SECCOMP", "off")
    else:
        monkeypatch.delenv("AUTOGRADER_SECCOMP", raising=False)
    return request.param


def _zygote():
    return Zygote(Launch())


def _session(zygote, slot=0):
    return Session([{"code": CODE, "origin": "cell 1"}], [], solutions, request_timeout=10, max_restarts=0,
                   zygote=zygote, slot=slot)


def _plant(zygote, slot=0):
    """A worker on ``slot`` that planted everything it could; returns (session, its uid)."""
    session = _session(zygote, slot)
    planted = session.call("plant")
    assert {"shm", "sem", "msg", "file:/tmp", "file:/dev/shm", "process"} <= set(planted), planted
    if "no-seccomp" in zygote_mode(zygote):  # without the filter, keys can be added
        assert {"key:user", "key:user_session", "key:session", "key:persistent"} <= set(planted), planted
    else:
        assert not any(p.startswith("key:") for p in planted), planted
    assert session.call("look"), "the worker does not see its own traces"
    return session, session.call("who")[0]


def zygote_mode(zygote):
    return "seccomp" if getattr(zygote, "seccomp", False) else "no-seccomp"


def test_the_next_student_on_the_same_slot_finds_nothing(filter_mode):
    zygote = _zygote()
    try:
        assert zygote_mode(zygote) == filter_mode
        first, uid = _plant(zygote, slot=0)
        first.close()
        second = _session(zygote, slot=0)
        try:
            assert second.call("who")[0] == uid
            assert second.call("look") == []
        finally:
            second.close()
    finally:
        zygote.close()


def test_a_student_on_another_slot_finds_nothing_while_the_first_runs(filter_mode):
    zygote = _zygote()
    try:
        first, uid = _plant(zygote, slot=0)
        try:
            other = _session(zygote, slot=1)
            try:
                assert other.call("who")[0] != uid
                assert other.call("look") == []
            finally:
                other.close()
        finally:
            first.close()
    finally:
        zygote.close()


def test_the_next_grader_run_finds_nothing_after_one_was_killed(filter_mode):
    """The first run's zygote dies by SIGKILL (no clean-up of its own); the next run claims the
    same uid block (the lock is free again) and must start from nothing."""
    first_run = _zygote()
    try:
        planted, uid = _plant(first_run, slot=0)
        first_run.process.send_signal(signal.SIGKILL)
        first_run.process.wait()
    finally:
        first_run.close()
    planted.close()
    for _ in range(3):  # the first free uid block: the same one, unless a grader run elsewhere took it
        second_run = _zygote()
        try:
            looker = _session(second_run, slot=0)
            try:
                if looker.call("who")[0] != uid:
                    continue
                assert looker.call("look") == []
                return
            finally:
                looker.close()
        finally:
            second_run.close()
    pytest.skip("other grader runs on this machine kept the uid block of the first run")
