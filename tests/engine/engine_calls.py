"""One call (or a few) of every public engine and figure function, for the RNG and thread tests.

``ENGINE_CALLS`` maps ``"module.function[variant]"`` to a no-argument callable that builds its
own inputs (or reads inputs nobody mutates), so it can run in any thread, any number of times,
and must return the same value every time. The part before ``[`` names what it covers:
``tests/engine/test_engine_coverage.py`` fails when a public function of any ``attnviz`` module
is missing here.

Calls that draw from torch's global generator by design (training-mode dropout handed in by the
caller, a buggy step that keeps dropout on) run inside :func:`attnviz.seeding.seeded`, the way
the app must call them; their names say ``in seeded``. Everything else is called bare, so a draw
outside the helper changes the generator's state and fails the RNG test.
"""

from __future__ import annotations

import threading
from dataclasses import replace

import numpy as np
import torch
import torch.nn as nn

from attnviz import book as BK
from attnviz import budget as BU
from attnviz import bugs as B
from attnviz import checks as C
from attnviz import figures as F
from attnviz import inputs as I
from attnviz import learn as LN
from attnviz import lesson as L
from attnviz import modules as M
from attnviz import runtime as RT
from attnviz import settings as ST
from attnviz import speed as SP
from attnviz import tokens as TK
from attnviz import trace as T
from attnviz.scaling import scaling_study
from attnviz.seeding import rng_lock_held_by_me, seeded
from attnviz.settings import Settings
from tests.pretrained.calls import pretrained_calls

from .helpers import IDS_A, IDS_B, labels, random_x, typed_batch

KINDS = ("v1", "v2", "causal", "wrapper", "mha")
TEXT = "Your journey starts with one step"
TEXT2 = "The <b>quick</b> brown fox 🦊 jumps"


def _engine_calls():
    s = Settings(dropout=0.5, training=True)
    x = typed_batch(16, n=6)
    lab = labels(6)
    spec_causal = L.spec_causal(s)
    spec_mha = L.spec_multihead(s)
    calls = {}
    for kind in KINDS:
        spec = T.ModuleSpec(kind, 16, 4 if kind == "wrapper" else 8, 32, 0.5, 2, True, 123)
        calls[f"trace.ModuleSpec.build[{kind}]"] = spec.build
        calls[f"trace.ModuleSpec.build[{kind}, seed=None]"] = replace(spec, seed=None).build

    causal_train = T.trace_causal(spec_causal, x, lab, training=True, dropout_seed=7)
    mha_eval = T.trace_multihead(spec_mha, x, lab)
    calls.update(
        {
            "trace.trace_simplified": lambda: T.trace_simplified(x[0], lab),
            "trace.trace_trainable[v1]": lambda: T.trace_trainable(
                L.spec_trainable(s, "v1"), x[0], lab
            ),
            "trace.trace_trainable[v2]": lambda: T.trace_trainable(L.spec_trainable(s), x[0], lab),
            "trace.trace_causal[train, p=0.5]": lambda: T.trace_causal(
                spec_causal, x, lab, training=True, dropout_seed=7
            ),
            "trace.trace_causal[eval]": lambda: T.trace_causal(spec_causal, x, lab),
            "trace.trace_multihead[train]": lambda: T.trace_multihead(
                spec_mha, x, lab, training=True, dropout_seed=7
            ),
            "trace.trace_wrapper[train]": lambda: T.trace_wrapper(
                L.spec_wrapper(s), x, lab, training=True, dropout_seed=7
            ),
            "trace.unmasked_scores": lambda: T.unmasked_scores(causal_train),
            "trace.causal_mask": lambda: T.causal_mask(causal_train),
            "trace.renormalized_weights": lambda: T.renormalized_weights(causal_train),
            "trace.dropout_mask": lambda: T.dropout_mask(causal_train),
            "trace.context_dropout": lambda: T.context_dropout(causal_train, 0.5, 9),
            "trace.strides_table": lambda: T.strides_table(mha_eval),
            "trace.loop_scores": lambda: T.loop_scores(x[0]),
            "trace.naive_softmax": lambda: T.naive_softmax(mha_eval["attn_scores"] * 50),
            "trace.sum_normalize": lambda: T.sum_normalize(mha_eval["attn_scores"]),
        }
    )
    calls.update(_check_calls(x, lab))
    for bug in B.BUGS:
        spec = {
            "simplified": None,
            "trainable": L.spec_trainable(s),
            "causal": spec_causal,
            "multihead": spec_mha,
        }[bug.pass_kind]
        bx = {"simplified": I.book_inputs(), "trainable": x[0]}.get(bug.pass_kind, x)
        calls[f"bugs.run_bug[{bug.key}]"] = lambda b=bug, xx=bx, sp=spec: B.run_bug(b, xx, sp)
        calls[f"bugs.correct_check[{bug.key}]"] = lambda b=bug, xx=bx, sp=spec: B.correct_check(
            b, xx, sp
        )
    calls.update(_bug_step_calls(x, s))
    calls.update(_figure_calls(mha_eval, lab))
    calls.update(_lesson_calls(s))
    calls.update(_learn_calls())
    calls.update(_input_and_token_calls())
    calls.update(_module_calls(x))
    calls.update(_small_calls())
    calls["scaling.scaling_study"] = lambda: scaling_study(d_ks=(1, 4), n_keys=4, rows=8)
    return calls


