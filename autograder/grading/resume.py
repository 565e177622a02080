"""Resuming a batch: a student whose record is already in the output folder, made from the
same submission bytes under the same plan (checks, points, tolerances, sizes, limits,
language) by the same kit, is not graded again."""

import functools
import hashlib
import json
from pathlib import Path

from autograder import reports


@functools.lru_cache(maxsize=1)
def kit_digest():
    """A digest of the grader's and the reference's code: a new kit regrades everyone."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]  # the autograder package
    for folder in (root, root.parent / "solutions"):
        for path in sorted(folder.rglob("*.py")):
            digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


PARTS = {"submission": "the submission changed", "plan": "the course settings changed",
         "kit": "the autograder changed", "late": "its submission time or extension changed"}


def fingerprint(submission, plan, late=None):
    """What a student's record depends on, part by part, so that resume can say what changed
    (``late``: the submission's late.Lateness, which depends on its time and extension)."""
    digest = hashlib.sha256(json.dumps([submission.student, submission.assignment]).encode())
    try:
        digest.update(Path(submission.path).read_bytes() if submission.path else b"<missing>")
    except OSError:
        digest.update(b"<unreadable>")
    lateness = hashlib.sha256(json.dumps(late.to_json() if late else None, sort_keys=True).encode())
    parts = {"submission": digest.hexdigest(), "plan": plan.fingerprint(), "kit": kit_digest(),
             "late": lateness.hexdigest()}
    return ";".join(f"{name}={value[:24]}" for name, value in parts.items())


def _changed(old, new):
    old_parts = dict(p.split("=", 1) for p in (old or "").split(";") if "=" in p)
    new_parts = dict(p.split("=", 1) for p in new.split(";"))
    return [PARTS[name] for name in PARTS if old_parts.get(name) != new_parts[name]]


def previous_result(out_dir, submission, expected):
    """(record, None) when OUT/<student>/record.json is up to date, else (None, why)."""
    try:
        record = reports.read_record(out_dir, submission.student)
    except FileNotFoundError:
        return None, "no report yet"
    except (OSError, ValueError, KeyError, TypeError):
        return None, "its record is unreadable"
    if record.fingerprint != expected:
        return None, ", ".join(_changed(record.fingerprint, expected))
    if record.report_error:
        return None, "writing its reports failed last time"
    if record.grader_errors:  # ours (or the cluster's), not the student's: try again
        return None, "the grader failed on it last time"
    return record, None


def outdated(record, plan):
    """Why a record kept for a student outside this batch was made under other course settings
    or by another kit ([] when it was not): such a row is kept, and the batch says so."""
    old_parts = dict(p.split("=", 1) for p in (record.fingerprint or "").split(";") if "=" in p)
    now = {"plan": plan.fingerprint()[:24], "kit": kit_digest()[:24]}
    return [PARTS[name] for name in now if old_parts.get(name) != now[name]]
