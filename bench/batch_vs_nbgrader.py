"""Benchmark: the kit against plain nbgrader, for every assignment, on this machine, in one run.

    .venv/bin/python bench/batch_vs_nbgrader.py                        # N = 100, all four (the transformer without training)
    .venv/bin/python bench/batch_vs_nbgrader.py --n 10 --assignment encoder
    .venv/bin/python bench/batch_vs_nbgrader.py --skip-nbgrader        # the kit only

Per assignment: N correct submissions (with ``--mix``: every 10th with a one-line bug, one with
an endless loop), graded by **plain nbgrader** (a temp course whose hidden cells hold plain torch
asserts from plain_asserts.py instead of the kit's ``grade_target`` calls, no self-check cell,
nbgrader's default preprocessors and cell timeout; checked to be sane: correct notebooks get full
marks, with ``--mix`` the others lose points) and by **the kit** (``autograder grade --jobs J``, the real CLI),
both timed from process start, plus the kit's floor (its grading processes, already started:
floor.py) and the checks alone (no sandbox:
the bound below which no work on the sandbox, the wire or start-up can go). bench/README.md has
the details.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cold_and_scale import (COLD_TARGET, autograder_command, cold_one, compile_kit, print_cold,
                            print_scale, run_batch)
from plain_asserts import PLAIN_TESTS

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENTS = ("attention", "encoder", "decoder", "transformer")
# The transformer's checks without its training outcome, on both sides (without_training.py): the
# kit leaves train.outcome out, the baseline's notebook leaves out the cells that train.
TRAINING_CELLS = {"transformer": ("train", "plot_loss", "examples")}
CORES = os.cpu_count()
TARGET = 50  # nbgrader/kit, the course's goal
ALONE_TARGET = 1.3  # kit / the checks alone: the sandbox, the wire and start-up cost at most 30 %
BUGS = {  # (name, text in the reference solution cell, replacement)
    "attention": [
        ("no_scale", "/ math.sqrt(d_k)", ""),
        ("inverted_mask", "masked_fill(mask,", "masked_fill(~mask,"),
        ("tril", "torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)",
         "torch.tril(torch.ones(t, t, dtype=torch.bool), diagonal=0)"),
        ("no_wo", "return self.wo(z), weights", "return z, weights"),
    ],
    "encoder": [
        ("cos_everywhere", "pe[:, 0::2] = torch.sin(angle)", "pe[:, 0::2] = torch.cos(angle)"),
        ("relu", "F.gelu(self.l1(x))", "F.relu(self.l1(x))"),
        ("no_ffn_residual", "return self.ln2(h + self.ffn(h))", "return self.ln2(self.ffn(h))"),
        ("mask_dropped", "self.attn(x, x, x, mask)[0]", "self.attn(x, x, x)[0]"),
    ],
    "decoder": [
        ("no_causal_mask", "mask = causal_mask(x.size(1)).to(x.device)", "mask = None"),
        ("raw_memory", "self.cross_attn(self.ln2(h), m, m)", "self.cross_attn(self.ln2(h), memory, memory)"),
        ("no_cross_residual", "h = h + z", "h = z"),
        ("no_self_residual", "h = x + self.self_attn(n, n, n, mask)[0]", "h = self.self_attn(n, n, n, mask)[0]"),
    ],
    "transformer": [
        ("shift_left", "torch.cat([start, y[:, :-1]], dim=1)", "torch.cat([y[:, 1:], start], dim=1)"),
        ("no_sqrt_d", "x = embedding(tokens) * math.sqrt(self.d_model)", "x = embedding(tokens)"),
        ("softmax_logits", "return self.generator(self.dec_norm(g))",
         "return self.generator(self.dec_norm(g)).softmax(-1)"),
        ("first_position", "logits[:, -1].argmax(dim=-1, keepdim=True)", "logits[:, 0].argmax(dim=-1, keepdim=True)"),
    ],
}
LOOP_AT = {  # a line of the graded module's forward; the loop goes right before it
    "attention": "        b, tq, d = q.shape\n",
    "encoder": "        if self.prenorm:\n",
    "decoder": "        mask = causal_mask(x.size(1))",
    "transformer": "        h = self._embed(self.src_embed, src)\n",
}
PLAIN_CONFIG = """\
# nbgrader as an instructor without the kit configures it: default preprocessors and timeout.
c = get_config()
c.CourseDirectory.course_id = "transformer-plain"
c.ClearSolutions.code_stub = {"python": "raise NotImplementedError()"}
"""


def timed(command, cwd, env):
    started = time.monotonic()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    return time.monotonic() - started, done


def must(command, cwd, env, what):
    _, done = timed(command, cwd, env)
    if done.returncode:
        sys.exit(f"{what} failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def nbgrader_cells(notebook):
    return [(cell, cell["metadata"].get("nbgrader", {})) for cell in notebook["cells"]]


def build_kit_course(folder, assignment, env):
    """A copy of this kit's course (its config and plugin) holding one assignment, released."""
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "assignments" / "nbgrader_config.py", folder)
    shutil.copytree(ROOT / "assignments" / "source" / assignment, folder / "source" / assignment)
    must(["nbgrader", "generate_assignment", assignment], folder, env, "kit generate_assignment")
    return folder