def _check_calls(x, lab):
    spec_mha = T.ModuleSpec("mha", 16, 16, 32, 0.5, 2, False, 3)  # d_in == d_out: torch MHA runs
    spec_narrow = T.ModuleSpec("mha", 16, 8, 32, 0.5, 2, True, 3)  # d_in != d_out: n/a
    xs = typed_batch(16, n=6)
    simp = T.trace_simplified(x[0], lab)
    causal = T.trace_causal(T.ModuleSpec("causal", 16, 8, 32, 0.5), x, lab)
    mh = T.trace_multihead(spec_mha, xs, lab)

    def build(p):
        return replace(spec_mha, dropout=p).build()

    return {
        "checks.rows_sum_to_one": lambda: C.rows_sum_to_one(simp["attn_weights"]),
        "checks.weights_are_softmax": lambda: C.weights_are_softmax(
            simp["attn_scores"], simp["attn_weights"]
        ),
        "checks.loops_equal_matmul": lambda: C.loops_equal_matmul(
            simp["inputs"], simp["loop_scores"]
        ),
        "checks.naive_softmax_matches": lambda: C.naive_softmax_matches(simp["attn_scores"] * 100),
        "checks.masking_routes_agree": lambda: C.masking_routes_agree(
            T.renormalized_weights(causal), causal["attn_weights"], causal["scaled_scores"]
        ),
        "checks.no_future_leak": lambda: C.no_future_leak(build(0.0).eval(), xs),
        "checks.heads_equal_loop": lambda: C.heads_equal_loop(
            mh["queries"], mh["keys"], mh["values"], mh["merged"], 2, T.causal_mask(mh).bool()
        ),
        "checks.wrapper_equals_split": lambda: C.wrapper_equals_split(build(0.5), xs),
        "checks.v1_equals_v2": lambda: C.v1_equals_v2(
            T.ModuleSpec("v1", 16, 8).build(), T.ModuleSpec("v2", 16, 8).build(), x[0]
        ),
        "checks.matches_sdpa": lambda: C.matches_sdpa(
            mh["queries_heads"], mh["keys_heads"], mh["values_heads"], mh["context_vec"], True
        ),
        "checks.matches_torch_mha": lambda: C.matches_torch_mha(build(0.5), xs),
        "checks.eval_ignores_dropout": lambda: C.eval_ignores_dropout(
            lambda m, inp: m(inp), build, xs, 0.5
        ),
        "checks.batch_rows_independent": lambda: C.batch_rows_independent(build(0.0).eval(), xs),
        "checks.same_output_as_mha": lambda: C.same_output_as_mha(
            build(0.0).eval(), xs, build(0.0).eval()(xs), "t"
        ),
        "checks.same_output_as_mha[reference]": lambda: C.same_output_as_mha(
            build(0.0), xs, build(0.0).eval()(xs), "t", C.mha_reference(build(0.0), xs)
        ),
        "checks.torch_mha_weights_match": lambda: C.torch_mha_weights_match(build(0.5), xs),
        # helpers the checks and the comparison page share
        "checks.tolerance": lambda: C.tolerance(800.0, 64),
        "checks.wrapper_from_mha": lambda: C.wrapper_from_mha(build(0.5)),
        "checks.wrapper_from_mha[bias]": lambda: C.wrapper_from_mha(spec_narrow.build()),
        "checks.torch_mha_from": lambda: C.torch_mha_from(build(0.5)),
        "checks.torch_mha_from[d_in != d_out]": lambda: C.torch_mha_from(spec_narrow.build()),
        "checks.torch_mha_na": lambda: C.torch_mha_na(build(0.5)),
        "checks.torch_mha_na[d_in != d_out]": lambda: C.torch_mha_na(spec_narrow.build()),
        "checks.torch_mha_forward": lambda: C.torch_mha_forward(build(0.5), xs),
        "checks.torch_mha_forward[d_in != d_out]": lambda: C.torch_mha_forward(
            spec_narrow.build(), xs
        ),
        "checks.mha_reference": lambda: C.mha_reference(build(0.5), xs),
        "checks.matches_torch_mha[d_in != d_out]": lambda: C.matches_torch_mha(
            spec_narrow.build(), xs
        ),
    }


