"""Grading processes: ``--jobs N`` as N processes forked from the grader, not N threads.

A grading thread spends most of its time in Python (encoding requests, comparing results
with the reference), so threads of one process wait for each other's interpreter lock and
two of them grade barely faster than one. A ``GradingPool`` forks its processes once, right
after the grader has imported everything and before it starts any thread (a fork copies
only the calling thread, and the imports are then already done: milliseconds, not seconds).
Each process grades the submissions it is sent, on its own sandbox slot, with workers of the
grader's one zygote (``process.attach``), renders the student's reports and reads its code for
the similarity section (``finish``), and sends that back; the grader writes the files and
keeps only a slim record (``reports.kept``), so that its memory stays flat over a class.
Everything a grading process does is trusted code: only the sandboxed worker runs student
code, in the grading process as in a thread.

They die with the grader: a parent-death signal (``kill -9`` of the grader), ``process.stop``
(Ctrl-C, the end of the command), or the end of their task socket.
"""

import collections
import ctypes
import os
import signal
import socket
import sys
import threading
import traceback
from multiprocessing.connection import Connection, wait

from autograder.sandbox import process

PR_SET_PDEATHSIG = 1


class GradingPool:
    """``jobs`` grading processes for ``plan``, forked now (see the module's docstring)."""

    IN_FLIGHT = 2  # submissions sent ahead to each process, so that none waits for the next

    @staticmethod
    def possible():
        """Forking is safe only while this process runs one thread."""
        return threading.active_count() == 1 and hasattr(os, "fork")

    def __init__(self, plan, jobs):
        if not self.possible():
            raise RuntimeError("a grading pool is forked before any thread starts")
        import torch

        torch.set_num_threads(1)  # no thread pool of torch's is copied into a fork half-made
        from autograder.grading import grader

        grader.warm_up_shared(plan)  # what is made now is shared with the grading processes
        self.plan = plan
        self._children = {}  # pid -> Connection (the task socket)
        for slot in range(jobs):
            self._fork(slot)

    def _fork(self, slot):
        attachment = process.attach(slot)
        ours, theirs = socket.socketpair()
        parent = os.getpid()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # what is buffered now must not be written twice
        pid = os.fork()
        if pid == 0:  # the grading process: never returns
            status = 1
            try:
                ours.close()
                for sibling in self._children.values():  # the grader's ends, not ours
                    sibling.close()
                _serve(Connection(theirs.detach()), self.plan, slot, parent, attachment)
                status = 0
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(status)
        theirs.close()
        attachment.control.close()
        process.grading_process_started(pid)
        self._children[pid] = Connection(ours.detach())

    @property
    def size(self):
        return len(self._children)

    def grade_many(self, tasks, plan, on_fault, similar_inputs=None):
        """Yield each submission's ``finish.Finished`` as soon as it is graded (completion
        order), like ``batch.grade_many``. ``tasks``: (submission, changes to its record:
        fingerprint, late); ``similar_inputs``: as ``finish.finish`` takes them. A grading
        process that dies takes only the submissions it held with it: each becomes
        ``on_fault(submission, text)`` (a record); the others go on."""
        if plan is not self.plan:
            raise ValueError("this pool grades the plan it was forked with")
        todo = collections.deque(tasks)
        held = {pid: collections.deque() for pid in self._children}

        def send(pid):
            while todo and len(held[pid]) < self.IN_FLIGHT:
                task = todo.popleft()
                try:
                    self._children[pid].send((*task, similar_inputs))
                except OSError:
                    todo.appendleft(task)
                    return
                held[pid].append(task[0])

        for pid in list(self._children):
            send(pid)
        try:  # the grader owns the zygote (its grading processes only attach to it)
            process.shared_zygote()
        except (RuntimeError, process.WorkerFailure):
            pass  # each grading process reports it for its own submissions
        while any(held.values()) or (todo and self._children):
            by_connection = {self._children[pid]: pid for pid in held if pid in self._children}
            for connection in wait(list(by_connection)):
                pid = by_connection[connection]
                try:
                    kind, *payload = connection.recv()
                except (EOFError, OSError):  # it died (killed, out of memory)
                    self._end(pid)
                    lost = held.pop(pid)
                    for submission in lost:
                        yield on_fault(submission, "the grading process ended unexpectedly")
                    continue
                submission = held[pid].popleft()
                send(pid)
                if kind == "finished":
                    yield payload[0]
                else:
                    yield on_fault(submission, payload[0])
        for submission, _ in todo:  # every grading process died
            yield on_fault(submission, "no grading process is left")

    def _end(self, pid):
        connection = self._children.pop(pid)
        connection.close()
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except OSError:
            pass
        process.grading_process_ended(pid)

    def close(self):
        """End every grading process (each closes its zygote socket: its slot is cleaned)."""
        for pid in list(self._children):
            self._end(pid)


def _serve(tasks, plan, slot, parent, attachment):
    """The grading process: grade what comes, finish each record (its reports rendered, its
    similarity code read: ``finish``) and send that back, until the grader goes."""
    from autograder.grading import finish, grader
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the grader's to handle
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        return  # the grader died before the death signal was set
    process.adopt(attachment)
    while True:
        try:
            submission, changes, similar_inputs = tasks.recv()
        except (EOFError, OSError):
            return
        try:
            result = grader.grade(submission, plan, slot=slot).with_changes(**changes)
            message = ("finished", finish.finish(result, plan, similar_inputs))
        except Exception:  # a fault of the grader: that submission's error record
            text = traceback.format_exc()
            print(f"grader error on {submission.student}:\n{text}", file=sys.stderr, flush=True)
            message = ("fault", text)
        try:
            tasks.send(message)
        except OSError:
            return
