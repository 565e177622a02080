"""The trusted processes stay small: grading submissions that attack with memory (allocate tens
of GB, print hundreds of MB, send replies as large or as deep as a reply may be, or larger)
leaves the peak resident memory of the grader and of each grading process under 1.5 GB. What a worker allocates
is its own (its address-space limit); what it sends is bounded (64 MB a frame, a million
values, 64 levels) before the grader holds more of it."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, course_with

pytestmark = pytest.mark.slow  # memory attacks graded

HOSTILE = Path(__file__).parent / "hostile"
ATTACKS = ("memory_bomb", "print_flood", "deep_reply")  # the memory-relevant ones
LIMIT_BYTES = 1.5 * 1024**3
JOBS = 2  # two attacks at once, as on a two-core machine

# Frames written straight into the reply pipe (as deep_reply.py does): one just under the
# 64 MB a reply may be, from every function, and one announcing 2 GB (refused from its header).
HUGE_FRAMES = '''# write a reply frame of 63 MB (and one that claims 2 GB) straight into the reply pipe
import struct
import sys

import torch.nn as nn


def _channel():
    frame = sys._getframe()
    while frame is not None:
        for value in frame.f_locals.values():
            if hasattr(value, "write_fd") and hasattr(value, "read_fd"):
                return value
        frame = frame.f_back
    return None


def _forge(payload, size=None):
    channel = _channel()
    if channel is not None:
        channel._write_all(struct.pack(">I", len(payload) if size is None else size) + payload)


def scaled_dot_product_attention(q, k, v, mask=None):
    _forge(b'{"ok": {"result": "' + b"A" * (63 << 20) + b'"}}')


def causal_mask(t):
    _forge(b'{"ok": 1}', size=2**31)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        _forge(b'{"ok": {"result": [' + b'"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",' * 990_000 + b"0]}}")

    def forward(self, q, k, v, mask=None):
        _forge(b'{"ok": {"result": "' + b"A" * (63 << 20) + b'"}}')
'''


# The command, run in this process, then the peak resident memory (VmHWM) of this process and
# of each grading process it forked (``--jobs 2``: autograder.pool), read just before they end.
# The zygote and the workers are other processes: their memory is the sandbox's.
WRAPPER = '''
import sys
from autograder.grading import pool
from autograder.cli import main


def peak_kb(pid="self"):
    line = next(line for line in open(f"/proc/{pid}/status") if line.startswith("VmHWM:"))
    return int(line.split()[1])


close = pool.GradingPool.close


def measured_close(self):
    for pid in list(self._children):
        print("GRADING-PEAK-KB", peak_kb(pid), file=sys.stderr, flush=True)
    close(self)


pool.GradingPool.close = measured_close
status = main(sys.argv[1:])
print("GRADER-PEAK-KB", peak_kb(), file=sys.stderr, flush=True)
sys.exit(status)
'''


def test_the_grader_stays_small_under_memory_attacks(tmp_path):
    submitted = tmp_path / "submitted"
    for name in ATTACKS:
        folder = submitted / name / "attention"
        folder.mkdir(parents=True)
        shutil.copy(HOSTILE / f"{name}.py", folder / "attention.py")
    folder = submitted / "huge_frames" / "attention"
    folder.mkdir(parents=True)
    (folder / "attention.py").write_text(HUGE_FRAMES)
    course_with(tmp_path, request_timeout=5, submission_timeout=60, max_restarts=4)
    done = subprocess.run([sys.executable, "-c", WRAPPER, "grade", str(submitted), "-a", "attention",
                           "-o", str(tmp_path / "out"), "--course", str(tmp_path / "course.toml"),
                           "--jobs", str(JOBS)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    peak = int(re.search(r"GRADER-PEAK-KB (\d+)", done.stderr).group(1)) * 1024
    grading = [int(kb) * 1024 for kb in re.findall(r"GRADING-PEAK-KB (\d+)", done.stderr)]
    print(f"grader peak RSS: {peak / 1024**2:.0f} MB; grading processes: "
          + ", ".join(f"{p / 1024**2:.0f} MB" for p in grading))
    assert len(grading) == JOBS  # the attacks were graded in the grading processes
    assert peak < LIMIT_BYTES, f"the grader's own peak RSS was {peak / 1024**3:.2f} GB"
    assert max(grading) < LIMIT_BYTES, f"a grading process peaked at {max(grading) / 1024**3:.2f} GB"
    for name in (*ATTACKS, "huge_frames"):  # each one graded (what it earns: test_hostile.py)
        assert re.search(rf"^Points [\d.]+/\d+ {name}$", done.stdout, re.M), done.stdout