def build_plain_course(folder, assignment, env):
    """The baseline course: the same notebook with plain-assert hidden cells and no kit at all."""
    notebook = json.loads((ROOT / "assignments" / "source" / assignment / f"{assignment}.ipynb").read_text())
    tests = PLAIN_TESTS[assignment]
    cells = []
    for cell, meta in nbgrader_cells(notebook):
        if meta.get("grade_id") == "cek_mandiri" or "".join(cell["source"]).startswith("## Cek mandiri"):
            continue  # the kit's self-check: an instructor without the kit has none
        if meta.get("grade_id") in TRAINING_CELLS.get(assignment, ()):
            continue
        if meta.get("grade") and not meta.get("solution"):
            if meta["grade_id"] not in tests:
                sys.exit(f"no plain asserts for hidden cell {meta['grade_id']} of {assignment}")
            cell["source"] = f"### BEGIN HIDDEN TESTS\n{tests[meta['grade_id']]}### END HIDDEN TESTS"
        cells.append(cell)
    notebook["cells"] = cells
    source = folder / "source" / assignment
    source.mkdir(parents=True)
    (source / f"{assignment}.ipynb").write_text(json.dumps(notebook, ensure_ascii=False, indent=1))
    (folder / "nbgrader_config.py").write_text(PLAIN_CONFIG)
    must(["nbgrader", "generate_assignment", assignment], folder, env, "plain generate_assignment")
    return folder


def student_mix(assignment, n, mixed):
    """[(student, bug)] with bug None, (name, old, new) or a loop; all None unless ``mixed``."""
    if not mixed:
        return [(f"s{index:03d}", None) for index in range(n)]
    loop_line = LOOP_AT[assignment]
    loop = ("endless_loop", loop_line, "        while True:\n            pass\n" + loop_line)
    bugs = BUGS[assignment]
    mix = []
    for index in range(n):
        bug = loop if index == n // 2 else bugs[index // 10 % len(bugs)] if index % 10 == 3 else None
        mix.append((f"s{index:03d}" + (f"_{bug[0]}" if bug else ""), bug))
    return mix


def write_submissions(course, assignment, mix):
    """Each student's notebook: the course's release with the reference code (plus the bug)."""
    release = json.loads((course / "release" / assignment / f"{assignment}.ipynb").read_text())
    source = json.loads((ROOT / "assignments" / "source" / assignment / f"{assignment}.ipynb").read_text())
    answers = {cell["id"]: "".join(cell["source"]) for cell in source["cells"]}
    for student, bug in mix:
        notebook = json.loads(json.dumps(release))
        applied = False
        for cell, meta in nbgrader_cells(notebook):
            if meta.get("solution"):
                code = "\n".join(line for line in answers[cell["id"]].splitlines()
                                 if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line)
                if bug and bug[1] in code:
                    code, applied = code.replace(bug[1], bug[2], 1), True
                cell["source"] = code
        if bug and not applied:
            sys.exit(f"bug {bug[0]!r}: {bug[1]!r} is not in any solution cell of {assignment}")
        folder = course / "submitted" / student / assignment
        folder.mkdir(parents=True)
        (folder / f"{assignment}.ipynb").write_text(json.dumps(notebook))