def _bug_step_calls(x, s):
    """The buggy steps themselves, and the pass runner they plug into."""
    q, k = random_x((6, 8), 1), random_x((6, 8), 2)
    scores = random_x((2, 6, 6), 3)
    square = random_x((2, 8, 8), 4)  # T == context_length: the unsliced mask fits
    weights = torch.softmax(scores, dim=-1)
    mask = torch.triu(torch.ones(8, 8), diagonal=1)
    causal_spec = L.spec_causal(s)

    def dropout_always():
        with seeded(21):
            return B.apply_dropout_always(weights, nn.Dropout(0.5).eval())

    def run(kind, spec, inputs):
        module = spec.build().eval() if spec is not None else None
        with torch.inference_mode():
            return B.run_steps(kind, module, inputs)

    return {
        "bugs.softmax_rows_wrong_axis": lambda: B.softmax_rows_wrong_axis(scores),
        "bugs.softmax_rows_divide_by_sum": lambda: B.softmax_rows_divide_by_sum(scores),
        "bugs.scale_scores_missing": lambda: B.scale_scores_missing(scores, 8),
        "bugs.key_width_d_out": lambda: B.key_width_d_out(k),
        "bugs.mask_future_with_zero": lambda: B.mask_future_with_zero(scores.clone(), mask, 6),
        "bugs.mask_future_unsliced": lambda: B.mask_future_unsliced(square.clone(), mask, 8),
        "bugs.renormalize_causal_unmasked": lambda: B.renormalize_causal_unmasked(weights, mask, 6),
        "bugs.apply_dropout_always[in seeded]": dropout_always,
        "bugs.attention_scores_global_transpose": lambda: B.attention_scores_global_transpose(q, k),
        "bugs.split_heads_without_transpose": lambda: B.split_heads_without_transpose(
            random_x((2, 6, 8), 5), 2, 4
        ),
        "bugs.bugs_for": lambda: [b.key for b in B.bugs_for("causal")],
        "bugs.run_steps[simplified]": lambda: run("simplified", None, I.book_inputs()),
        "bugs.run_steps[trainable]": lambda: run("trainable", L.spec_trainable(s), x[0]),
        "bugs.run_steps[causal]": lambda: run("causal", causal_spec, x),
        "bugs.run_steps[multihead]": lambda: run("multihead", L.spec_multihead(s), x),
    }


