"""A new target by one declaration (docs/extending.md walks through the same steps).

Everything the toy assignment needs is declared in this file: the target (an RMS normalisation
function, ``rms_norm``, with its reference), its gate and one check in the registry, one
catalogued mistake with the model that recognises it, and the course (a course.toml written to a
temporary folder). No module of the kit is edited. It is graded end to end in its own process
(the declarations must not leak into the other tests' registry): real loader, real sandboxed
worker, the checks in the trusted process, the diagnosis, the report files.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import torch

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
TOY = "rms_norm"


def rms_norm_reference(x, eps=1e-6):
    """x (..., D) -> x / sqrt(mean(x², over D) + eps), the same shape."""
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def declare_toy():
    """The toy assignment's target, checks and mistake, declared as a course would."""
    from autograder.checks import catalogue, targets, variants
    from autograder.checks.registry import OUTPUT, check, fail
    from autograder.checks.verdicts import computes, expect_depends, expect_present, tensors
    from autograder.texts import bilingual

    targets.declare(targets.Target(
        TOY, targets.FUNCTION, "toy", "rms", rms_norm_reference,
        targets.Signature("rms_norm(x)", positional=1)))

    hint = bilingual("Bagi x dengan akar dari rerata x² pada sumbu terakhir (ditambah eps).",
                     "Divide x by the square root of the mean of x² over the last axis (plus eps).")

    @check("rms.present", assignment="toy", target=TOY, category="api", points=1,
           title=bilingual("Fungsi rms_norm(x) tersedia", "Function rms_norm(x) exists"), hint=hint)
    def rms_present(ctx):
        expect_present(ctx, TOY)

    @check("rms.sensitivity", assignment="toy", target=TOY, category="sensitivity", points=0,
           needs=("rms.present",), title=bilingual("Keluaran bergantung pada x", "The output depends on x"),
           hint=hint)
    def rms_sensitivity(ctx):
        x, x2 = ctx.randn(2, 5, 8), ctx.randn(2, 5, 8)
        reference = ctx.reference.rms_norm(x), ctx.reference.rms_norm(x2)

        def run():  # the output moves with x by a fair share of the reference's (the gate rule)
            found = [tensors(ctx.call(TOY, inputs), 1) for inputs in (x, x2)]
            if None not in found:
                expect_depends(found[0][0], found[1][0], OUTPUT,
                               ("x", bilingual("x diabaikan", "x is ignored")), reference)
        computes(ctx, run)

    @check("rms.values", assignment="toy", target=TOY, category="numeric_vs_reference", points=3,
           needs=("rms.sensitivity",), title=bilingual("Nilai sama dengan solusi acuan",
                                                      "Values match the reference"), hint=hint)
    def rms_values(ctx):
        x = ctx.randn(2, 5, 8, scale=3.0)
        out = ctx.call(TOY, x)
        ctx.expect_close(out, ctx.reference.rms_norm(x), OUTPUT)
        if not torch.isfinite(out).all():
            fail(bilingual("Keluaran berisi NaN.", "The output holds NaN."))

    catalogue.declare(catalogue.Mistake(
        "rms.missing_sqrt", TOY,
        bilingual("Akar kuadrat dari rerata x² terlewat.", "The square root of the mean of x² is missing."),
        bilingual("Bagi dengan `torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)`.",
                  "Divide by `torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)`."),
        variants=(frozenset({"no_sqrt"}),), explains=catalogue.VALUES))

    @variants.model(TOY)
    class RmsNorm(variants.Model):
        def probe(self, kit):
            x = kit.randn(2, 4, 6, scale=2.0)
            return {"out": kit.call(TOY, x, count=1)[0]}, {"x": x}

        def expected(self, i, flags, fill):
            squares = i["x"].pow(2).mean(-1, keepdim=True) + 1e-6
            return {"out": i["x"] / (squares if "no_sqrt" in flags else squares.sqrt())}


CORRECT = '''
import torch


def rms_norm(x, eps=1e-6):
    scale = x.square().mean(dim=-1, keepdim=True).add(eps).rsqrt()
    return x * scale
'''
MISSING_SQRT = '''
import torch


def rms_norm(x, eps=1e-6):
    return x / (x.pow(2).mean(-1, keepdim=True) + eps)
'''
COURSE = '''
[course]
name = "Toy course"
language = "en"

[assignments.toy]
title = "RMS normalisation"
notebook = "toy.py"
'''

GRADE = textwrap.dedent('''
    import json, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    import test_extending
    from autograder import plan as plans, reports
    from autograder.grading.grader import grade
    from autograder.loading import Submission

    test_extending.declare_toy()
    plan = plans.load("toy", sys.argv[2])
    out = {}
    for path in map(Path, sys.argv[4:]):
        result = grade(Submission(path.parent.name, "toy", path), plan)
        folder = reports.write_student(sys.argv[3], result, plan.title, plan.language)
        out[path.parent.name] = {"record": result.to_json(),
                                 "feedback": (folder / "feedback.md").read_text()}
    print(json.dumps(out))
''')


def test_a_target_declared_in_one_file_is_graded_end_to_end(tmp_path):
    course = tmp_path / "course.toml"
    course.write_text(COURSE)
    submissions = []
    for name, text in (("correct", CORRECT), ("missing_sqrt", MISSING_SQRT)):
        (tmp_path / name).mkdir()
        submissions.append(tmp_path / name / "toy.py")
        submissions[-1].write_text(text)
    done = subprocess.run([sys.executable, "-c", GRADE, str(TESTS), str(course), str(tmp_path / "out"),
                           *map(str, submissions)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    graded = json.loads(done.stdout.strip().splitlines()[-1])

    correct, buggy = graded["correct"]["record"], graded["missing_sqrt"]["record"]

    def outcome(record, check_id):
        return next(o for o in record["outcomes"] if o["check"]["id"] == check_id)

    assert [o["check"]["id"] for o in correct["outcomes"]] == ["rms.present", "rms.sensitivity", "rms.values"]
    assert all(o["status"] == "passed" for o in correct["outcomes"]), correct["outcomes"]
    assert sum(o["score"] for o in correct["outcomes"]) == 4 and not correct.get("diagnoses")

    assert outcome(buggy, "rms.present")["status"] == "passed"
    assert outcome(buggy, "rms.values")["status"] == "failed" and outcome(buggy, "rms.values")["score"] == 0
    [diagnosis] = buggy["diagnoses"]
    assert diagnosis["mistake"] == "rms.missing_sqrt" and diagnosis["explains"] == ["rms.values"]
    assert "The square root of the mean of x² is missing." in graded["missing_sqrt"]["feedback"]
