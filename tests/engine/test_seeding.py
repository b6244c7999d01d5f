"""Seeding: every draw goes through one locked helper that leaves the caller's stream alone."""

from __future__ import annotations

import inspect
import threading
from dataclasses import replace

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from attnviz import bugs as B
from attnviz import checks as C
from attnviz import figures as F
from attnviz import lesson as L
from attnviz import trace as T
from attnviz.inputs import book_inputs
from attnviz.scaling import scaling_study
from attnviz.seeding import rng_lock_held_by_me, seeded
from attnviz.settings import Settings

from .helpers import labels, typed_batch

KINDS = ("v1", "v2", "causal", "wrapper", "mha")


def test_seeded_reproduces_manual_seed():
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(123)
        expected = torch.rand(3)
    with seeded(123):
        got = torch.rand(3)
    assert torch.equal(got, expected)


def test_seeded_restores_the_callers_stream():
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(7)
        expected = torch.rand(4)
        torch.manual_seed(7)
        with seeded(999):
            torch.rand(100)
        assert torch.equal(torch.rand(4), expected)


def test_seeded_none_forks_without_seeding_and_restores():
    before = torch.random.get_rng_state()
    with seeded(None):
        inside = torch.random.get_rng_state()
        torch.rand(10)
    assert torch.equal(inside, before)
    assert torch.equal(torch.random.get_rng_state(), before)


def test_seeded_holds_the_lock_and_is_reentrant():
    assert not rng_lock_held_by_me()
    with seeded(1):
        assert rng_lock_held_by_me()
        with seeded(2):
            inner = torch.rand(2)
        outer_continues = torch.rand(2)
    assert not rng_lock_held_by_me()
    with seeded(2):
        assert torch.equal(inner, torch.rand(2))
    with seeded(1):
        assert torch.equal(outer_continues, torch.rand(2))


def test_seeded_restores_even_when_the_block_raises():
    before = torch.random.get_rng_state()
    with pytest.raises(RuntimeError), seeded(5):
        torch.rand(3)
        raise RuntimeError("boom")
    assert torch.equal(torch.random.get_rng_state(), before)
    assert not rng_lock_held_by_me()


def test_the_state_detector_itself_notices_a_draw():
    # Proves the "state unchanged" tests below can fail.
    before = torch.random.get_rng_state()
    torch.rand(1)
    assert not torch.equal(torch.random.get_rng_state(), before)