def _figure_calls(mh, lab):
    w = mh["attn_weights"][0]
    z = np.arange(30, dtype=np.float32).reshape(5, 6)
    return {
        "figures.heatmap": lambda: F.heatmap(w[0], lab, lab, title="w"),
        "figures.heatmap[signed]": lambda: F.heatmap(
            mh["attn_scores"][0, 0], lab, lab, title="s", kind="signed"
        ),
        "figures.heatmap[outline, no annotation]": lambda: F.heatmap(
            w[1], lab, lab, title="o", outline_rows=(1, 3), annotate=False, height=300
        ),
        "figures.heatmap[mask]": lambda: F.heatmap(
            T.causal_mask(mh), lab, lab, title="m", kind="mask"
        ),
        "figures.bars": lambda: F.bars(w[0, 2], lab, title="b", ymax=1.0, highlight=2),
        "figures.grouped_bars": lambda: F.grouped_bars(
            {"a": w[0, 1].numpy(), "b": w[1, 1].numpy()}, lab, title="g"
        ),
        "figures.heads_grid": lambda: F.heads_grid(w, lab, title="h"),
        "figures.lines": lambda: F.lines(
            [1, 2, 3], {"y": np.ones(3)}, title="l", x_name="x", y_name="y"
        ),
        "figures.lines[log, range]": lambda: F.lines(
            [1, 2, 4],
            {"y": np.arange(3.0)},
            title="l",
            x_name="x",
            y_name="y",
            log_x=True,
            markers=False,
            y_range=(0.0, 1.0),
        ),
        "figures.relative_to_uniform": lambda: F.relative_to_uniform(w[0], lab, title="r"),
        "figures.ratio_to_uniform": lambda: F.ratio_to_uniform(w[0]),
        "figures.figure_bytes": lambda: F.figure_bytes(F.heatmap(w[0], lab, lab, title="w")),
        "figures.histograms": lambda: F.histograms({"w": w.numpy()}, title="h"),
        "figures.timing_bars": lambda: F.timing_bars(["a", "b"], [1.0, 2.0], [1.0, 2.0], title="t"),
        "figures.timing_bars[whiskers]": lambda: F.timing_bars(
            ["<b>a</b>", "b"],
            [1.0, 2.0],
            [1.0, 2.0],
            title="t",
            low_ms=[0.5, 1.5],
            high_ms=[1.5, 2.5],
            highlight={1},
        ),
        "figures.axis_labels": lambda: F.axis_labels(["0: <b>", "1: " + "x" * 40]),
        "figures.escape_label": lambda: F.escape_label("<img src=x onerror=alert(1)>"),
        "figures.dim_labels": lambda: F.dim_labels(4, prefix="d"),
        "figures.crop": lambda: F.crop(z, list("abcde"), list("abcdef"), max_side=3),
    }


