"""Recorded sub-layer calls count only once verified.

A check that grades a block from its recorded sub-layer calls (``ctx.record``, ``record_many``,
``grad_recording``) reads what the worker says each sub-layer got and returned. That worker ran
the block, so the block could have planted the results: a stash on its ``ffn`` that the ffn
returns instead of computing, a recorder edited through the wrapper's ``__closure__``. So after
the checks, every recorded call of a check that passed is replayed in a fresh worker (the
submission loaded anew, in a process that has never run a block): the object is built again as
it was (the same constructor arguments, the same weights copied in, the same seed for what it
initialises itself), and its sub-layer, reached by the recorded attribute path (or the recorded
module-level function), is called on the recorded arguments; the recorded result must come
back. A call the worker says it replaced by the grader's stand-in must fail there as the worker
claims (raise, or return another form), and its recorded result must be the stand-in the grader
offered. A check whose recorded calls do not verify fails, saying so.

What the student can reach: everything in the grading worker, the recorder included (its
wrapper, the closure, the list of records). Tampering with any of it changes what the records
say, never what the fresh worker computes; so it can only turn a verdict into a failure. The
block's own output must in turn be what the contract's wiring gives from the verified results
(the wiring checks compute that from the records).

The same holds for the calls a check makes of the target itself (``Recorded.whole``): a
property check compares two calls of one module, and a module that keeps state could make them
agree. They are made again last, in reverse order (``unverified``).

Two records that claim the same request (the same object, sub-layer or function, the same
arguments byte for byte, the same seed) are answered by one replay, compared with each recorded
result: what a fresh build computes from those inputs is the one thing both claims are checked
against (requests of one check's own calls never repeat: each has a seed of its own). A
recorded module-level function is called by name, so the block that called it is not built
for it: the function's result may depend on its inputs alone.
"""

import hashlib
import json
from dataclasses import dataclass

import torch

from autograder.checks import replay_results as results
from autograder.sandbox.process import StudentError, WorkerFailure
from autograder.sandbox.session import Method, RemoteObject, Session, SubModule
from autograder.sandbox.wire import Blob, RemoteTensor
from autograder.texts import bilingual

BATCH = 16  # requests per round trip (the worker's MAX_BATCH)


SELF = "<self>"  # a Call's name when the call was of the target object itself


@dataclass(frozen=True)
class Recorded:
    """What one recording request claims: the ``calls`` seen while ``target`` ran, and the
    stand-ins the grader offered ({name: [{"result": ..., "inputs": ...} per call]}). With
    ``whole``, the one call is of ``target`` itself, as a check made it (``Context.call``)."""

    target: object  # a RemoteObject, a SubModule or a function name
    calls: tuple  # recorded.Call
    standins: dict
    functions: tuple = ()  # the names recorded as module-level functions (the rest: attribute paths)
    whole: bool = False
    record: dict | None = None  # a whole call's recording ({"modules", "functions", "standins"}), made again with it