# --- every public engine function leaves the global stream unchanged ---------------------
def _engine_calls():
    s = Settings(dropout=0.5, training=True)
    x = typed_batch(16, n=6)
    lab = labels(6)
    spec_causal = L.spec_causal(s)
    spec_mha = L.spec_multihead(s)
    calls = {}
    for kind in KINDS:
        spec = T.ModuleSpec(kind, 16, 4 if kind == "wrapper" else 8, 32, 0.5, 2, True, 123)
        calls[f"build[{kind}]"] = spec.build
        calls[f"build[{kind}, seed=None]"] = replace(spec, seed=None).build

    causal_train = T.trace_causal(spec_causal, x, lab, training=True, dropout_seed=7)
    mha_eval = T.trace_multihead(spec_mha, x, lab)
    calls.update(
        {
            "trace_simplified": lambda: T.trace_simplified(x[0], lab),
            "trace_trainable[v1]": lambda: T.trace_trainable(L.spec_trainable(s, "v1"), x[0], lab),
            "trace_trainable[v2]": lambda: T.trace_trainable(L.spec_trainable(s), x[0], lab),
            "trace_causal[train, p=0.5]": lambda: T.trace_causal(
                spec_causal, x, lab, training=True, dropout_seed=7
            ),
            "trace_multihead[train]": lambda: T.trace_multihead(
                spec_mha, x, lab, training=True, dropout_seed=7
            ),
            "trace_wrapper[train]": lambda: T.trace_wrapper(
                L.spec_wrapper(s), x, lab, training=True, dropout_seed=7
            ),
            "unmasked_scores": lambda: T.unmasked_scores(causal_train),
            "causal_mask": lambda: T.causal_mask(causal_train),
            "renormalized_weights": lambda: T.renormalized_weights(causal_train),
            "dropout_mask": lambda: T.dropout_mask(causal_train),
            "context_dropout": lambda: T.context_dropout(causal_train, 0.5, 9),
            "strides_table": lambda: T.strides_table(mha_eval),
            "lesson.prepare": lambda: L.prepare("Your journey starts with one step", s),
            "lesson.prepare[book]": lambda: L.prepare("", s, use_book=True),
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
        bx = {"simplified": book_inputs(), "trainable": x[0]}.get(bug.pass_kind, x)
        calls[f"run_bug[{bug.key}]"] = lambda b=bug, xx=bx, sp=spec: B.run_bug(b, xx, sp)
        calls[f"correct_check[{bug.key}]"] = lambda b=bug, xx=bx, sp=spec: B.correct_check(
            b, xx, sp
        )
    calls.update(_figure_calls(mha_eval, lab))
    calls["scaling.scaling_study"] = lambda: scaling_study(d_ks=(1, 4), n_keys=4, rows=8)
    return calls


def _check_calls(x, lab):
    spec_mha = T.ModuleSpec("mha", 16, 16, 32, 0.5, 2, False, 3)  # d_in == d_out: torch MHA runs
    xs = typed_batch(16, n=6)
    simp = T.trace_simplified(x[0], lab)
    causal = T.trace_causal(T.ModuleSpec("causal", 16, 8, 32, 0.5), x, lab)
    mh = T.trace_multihead(spec_mha, xs, lab)

    def build(p):
        return replace(spec_mha, dropout=p).build()

    return {
        "check.rows_sum_to_one": lambda: C.rows_sum_to_one(simp["attn_weights"]),
        "check.weights_are_softmax": lambda: C.weights_are_softmax(
            simp["attn_scores"], simp["attn_weights"]
        ),
        "check.loops_equal_matmul": lambda: C.loops_equal_matmul(
            simp["inputs"], simp["loop_scores"]
        ),
        "check.naive_softmax_matches": lambda: C.naive_softmax_matches(simp["attn_scores"] * 100),
        "check.masking_routes_agree": lambda: C.masking_routes_agree(
            T.renormalized_weights(causal), causal["attn_weights"], causal["scaled_scores"]
        ),
        "check.no_future_leak": lambda: C.no_future_leak(build(0.0).eval(), xs),
        "check.heads_equal_loop": lambda: C.heads_equal_loop(
            mh["queries"], mh["keys"], mh["values"], mh["merged"], 2, T.causal_mask(mh).bool()
        ),
        "check.wrapper_equals_split": lambda: C.wrapper_equals_split(build(0.5), xs),
        "check.v1_equals_v2": lambda: C.v1_equals_v2(
            T.ModuleSpec("v1", 16, 8).build(), T.ModuleSpec("v2", 16, 8).build(), x[0]
        ),
        "check.matches_sdpa": lambda: C.matches_sdpa(
            mh["queries_heads"], mh["keys_heads"], mh["values_heads"], mh["context_vec"], True
        ),
        "check.matches_torch_mha": lambda: C.matches_torch_mha(build(0.5), xs),
        "check.eval_ignores_dropout": lambda: C.eval_ignores_dropout(
            lambda m, inp: m(inp), build, xs, 0.5
        ),
        "check.batch_rows_independent": lambda: C.batch_rows_independent(build(0.0).eval(), xs),
        "check.same_output_as_mha": lambda: C.same_output_as_mha(
            build(0.0).eval(), xs, build(0.0).eval()(xs), "t"
        ),
        "check.torch_mha_weights_match": lambda: C.torch_mha_weights_match(build(0.5), xs),
    }


def _figure_calls(mh, lab):
    w = mh["attn_weights"][0]
    return {
        "figures.heatmap": lambda: F.heatmap(w[0], lab, lab, title="w"),
        "figures.heatmap[signed]": lambda: F.heatmap(
            mh["attn_scores"][0, 0], lab, lab, title="s", kind="signed"
        ),
        "figures.bars": lambda: F.bars(w[0, 2], lab, title="b"),
        "figures.grouped_bars": lambda: F.grouped_bars(
            {"a": w[0, 1].numpy(), "b": w[1, 1].numpy()}, lab, title="g"
        ),
        "figures.heads_grid": lambda: F.heads_grid(w, lab, title="h"),
        "figures.lines": lambda: F.lines(
            [1, 2, 3], {"y": np.ones(3)}, title="l", x_name="x", y_name="y"
        ),
        "figures.relative_to_uniform": lambda: F.relative_to_uniform(w[0], lab, title="r"),
        "figures.figure_bytes": lambda: F.figure_bytes(F.heatmap(w[0], lab, lab, title="w")),
        "figures.histograms": lambda: F.histograms({"w": w.numpy()}, title="h"),
        "figures.timing_bars": lambda: F.timing_bars(["a", "b"], [1.0, 2.0], [1.0, 2.0], title="t"),
    }


ENGINE_CALLS = _engine_calls()


@pytest.mark.parametrize("name", list(ENGINE_CALLS))
def test_engine_function_leaves_the_global_generator_unchanged(name):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(2024)
        torch.rand(5)  # a caller in the middle of its own stream
        before = torch.random.get_rng_state()
        ENGINE_CALLS[name]()
        assert torch.equal(torch.random.get_rng_state(), before), name
        assert not rng_lock_held_by_me()


def test_every_check_is_in_the_rng_list():
    checks = {
        name
        for name, fn in inspect.getmembers(C, inspect.isfunction)
        if fn.__module__ == C.__name__
        and inspect.signature(fn).return_annotation == "CheckResult"
        and not name.startswith("_")
    }
    assert checks == {n.removeprefix("check.") for n in ENGINE_CALLS if n.startswith("check.")}


def test_every_figure_builder_is_in_the_rng_list():
    builders = {
        name
        for name, fn in inspect.getmembers(F, inspect.isfunction)
        if fn.__module__ == F.__name__
        and inspect.signature(fn).return_annotation in ("go.Figure", go.Figure)
    }
    listed = {
        n.removeprefix("figures.").split("[")[0] for n in ENGINE_CALLS if n.startswith("figures.")
    }
    assert builders <= listed


def test_the_dropout_bug_is_reproducible_because_its_draws_are_forked():
    bug = B.BUGS_BY_KEY["dropout_in_eval"]
    x = typed_batch(16, n=6)
    spec = L.spec_causal(Settings(dropout=0.5))
    first = B.run_bug(bug, x, spec).wrong["output"]
    second = B.run_bug(bug, x, spec).wrong["output"]
    assert torch.equal(first, second)
    assert not torch.equal(first, B.run_bug(bug, x, spec).right["output"])


# --- threads ------------------------------------------------------------------------------
def _causal_run(seed: int, x, lab):
    spec = T.ModuleSpec("causal", 8, 4, 16, 0.5, 1, False, seed)
    tr = T.trace_causal(spec, x, lab, training=True, dropout_seed=seed + 1000)
    return tr.output, tr["dropped_weights"], tr["W_query.weight"]


def test_concurrent_seeded_traces_are_bit_identical_to_single_threaded_runs():
    x = typed_batch(8, n=6)
    lab = labels(6)
    seeds = [1, 2, 3, 4, 5, 6]
    reference = {seed: _causal_run(seed, x, lab) for seed in seeds}
    # Sanity: different seeds really give different dropout masks and weights.
    assert not torch.equal(reference[1][1], reference[2][1])

    iterations = 30
    start = threading.Barrier(len(seeds) + 1)
    stop = threading.Event()
    mismatches: list[str] = []
    errors: list[BaseException] = []
    noise_runs = [0]

    def worker(seed):
        try:
            start.wait()
            for i in range(iterations):
                got = _causal_run(seed, x, lab)
                for name, a, b in zip(
                    ("output", "dropped", "W_query"), got, reference[seed], strict=True
                ):
                    if not torch.equal(a, b):
                        mismatches.append(f"seed {seed} iteration {i}: {name} differs")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def unseeded_noise():
        try:
            start.wait()
            while not stop.is_set():
                T.ModuleSpec("mha", 8, 8, 16, 0.5, 2, False, None).build()
                with seeded(None):
                    torch.rand(64)
                noise_runs[0] += 1
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(s,)) for s in seeds]
    noise = threading.Thread(target=unseeded_noise)
    for t in [*threads, noise]:
        t.start()
    for t in threads:
        t.join(timeout=120)
    stop.set()
    noise.join(timeout=30)

    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    assert mismatches == []
    assert noise_runs[0] > 0  # the unseeded thread really ran alongside