def _lesson_calls(s):
    prep = L.prepare(TEXT, s)
    book = L.prepare("", s, use_book=True)
    batch = L.prepare_batch(TEXT, TEXT2, s)
    book_batch = L.prepare_batch("", "", s, use_book=True)
    calls = {
        "lesson.prepare": lambda: L.prepare(TEXT, s),
        "lesson.prepare[book]": lambda: L.prepare("", s, use_book=True),
        "lesson.prepare[empty]": lambda: L.prepare("", s),
        "lesson.prepare[capped]": lambda: L.prepare(TEXT, replace(s, max_tokens=3)),
        "lesson.prepare_batch": lambda: L.prepare_batch(TEXT, TEXT2, s),
        "lesson.prepare_batch[book]": lambda: L.prepare_batch("", "", s, use_book=True),
        "lesson.prepare_batch[cut to context]": lambda: L.prepare_batch(
            TEXT, TEXT2, replace(s, context_length=3)
        ),
        "lesson.causal_batch": lambda: L.causal_batch(batch, s),
        "lesson.causal_batch[book]": lambda: L.causal_batch(book_batch, s, use_book=True),
        "lesson.within_context": lambda: L.within_context(prep, 32),
        "lesson.within_context[cut]": lambda: L.within_context(prep, 3),
        "lesson.tokenizer_status": L.tokenizer_status,
        "lesson.spec_trainable": lambda: L.spec_trainable(s, "v1"),
        "lesson.spec_causal": lambda: L.spec_causal(s),
        "lesson.spec_multihead": lambda: L.spec_multihead(s),
        "lesson.spec_wrapper": lambda: L.spec_wrapper(s),
    }
    for name, p in (("typed", prep), ("book", book)):
        calls.update(
            {
                f"lesson.simplified[{name}]": lambda p=p: L.simplified(p),
                f"lesson.trainable[{name}]": lambda p=p: L.trainable(p, s),
                f"lesson.trainable[{name}, v1]": lambda p=p: L.trainable(p, s, "v1"),
                f"lesson.causal[{name}]": lambda p=p: L.causal(p, s),
                f"lesson.multihead[{name}]": lambda p=p: L.multihead(p, s),
                f"lesson.wrapper[{name}]": lambda p=p: L.wrapper(p, s),
            }
        )
    return calls


# A run of a few steps on a few short sequences: the same code path as the page, in milliseconds.
LEARN_TINY = LN.LearnConfig(
    task="shift", k=1, steps=3, vocab=3, seq_len=4, d_out=4, batch_size=8, snapshots=2, seed=5
)
LEARN_TINY_MARKED = replace(LEARN_TINY, task="marked", num_heads=2)


def _learn_calls():
    cfg, marked = LEARN_TINY, LEARN_TINY_MARKED
    ex = LN.example(cfg)

    def train_with_progress():
        progress = []
        result = LN.train(marked, on_progress=lambda step, total: progress.append((step, total)))
        return result, progress

    def weights(c):
        return LN.attention_weights(LN.build_model(c), LN.example(c).tokens)

    def logits():
        return random_x((2, cfg.seq_len, cfg.num_classes), 6)

    return {
        "learn.train": lambda: LN.train(cfg),
        "learn.train[marked, progress]": train_with_progress,
        "learn.build_model": lambda: LN.build_model(cfg),
        "learn.attention_weights": lambda: weights(marked),
        "learn.class_names": lambda: LN.class_names(cfg),
        "learn.example": lambda: LN.example(cfg),
        "learn.example[marked]": lambda: LN.example(marked),
        "learn.example_rows": lambda: LN.example_rows(marked),
        "learn.expected_pattern": lambda: LN.expected_pattern(ex.expected_key[0], cfg.seq_len),
        "learn.expected_share": lambda: LN.expected_share(weights(cfg), ex.expected_key),
        "learn.pattern_share": lambda: LN.pattern_share(
            weights(cfg)[0], LN.expected_pattern(ex.expected_key[0], cfg.seq_len)
        ),
        "learn.held_out": lambda: LN.held_out(cfg, size=16),
        "learn.make_batch": lambda: LN.make_batch(cfg, torch.Generator().manual_seed(1), 4),
        "learn.make_batch[marked]": lambda: LN.make_batch(
            marked, torch.Generator().manual_seed(1), 4
        ),
        "learn.shift_batch": lambda: LN.shift_batch(torch.Generator().manual_seed(2), 3, 5, 6, 2),
        "learn.marked_batch": lambda: LN.marked_batch(torch.Generator().manual_seed(3), 3, 5, 6),
        "learn.marked_batch[mark_at]": lambda: LN.marked_batch(
            torch.Generator().manual_seed(3), 3, 5, 6, mark_at=2
        ),
        "learn.masked_loss": lambda: LN.masked_loss(logits(), ex.targets.expand(2, -1)),
        "learn.masked_accuracy": lambda: LN.masked_accuracy(logits(), ex.targets.expand(2, -1)),
        "learn.snapshot_steps": lambda: LN.snapshot_steps(120, 16),
        "learn.token_labels": lambda: LN.token_labels(marked, LN.example(marked).tokens[0]),
    }