def unverified(session, recorded_by_check):
    """{check id: message} for the checks whose recorded calls a fresh worker does not give
    back; ``recorded_by_check``: {check id: [Recorded]} of the checks that passed.

    The calls a check made of the target itself (``Recorded.whole``) are made again last, in
    the reverse of their order: a module that keeps state from one call to the next (a stash
    of an earlier input or output) so that two calls agree, as a property check wants, is
    called first on what came second, before anything was stashed, and answers otherwise.

    Only what a replay needs is done in the fresh worker: the objects its requests call are
    built (a recorded module-level function is called by name, without its block), and a
    request identical to an earlier one (the same bytes: target, arguments, seed) is sent once,
    its answer compared with each recorded result that claims it (``_answers``)."""
    replays, wholes = [], []
    for check_id, recordings in recorded_by_check.items():
        for recording in recordings:
            owner = _owner(recording.target)
            if recording.whole:
                call = recording.calls[0]
                if _replayable(session, owner, call) and (owner is None or session.recipe(owner)):
                    message = session.call_message(recording.target, call.args, call.kwargs,
                                                   call.seed, recording.record, records_back=False)
                    wholes.append(_Replay(check_id, owner, message, call, None))
                continue
            for call in recording.calls:
                message = _replay_message(session, owner, call, recording.functions)
                if message is None:
                    continue
                offered = _offered(recording.standins, call) if call.replaced else None
                replays.append(_Replay(check_id, owner if "obj" in message["target"] else None,
                                       message, call, offered))
    replays += wholes[::-1]
    if not replays:
        return {}
    session.fresh_worker()
    failed = {}
    built = _build_again(session, {r.owner.id: r.owner for r in replays if r.owner is not None})
    ready = []
    for replay in replays:
        if replay.owner is not None and not built.get(replay.owner.id):
            failed.setdefault(replay.check_id, replay.call)
        else:
            ready.append(replay)
    genuine = [r for r in ready if not r.call.replaced]
    answers = _answers(session, [r.message for r in genuine])
    for replay, ok in zip(genuine, results.gives_back(answers, [r.call.output for r in genuine])):
        if not ok:
            failed.setdefault(replay.check_id, replay.call)
    for replay in (r for r in ready if r.call.replaced):
        offered = replay.offered
        if offered is None or not results.same(replay.call.output, offered) or not _fails_as_claimed(
                session, replay.message, replay.call, offered):
            failed.setdefault(replay.check_id, replay.call)
    whole = {id(r.call) for r in wholes}
    return {check_id: _whole_message(call.names[0]) if id(call) in whole else _message(call)
            for check_id, call in failed.items()}


@dataclass(frozen=True)
class _Replay:
    """One recorded call to make again: ``owner`` is the object its request calls (built again
    first; None for a module-level function), ``offered`` the stand-in of a replaced call."""

    check_id: str
    owner: object
    message: dict
    call: object
    offered: object


def _owner(target):
    if isinstance(target, (SubModule, Method)):
        return target.owner
    return target if isinstance(target, RemoteObject) else None


def _replay_message(session, owner, call, functions):
    """The request that calls the recorded sub-layer (by attribute path on the object built
    again) or module-level function on the recorded arguments; None when it cannot be replayed
    here (values not on the CPU, an object the session did not build)."""
    if _has_remote(call.args) or _has_remote(call.kwargs) or _has_remote(call.output):
        return None
    name = call.names[0]
    if name in functions:
        return session.call_message(name, call.args, call.kwargs, call.seed)
    if owner is None or session.recipe(owner) is None:
        return None
    return session.call_message(owner.sub(name), call.args, call.kwargs, call.seed)


def _replayable(session, owner, call):
    """A check's own call can be made again in a fresh worker: its object is built there as
    it was (not changed since), and its arguments and result are plain values."""
    if owner is not None and session.altered(owner):
        return False
    return _plain(call.args) and _plain(call.kwargs) and _plain(call.output)