def floor_seconds(course, assignment, jobs, env):
    """(seconds, graded): every submission graded by an ``autograder grade`` that has already
    started (bench/floor.py, in a process of its own: the same grading processes as
    ``--jobs``, each past its first submission, torch imported, the zygote ready)."""
    done = must([sys.executable, str(Path(__file__).parent / "floor.py"), assignment, str(course / "submitted"),
                 "--jobs", str(jobs)], ROOT, env, "bench/floor.py")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return found["seconds"], found["graded"]


def checks_alone_ms(course, assignment, mix, env, sample=10):
    """CPU ms per submission of the checks alone (bench/checks_alone.py, in a process of its own:
    it grades without the sandbox, so only correct notebooks, the first ``sample`` of them)."""
    notebooks = [str(course / "submitted" / student / assignment / f"{assignment}.ipynb")
                 for student, bug in mix if bug is None][:sample]
    done = must([sys.executable, str(Path(__file__).parent / "checks_alone.py"), assignment, *notebooks],
                ROOT, env, "bench/checks_alone.py")
    return json.loads(done.stdout.strip().splitlines()[-1])["cpu_ms"]


def kit_scores(stdout):
    """{student: (points, max)} from the CLI's 'Points X/Y student' lines."""
    scores = {}
    for line in stdout.splitlines():
        if line.startswith("Points "):
            fraction, student = line.split()[1:3]
            got, total = fraction.split("/")
            scores[student] = (float(got), float(total))
    return scores


def nbgrader_scores(course, assignment, students):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return {s: (gradebook.find_submission(assignment, s).score,
                    gradebook.find_submission(assignment, s).max_score) for s in students}


def score_problems(scores, mix):
    """Students whose score contradicts their notebook: a correct one below full, a bug at full."""
    problems = []
    for student, bug in mix:
        got, total = scores.get(student, (None, None))
        if got is None:
            problems.append(f"{student}: no score")
        elif (bug is None) != (got == total):
            problems.append(f"{student}: {got:g}/{total:g}")
    return problems


def timeout_cells(course, assignment, student):
    """Cells of one autograded notebook that ran into nbgrader's timeout (and were interrupted)."""
    path = course / "autograded" / student / assignment / f"{assignment}.ipynb"
    notebook = json.loads(path.read_text())
    return sum(any(out.get("ename") in ("CellTimeoutError", "KeyboardInterrupt")
                   for out in cell.get("outputs", [])) for cell in notebook["cells"])


def kit_loop_seconds(out, student):
    """How long the kit spent on one student (OUT/report.json), or None if it does not say."""
    try:
        report = json.loads((out / "report.json").read_text())
        return next(s["execution_time"] for s in report["students"] if s["student"] == student)
    except (OSError, ValueError, KeyError, StopIteration):
        return None