def _input_and_token_calls():
    tok_a = TK.tokenize(TEXT)
    tok_b = TK.tokenize(TEXT2)

    def tokenizer_summary(tokenizer):
        return tokenizer.status, tokenizer.encode(TEXT + "<|endoftext|>")

    return {
        "inputs.book_inputs": I.book_inputs,
        "inputs.book_batch": I.book_batch,
        "inputs.embed": lambda: I.embed(IDS_A, 16, 5),
        "inputs.embed[Tokens]": lambda: I.embed(tok_b, 12, 5),
        "inputs.embed_batch": lambda: I.embed_batch(tok_a, tok_b, 16, 5),
        "inputs.token_embedding": lambda: I.token_embedding(IDS_B + IDS_B[:2], 8, 5),
        "inputs.position_embedding": lambda: I.position_embedding(6, 8, 5),
        "tokens.tokenize": lambda: TK.tokenize(TEXT2),
        "tokens.tokenize[cap, endoftext]": lambda: TK.tokenize(TEXT + "<|endoftext|>", cap=4),
        "tokens.cache_dir": TK.cache_dir,
        "tokens.cache_problems": TK.cache_problems,
        "tokens.get_tokenizer": lambda: tokenizer_summary(TK.get_tokenizer()),
        "tokens.load_tokenizer[no network]": lambda: tokenizer_summary(
            TK.load_tokenizer(allow_network=False)
        ),
        "tokens.piece_display": lambda: [TK.piece_display(p) for p in (b" a", b"\n", b"\xe2\x80")],
        "tokens.group_characters": lambda: TK.group_characters((b"a", b"\xe2\x80", b"\x99", b"b")),
        "book.printed": lambda: BK.printed("masking_masked_scores"),
        "book.matches_printout": lambda: BK.matches_printout(BK.printed("sa_v2"), "sa_v2"),
        "book.book_batch_inputs": BK.book_batch_inputs,
    }


def _module_calls(x):
    """The chapter's steps and shared forward functions, called directly."""
    q, k, v = (random_x((2, 6, 8), seed) for seed in (11, 12, 13))
    mask = torch.triu(torch.ones(8, 8), diagonal=1)
    scores = M.attention_scores(q, k)
    weights = torch.softmax(scores, dim=-1)
    spec_causal = T.ModuleSpec("causal", 16, 8, 8, 0.5, 1, True, 4)
    spec_mha = T.ModuleSpec("mha", 16, 8, 8, 0.5, 2, False, 4)

    def recorded(forward, module, inputs):
        rec = {}
        out = forward(module, inputs, rec.__setitem__)
        return out, rec

    def attend_dropout():
        dropout = nn.Dropout(0.5).train()
        with seeded(31):
            return M.attend(q, k, v, mask, dropout, {}.__setitem__)

    def apply_dropout_train():
        with seeded(32):
            return M.apply_dropout(weights, nn.Dropout(0.5).train())

    def causal_train():
        module = spec_causal.build().train()
        with seeded(33):
            return recorded(M.causal_attention, module, x)

    return {
        "modules.attention_scores": lambda: M.attention_scores(q, k),
        "modules.mask_future": lambda: M.mask_future(scores.clone(), mask, 6),
        "modules.key_width": lambda: M.key_width(k),
        "modules.scale_scores": lambda: M.scale_scores(scores, 8),
        "modules.softmax_rows": lambda: M.softmax_rows(scores),
        "modules.apply_dropout[eval]": lambda: M.apply_dropout(weights, nn.Dropout(0.5).eval()),
        "modules.apply_dropout[train, in seeded]": apply_dropout_train,
        "modules.renormalize_causal": lambda: M.renormalize_causal(weights, mask, 6),
        "modules.context_vectors": lambda: M.context_vectors(weights, v),
        "modules.split_heads": lambda: M.split_heads(q, 2, 4),
        "modules.merge_heads": lambda: M.merge_heads(M.split_heads(q, 2, 4), 8),
        "modules.attend": lambda: M.attend(q, k, v),
        "modules.attend[mask, eval dropout]": lambda: M.attend(
            q, k, v, mask, nn.Dropout(0.5).eval()
        ),
        "modules.attend[dropout, in seeded]": attend_dropout,
        "modules.self_attention[v1]": lambda: M.self_attention(
            T.ModuleSpec("v1", 16, 8).build(), x[0]
        ),
        "modules.self_attention[v2, record]": lambda: recorded(
            M.self_attention, T.ModuleSpec("v2", 16, 8, qkv_bias=True).build(), x[0]
        ),
        "modules.causal_attention[eval]": lambda: M.causal_attention(spec_causal.build().eval(), x),
        "modules.causal_attention[train, in seeded]": causal_train,
        "modules.multi_head_attention[eval, record]": lambda: recorded(
            M.multi_head_attention, spec_mha.build().eval(), x
        ),
    }


