"""The fourth assignment's non-training checks, for the benchmarks.

The issue compares the kit with plain nbgrader on the transformer's checks without its training
outcome (``train.outcome`` trains the student's model for up to a minute of CPU; the other
checks take a fraction of a second). ``patch()`` makes every plan of ``transformer`` resolved in
this process leave that one check out; everything else (the CLI, the grading processes forked
from this one, the sandbox, the reports) is the kit as it is.

    .venv/bin/python bench/without_training.py grade PATH --assignment transformer --out DIR

runs ``autograder grade`` (the real CLI, in this process) so patched.
"""

import sys

TRAINING_CHECK = "train.outcome"


def patch():
    import dataclasses

    from autograder import plan as plans

    resolve = plans.resolve
    if getattr(resolve, "without_training", False):
        return

    def without_training(course, name, language=None):
        plan = resolve(course, name, language)
        if name != "transformer":
            return plan
        return dataclasses.replace(plan, checks=tuple(c for c in plan.checks if c.id != TRAINING_CHECK))

    without_training.without_training = True
    plans.resolve = without_training


if __name__ == "__main__":
    patch()
    from autograder import cli

    sys.argv[0] = "autograder"
    sys.exit(cli.main())  # no argv: the command's own fast exit, as the autograder script