def bench_assignment(assignment, args, workdir, env, timeout):
    mix = student_mix(assignment, args.n, args.mix)
    kit_env = {**env, "AUTOGRADER_COURSE": str(ROOT / "course.toml")}  # the copied config finds it
    kit_course = build_kit_course(workdir / assignment / "kit", assignment, kit_env)
    write_submissions(kit_course, assignment, mix)
    line = {"assignment": assignment}
    loop_student = next((student for student, bug in mix if bug and bug[0] == "endless_loop"), None)
    # The kit's run takes seconds and a busy neighbour on a shared machine moves it by a third:
    # the median of --repeat runs (each into a fresh output folder: nothing is resumed). With
    # --scheduler, each run is followed by one on Dask, so that both medians come from the
    # same minutes (one Dask run after the three plain ones read 1.03-1.33x on the same code).
    def grade(out, *extra):
        """(seconds, the scores that contradict the mix) of one ``autograder grade`` run."""
        seconds, done = timed(autograder_command([kit_course / "submitted"], assignment, out, args.jobs, *extra),
                              ROOT, kit_env)
        if done.returncode:
            sys.exit(f"autograder grade {' '.join(extra)} failed (exit {done.returncode}):\n"
                     f"{done.stderr[-3000:]}")
        return seconds, score_problems(kit_scores(done.stdout), mix)

    times, dask_times, missed, dask_missed = [], [], [], []
    for attempt in range(args.repeat):
        out = workdir / assignment / f"reports-{attempt}"
        seconds, wrong = grade(out)
        times.append(seconds)
        missed = missed or wrong
        if args.scheduler:
            seconds, wrong = grade(workdir / assignment / f"dask-{attempt}", "--scheduler", "local")
            dask_times.append(seconds)
            dask_missed = dask_missed or wrong
    kit = statistics.median(times)
    kit_loop = kit_loop_seconds(out, loop_student) if loop_student else None
    floor, graded = floor_seconds(kit_course, assignment, args.jobs, kit_env)
    alone_ms = checks_alone_ms(kit_course, assignment, mix, kit_env)
    alone = args.n * alone_ms / 1000 / CORES
    line.update(kit=kit, floor=floor, alone=alone)
    if args.scheduler:
        dask = line["dask"] = statistics.median(dask_times)
        pairs = ", ".join(f"{d / k:.2f}" for d, k in zip(dask_times, times))
        print(f"[{assignment}] autograder grade --scheduler local --jobs {args.jobs} (a Dask LocalCluster "
              f"of {args.jobs} worker processes): {dask:.1f} s (median of "
              f"{', '.join(f'{t:.1f}' for t in dask_times)} s, each run right after a plain one) "
              f"against --jobs {args.jobs} {kit:.1f} s: {dask / kit:.2f}x (run by run: {pairs})"
              + ("" if not dask_missed else "; WARNING: its scores contradict the mix"))
    print(f"[{assignment}] autograder grade: {kit:7.1f} s ({kit / args.n * 1000:5.0f} ms/submission; "
          f"median of {', '.join(f'{t:.1f}' for t in times)} s); floor {floor:.1f} s "
          f"({floor / graded * 1000:.0f} ms/submission); kit/floor {kit / floor:.2f}x")
    print(f"[{assignment}] the checks alone (no sandbox, no wire, no start-up): {alone_ms:.0f} ms of CPU "
          f"per submission, {alone:.1f} s for {args.n} on {CORES} cores used to the full")
    print(f"[{assignment}] kit / checks alone: {kit / alone:.2f}x (target at most {ALONE_TARGET}x)")
    if not args.skip_cold:
        notebook = next(kit_course / "submitted" / student / assignment / f"{assignment}.ipynb"
                        for student, bug in mix if bug is None)
        print_cold(assignment, *cold_one(notebook, assignment, workdir / assignment, kit_env, ROOT))
    if args.scale and assignment == (args.assignment or ASSIGNMENTS)[0]:
        scale_mix = student_mix(assignment, args.scale, False)
        scale_course = build_kit_course(workdir / assignment / "scale", assignment, kit_env)
        write_submissions(scale_course, assignment, scale_mix)
        seconds, progress, samples, peak, _ = run_batch(
            autograder_command([scale_course / "submitted"], assignment, workdir / assignment / "scale-out",
                               args.jobs), ROOT, kit_env, args.scale)
        print_scale(assignment, args.scale, args.jobs, seconds, progress, samples, peak)
    if kit_loop is not None:
        print(f"[{assignment}] the kit spent {kit_loop:.1f} s on {loop_student} (one of {args.jobs} jobs)")
    if missed:
        print(f"[{assignment}] WARNING: the kit's scores contradict the mix: {', '.join(missed)}")

    if not args.skip_nbgrader:
        plain_course = build_plain_course(workdir / assignment / "plain", assignment, env)
        write_submissions(plain_course, assignment, mix)
        nbgrader, done = timed(["nbgrader", "autograde", assignment], plain_course, env)
        students = [student for student, _ in mix]
        scores = nbgrader_scores(plain_course, assignment, students)
        problems = score_problems(scores, mix)
        if done.returncode or problems:
            sys.exit(f"[{assignment}] the plain-nbgrader baseline is not sane (exit {done.returncode}; "
                     f"correct notebooks must get full marks, bugs must lose points): {problems}\n"
                     f"{done.stderr[-3000:]}")
        waited = timeout_cells(plain_course, assignment, loop_student) * timeout if loop_student else 0
        line.update(nbgrader=nbgrader, waited=waited)
        print(f"[{assignment}] nbgrader autograde (plain asserts): {nbgrader:7.1f} s "
              f"({nbgrader / args.n * 1000:5.0f} ms/submission), {waited:.0f} s of it waiting for "
              f"timeouts; baseline sane: correct = full marks, " + ", ".join(
                  f"{student} {scores[student][0]:g}/{scores[student][1]:g}" for student, bug in mix if bug))
        print(f"[{assignment}] nbgrader/kit {nbgrader / kit:.1f}x (without the timeouts "
              f"{(nbgrader - waited) / kit:.1f}x); target at least {TARGET}x, i.e. the kit in "
              f"{nbgrader / TARGET:.1f} s; the checks alone take {alone:.1f} s of it "
              f"(at most {(nbgrader - waited) / alone:.0f}x with a free sandbox, wire and start-up)")
    return line