_RUNTIME_LOCK = threading.Lock()


def _configure_threads_then_forget() -> int:
    """``configure_threads`` acts once per process; forget that it ran, so the test does not
    decide the process's setting for the tests (and the app) that come later."""
    with _RUNTIME_LOCK:
        saved = RT._configured  # noqa: SLF001 - restored right after
        try:
            return RT.configure_threads()
        finally:
            RT._configured = saved  # noqa: SLF001


def _small_calls():
    s = Settings()
    xl = Settings(**ST.GPT2_XL)

    def slot(settings, tokens):
        with BU.heavy_slot(settings, tokens) as took:
            return took

    def timing_summary():
        # Times differ from run to run by nature: what must not differ is what was timed.
        timed = SP.wrapper_against_split(2, 3, 4, 4, 2, 4, True)
        medians = timed["median"]
        assert SP.MIN_RUNS <= timed["runs"] <= SP.MAX_RUNS
        return sorted(medians), all(t > 0 for t in medians.values())

    def seeded_draw():
        with seeded(7):
            return torch.rand(3), rng_lock_held_by_me()

    return {
        "settings.validate": lambda: ST.validate(s),
        "settings.request_bytes": lambda: ST.request_bytes(s, 6),
        "settings.request_bytes[xl]": lambda: ST.request_bytes(xl, 1024, batch=1),
        "settings.attention_flops": lambda: ST.attention_flops(6, 16, 8, batch=2),
        "settings.mha_parameter_count": lambda: ST.mha_parameter_count(768, 768, True),
        "budget.predicted_bytes": lambda: BU.predicted_bytes(s, 6),
        "budget.is_heavy": lambda: (BU.is_heavy(s, 6), BU.is_heavy(xl, 1024)),
        "budget.heavy_slot": lambda: slot(s, 6),
        "budget.heavy_slot[heavy]": lambda: slot(xl, 1024),
        "budget.worst_settings": BU.worst_settings,
        "budget.server_bound": lambda: BU.server_bound(),
        "budget.server_bound[tokens]": lambda: BU.server_bound(64),
        "budget.size_of": lambda: BU.size_of(
            {"t": torch.ones(4), "v": torch.ones(8)[:2], "s": s, "l": [np.zeros(3), "text"]}
        ),
        "runtime.threads_from_env": lambda: [
            RT.threads_from_env(v) for v in (None, "", "3", "auto", "x")
        ],
        "runtime.configure_threads": _configure_threads_then_forget,
        "speed.wrapper_against_split": timing_summary,
        "seeding.seeded[7]": seeded_draw,
        "seeding.rng_lock_held_by_me": rng_lock_held_by_me,
    }


# attnviz.pretrained's calls live beside its own tests (a tiny GPT-2 folder they write).
ENGINE_CALLS = {**_engine_calls(), **pretrained_calls()}