def _plain(value):
    if isinstance(value, RemoteTensor):
        return False
    if isinstance(value, torch.Tensor):
        return value.device.type == "cpu" and value.layout == torch.strided
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def _has_remote(value):
    if isinstance(value, RemoteTensor):
        return True
    if isinstance(value, dict):
        return any(_has_remote(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_remote(v) for v in value)
    return False


def _offered(standins, call):
    for name in call.names:
        offered = standins.get(name) or []
        if call.index < len(offered):
            return offered[call.index].get("result")
    return None


def _build_again(session, owners):
    """Build every owner again in the fresh worker: {object id: built}. Its request is the one
    that built it, less the description of the object (nothing here reads it)."""
    built, recipes = {}, [(oid, session.recipe(owner)) for oid, owner in owners.items()]
    recipes = [(oid, {**r, "describe": False}) for oid, r in recipes if r is not None]
    for start in range(0, len(recipes), BATCH):
        chunk = recipes[start:start + BATCH]
        try:
            replies = session.batch([r for _, r in chunk])
        except (StudentError, WorkerFailure):
            replies = []
        for index, (oid, _) in enumerate(chunk):
            built[oid] = index < len(replies) and isinstance(replies[index], dict)
        if len(replies) < len(chunk):  # one raised: the rest again, one by one
            for oid, recipe in chunk[len(replies):]:
                try:
                    built[oid] = isinstance(session.batch([recipe])[0], dict)
                except (StudentError, WorkerFailure):
                    built[oid] = False
    return built


def _answers(session, messages):
    """The replies to these call requests, in order (None: no answer). A request that is the
    same as an earlier one, byte for byte, is not sent again: it gets the earlier one's reply
    (what a fresh build computes from those inputs is what both records claim). A request after
    one that raised is sent again, so that each call is answered on its own."""
    first = _first_identical(messages)
    unique = sorted(set(first))
    answers = {}
    for start in range(0, len(unique), BATCH):
        left = unique[start:start + BATCH]
        while left:
            try:
                replies = session.batch([messages[index] for index in left])
            except (StudentError, WorkerFailure):
                replies = [None] * len(left)
            answers.update(zip(left, replies))
            left = left[len(replies):]
    return [answers[index] for index in first]


def _first_identical(messages):
    """For each message, the index of the first one identical to it (itself if none is). Only
    requests of one target and one seed can be identical: their content is compared."""
    first = list(range(len(messages)))
    by_seed = {}
    for index, message in enumerate(messages):
        by_seed.setdefault(message.get("seed"), []).append(index)
    # Seeds are nearly all distinct: the targets are written out only where a seed is shared.
    for same_seed in by_seed.values():
        if len(same_seed) < 2:
            continue
        groups = {}
        for index in same_seed:
            groups.setdefault(json.dumps(messages[index].get("target"), sort_keys=True), []).append(index)
        for indices in groups.values():
            if len(indices) > 1:
                seen = {}
                for index in indices:
                    first[index] = seen.setdefault(_fingerprint(messages[index]), index)
    return first


def _fingerprint(message):
    """A request's content, tensors by a digest of their bytes (with dtype and shape)."""
    return json.dumps(message, sort_keys=True, default=_blob_digest)


def _blob_digest(value):
    if not isinstance(value, Blob):
        raise TypeError(f"{type(value).__name__} cannot go on the wire")
    return hashlib.blake2b(value.data, digest_size=20).hexdigest()


def _fails_as_claimed(session, message, call, offered):
    """The sub-layer, called again, raises (as the worker said) or returns another form than
    the stand-in (as the worker said)."""
    try:
        reply = session.batch([message])[0]
    except WorkerFailure:
        return False
    if "raised" in call.replaced:
        return isinstance(reply, StudentError)
    if not isinstance(reply, dict):
        return False
    try:
        result = Session.call_result(reply)
    except WorkerFailure:
        return False
    if call.replaced.get("non_finite"):  # NaN or inf everywhere, as the worker said
        return results.nothing_finite(result)
    return not results.same_form(result, offered)


def _message(call):
    name = call.names[0]
    return bilingual(
        f"Hasil panggilan `{name}` yang terekam tidak dapat diulang: `{name}` yang dibuat ulang "
        "dengan bobot yang sama, di proses baru, memberi hasil lain dari masukan yang sama. Sub-layer "
        "harus menghitung hasilnya dari masukannya saja (tanpa keadaan yang disimpan blok atau "
        "panggilan sebelumnya).",
        f"The recorded result of `{name}` cannot be reproduced: `{name}`, built again with the same "
        "weights in a fresh process, returns something else from the same inputs. A sub-layer must "
        "compute its result from its inputs alone (no state the block or earlier calls left "
        "behind).")


def _whole_message(name):
    what = "modul" if name == SELF else f"`{name}`"
    what_en = "the module" if name == SELF else f"`{name}`"
    return bilingual(
        f"Hasil yang diberikan {what} tidak dapat diulang: {what} yang dibuat ulang dengan bobot "
        "yang sama, di proses baru, memberi hasil lain dari masukan yang sama. Keluaran harus "
        "dihitung dari masukan saja, tanpa keadaan yang disimpan dari panggilan sebelumnya (variabel "
        "global, atribut, cache).",
        f"The result {what_en} gave cannot be reproduced: {what_en}, built again with the same "
        "weights in a fresh process, returns something else from the same inputs. The output must "
        "be computed from the inputs alone, with no state kept from earlier calls (globals, "
        "attributes, caches).")
