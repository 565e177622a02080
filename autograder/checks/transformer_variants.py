"""Assignment 4's targets for the diagnosis (``checks.variants``): how each is probed and what
the reference computes with a catalogued mistake switched on (the flags below), in the trusted
process. The model runs with its own blocks and the reference's weights copied in; train_step
and greedy_decode run on the grader's given models (``assembly``)."""

import copy
import math

import torch
import torch.nn.functional as F

import solutions
from autograder.checks import assembly
from autograder.checks.steps import Stepper, toy_batch
from autograder.checks.targets import GREEDY, SHIFT, TRAIN, TRANSFORMER
from autograder.checks.variants import Model, model

BOS = assembly.BOS


def _embedded(model_, table, tokens, flags):
    d_model = table.weight.shape[1]
    x = table.weight[tokens]
    pe = solutions.positional_encoding(tokens.shape[1], d_model).to(x.dtype)
    if "no_pe" in flags:
        pe = torch.zeros_like(pe)
    if "no_sqrt" in flags:
        return x + pe
    if "scale_after_pe" in flags:
        return (x + pe) * math.sqrt(d_model)
    return x * math.sqrt(d_model) + pe


def _transformer(ref, src, tgt, flags):
    """(logits, memory) of the reference module ``ref`` (float64) with ``flags``."""
    encoders = list(ref.encoder)
    if "shared_encoder" in flags:  # weights copied by name into one block: the last layer's stay
        encoders = [encoders[-1]] * len(encoders)
    h = _embedded(ref, ref.src_embed, src, flags)
    for block in encoders:
        h = block(h)
    memory = h if "no_enc_norm" in flags else ref.enc_norm(h)
    g = _embedded(ref, ref.tgt_embed, tgt, flags)
    for block in ref.decoder:
        g = block(g, memory)[0]
    return ref.generator(g if "no_dec_norm" in flags else ref.dec_norm(g)), memory


@model(TRANSFORMER)
class TransformerModel(Model):
    def probe(self, kit):
        args = (7, 9, kit.z.d, kit.z.h, kit.z.f, 2, 16)
        obj, ref, _ = kit.module(TRANSFORMER, *args)
        g = kit.generator
        src, tgt = torch.randint(0, 7, (2, 5), generator=g), torch.randint(0, 9, (2, 4), generator=g)
        logits = kit.call(obj, src, tgt, count=1)[0]
        memory = kit.call(obj.method("encode"), src, count=1)[0]
        return {"logits": logits, "memory": memory}, {"ref": ref, "src": src, "tgt": tgt}

    def expected(self, i, flags, fill):
        ref = copy.deepcopy(i["ref"]).double().eval()
        logits, memory = _transformer(ref, i["src"], i["tgt"], flags)
        return {"logits": logits, "memory": memory}


@model(SHIFT)
class ShiftRight(Model):
    def probe(self, kit):
        y = torch.randint(0, 10, (3, 6), generator=kit.generator)
        out = kit.call(SHIFT, y, BOS, count=1)[0]
        return {"out": out.double() if isinstance(out, torch.Tensor) else out}, {"y": y}

    def expected(self, i, flags, fill):
        y = i["y"]
        start = torch.full_like(y[:, :1], BOS)
        if "no_shift" in flags:
            out = y
        elif "shift_drops_first" in flags:
            out = torch.cat([start, y[:, 1:]], dim=1)
        else:
            out = torch.cat([start, y[:, :-1]], dim=1)
        return {"out": out.double()}


@model(TRAIN)
class TrainStep(Model):
    """Two steps of the student's train_step on the given reference model (chapter sizes): the
    first loss, and the generator's weight after both steps (its gradient is never zero)."""

    def probe(self, kit):
        c = kit.chapter
        args = (10, 11, c.d_model, c.num_heads, c.d_ff, 2, 32)
        ref, values = assembly.reference_model(kit.ctx, args)
        session = kit.ctx.session
        session.define(assembly.given_source())
        remote = session.new_given("Transformer", args, values)
        optimizer = session.optimizer(remote, 3e-3)
        g = torch.Generator().manual_seed(7)
        batches = [toy_batch(8, 5, g) for _ in range(2)]
        losses, states = session.train(TRAIN, remote, optimizer, batches)
        loss = torch.tensor([losses[0]], dtype=torch.float64) if losses[0] is not None else None
        weight = states[-1]["params"].get("generator.weight")
        return ({"loss": loss, "generator": weight},
                {"args": args, "start": {k: v.detach().clone() for k, v in ref.named_parameters()},
                 "batches": batches})

    def expected(self, i, flags, fill):
        stepper = Stepper(i["args"], 3e-3)
        model_, optimizer = stepper.load({"params": i["start"], "adam": {}})
        with torch.enable_grad():
            losses = []
            for index, (src, tgt_in, tgt_out) in enumerate(i["batches"]):
                model_.train()
                if index == 0 or "no_zero_grad" not in flags:
                    optimizer.zero_grad()
                logits = model_(src, tgt_in).reshape(-1, model_.generator.out_features)
                scores = logits.softmax(-1) if "softmax_before_ce" in flags else logits
                loss = F.cross_entropy(scores, tgt_out.reshape(-1))
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
        return {"loss": torch.tensor([losses[0]], dtype=torch.float64),
                "generator": model_.generator.weight.detach().double()}


@model(GREEDY)
class GreedyDecode(Model):
    """The scripted models: the next token reads the prefix (causal) or the whole target."""

    def probe(self, kit):
        outputs, inputs = {}, {}
        session = kit.ctx.session
        session.define(assembly.given_source())
        src = torch.randint(0, 10, (4, 5), generator=kit.generator)
        for causal, key in ((True, "prefix"), (False, "whole")):
            remote = session.new_given("ScriptedPrefix" if causal else "ScriptedWhole", (11,))
            out = kit.call(GREEDY, remote, src, BOS, 6, count=1)[0]
            outputs[key] = out.double() if isinstance(out, torch.Tensor) else out
        inputs["src"] = src
        return outputs, inputs

    def expected(self, i, flags, fill):
        found = {}
        for model_, key in zip(assembly.scripted_classes(), ("prefix", "whole")):
            scripted = model_(11)
            memory = scripted.encode(i["src"])
            out = torch.full((i["src"].shape[0], 1), BOS, dtype=torch.long)
            for _ in range(6):
                if "last_token_only" in flags:
                    logits = scripted.decode(out[:, -1:], memory)
                else:
                    logits = scripted.decode(out, memory)
                if "all_positions" in flags:
                    out = torch.cat([out[:, :1], logits.argmax(-1)], dim=1)
                else:
                    out = torch.cat([out, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
            found[key] = out[:, 1:].double()
        return found
