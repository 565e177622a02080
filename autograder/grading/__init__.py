"""The pipeline's grading step: the checks run against the sandboxed worker and their verdicts
become records.

- ``grader``: one submission (load -> sandbox -> checks -> diagnoses and pictures -> record);
- ``messages``: what a loading problem, a student's exception or a worker failure says;
- ``batch``: a whole class folder, with resume (``resume``) and the batch's reports;
- ``pool``: grading processes forked from the grader (``--jobs N``);
- ``distributed``: the same on a Dask cluster (``--scheduler``).
"""