def print_table(lines, n):
    print(f"\nN = {n} submissions per assignment; seconds, end to end (process start included)")
    header = ("assignment", "nbgrader", "timeouts", "kit", "floor", "alone", "nbg/kit", "w/o t.o.",
              "nbg/alone", "kit/alone", "kit ms/sub", "nbg ms/sub")
    print("".join(f"{title:>11s}" for title in header))
    for line in lines:
        kit, nbgrader, waited = line["kit"], line.get("nbgrader"), line.get("waited")
        plain = nbgrader is not None
        values = [(nbgrader, ".1f"), (waited, ".0f"), (kit, ".1f"), (line["floor"], ".1f"),
                  (line["alone"], ".1f"), (plain and nbgrader / kit, ".1f"),
                  (plain and (nbgrader - waited) / kit, ".1f"),
                  (plain and (nbgrader - waited) / line["alone"], ".1f"), (kit / line["alone"], ".2f"),
                  (kit / n * 1000, ".0f"), (plain and nbgrader / n * 1000, ".0f")]
        print(f"{line['assignment']:>11s}" + "".join(
            f"{format(value, spec) if plain or value else '-':>11s}" for value, spec in values))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100, help="submissions per assignment (default 100)")
    parser.add_argument("--assignment", action="append", choices=ASSIGNMENTS,
                        help="assignment to measure (repeatable; default: all four; the transformer "
                             "without its training, on both sides)")
    parser.add_argument("--jobs", type=int, default=2, help="autograder grade --jobs (default 2)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of autograder grade per assignment; the median counts (default 3)")
    parser.add_argument("--skip-nbgrader", action="store_true", help="time only the kit")
    parser.add_argument("--skip-cold", action="store_true",
                        help="leave out one submission graded cold against python -c 'import torch'")
    parser.add_argument("--scale", type=int, default=0, metavar="M",
                        help="also grade M submissions of the first assignment: the seconds per "
                             "submission and the grader's RSS over each quarter (e.g. --scale 1000)")
    parser.add_argument("--scheduler", action="store_true",
                        help="also grade the N submissions with --scheduler local (a Dask "
                             "LocalCluster of --jobs processes) beside plain --jobs")
    parser.add_argument("--mix", action="store_true",
                        help="every 10th submission with a one-line bug and one endless loop "
                             "(default: N correct submissions, as the issue measures)")
    args = parser.parse_args()
    if args.mix and args.n < 10:
        parser.error("--n must be at least 10 (the mix needs a bug and an endless loop)")
    from nbgrader.preprocessors import Execute

    timeout = Execute.timeout.default_value
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    print(f"{args.n} submissions per assignment; kit --jobs {args.jobs}; {os.cpu_count()} cores; "
          f"nbgrader's default cell timeout (Execute.timeout) {timeout} s, kept for the baseline")
    compile_kit(env, ROOT)  # as scripts/setup.sh leaves an installed kit
    workdir = Path(tempfile.mkdtemp(prefix="bench-"))
    try:
        lines = [bench_assignment(assignment, args, workdir, env, timeout)
                 for assignment in args.assignment or ASSIGNMENTS]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print_table(lines, args.n)
    print(f"Targets: nbg/kit >= {TARGET}, kit/alone <= {ALONE_TARGET}, one submission cold <= "
          f"{COLD_TARGET}x python -c 'import torch'" + (", --scheduler local not slower than --jobs"
                                                         if args.scheduler else ""))


if __name__ == "__main__":
    main()
