"""The "Reproduce" snippets: each is a self-contained script (torch only) that prints exactly the
matrix the page draws. The tests run them in a separate ``python -I`` and compare every printed
digit with the trace's float32 numbers: at the defaults, in book mode (the chapter's inputs,
arguments and seeds), in training mode with dropout, with 16 heads, and on a hostile text."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import io
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from attnviz.core import modules as M
from attnviz.core.settings import Settings
from attnviz.teach import prepare, reproduce

TEXT = "Your journey starts with one step"
HOSTILE = "It's \"quoted\" \\ {braces} <b>bold</b>\nnew line\ttab ✓ ünïcode 🙂 '''"

# Runs each snippet given as __main__, one after another, in one fresh interpreter (each with
# its own globals, as if run alone; every snippet seeds what it draws).
DRIVER = """
import runpy, sys
for path in sys.argv[1:]:
    print("=== " + path, flush=True)
    runpy.run_path(path, run_name="__main__")
    print(flush=True)
"""


def expected(page, matrix, prep, settings, head=0, variant="v2") -> torch.Tensor:
    """The matrix the page draws from its trace, read the way the page reads it: what
    ``reproduce.snippet`` must print."""
    trace = reproduce.page_trace(page, prep, settings, variant)
    return reproduce.MATRICES[page][matrix].of(trace, head)


FLOAT = re.compile(r"-?inf|nan|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def _numbers(line: str) -> list[float]:
    return [float(t) for t in FLOAT.findall(line)]


def _same(printed: list[float], tensor: torch.Tensor) -> bool:
    expected = [float(v) for v in tensor.flatten().tolist()]
    if len(printed) != len(expected):
        return False
    return all(
        (math.isnan(a) and math.isnan(b)) or a == b for a, b in zip(printed, expected, strict=True)
    )


def _cases(page: str, prep, s: Settings, heads=(0,), variant: str = "v2"):
    """(name, snippet, the matrix the page draws) for every matrix kind of the page."""
    out = []
    for matrix in reproduce.MATRICES[page]:
        for h in heads:
            code = reproduce.snippet(page, matrix, prep, s, head=h, variant=variant, text=TEXT)
            want = expected(page, matrix, prep, s, head=h, variant=variant)
            out.append((f"{page}-{variant}-{matrix}-h{h}", code, want))
    return out


def run_snippets(tmp_path: Path, snippets: list[tuple[str, str]]) -> list[list[str]]:
    """Write each (name, code) snippet to a file and run them all, each as its own __main__,
    in one fresh ``python -I``; each one's printed lines (its file's path first), in order."""
    paths = []
    for k, (name, code) in enumerate(snippets):
        path = tmp_path / f"s{k:03d}_{name}.py"
        path.write_text(code, encoding="utf-8")
        paths.append(str(path))
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-I", str(driver), *paths],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    sections = run.stdout.split("=== ")[1:]
    assert len(sections) == len(snippets)
    return [[line for line in s.strip().splitlines() if line.strip()] for s in sections]


def _run_all(tmp_path: Path, cases) -> None:
    """Run every snippet (:func:`run_snippets`) and compare each output with its tensor."""
    outputs = run_snippets(tmp_path, [(name, code) for name, code, _ in cases])
    for lines, (name, _, want) in zip(outputs, cases, strict=True):
        assert lines[0].endswith(f"_{name}.py")
        every_digit = lines[-1]
        assert every_digit.startswith("["), (name, lines)
        assert _same(_numbers(every_digit), want), (name, every_digit[:300], want)
        assert lines[1].startswith("tensor("), name  # the 4-decimal print, as the page shows it


def _pages(prep, s: Settings, heads) -> list:
    cases = []
    cases += _cases("simplified", prep, s)
    cases += _cases("trainable", prep, s, variant="v1")
    cases += _cases("trainable", prep, s, variant="v2")
    cases += _cases("causal", prep, s)
    cases += _cases("multihead", prep, s, heads=heads)
    cases += _cases("wrapper", prep, s, heads=heads)
    return cases


@pytest.mark.slow
def test_every_snippet_at_the_defaults_prints_the_pages_numbers(tmp_path):
    s = Settings()
    cases = _pages(prepare.prepare(TEXT, s), s, heads=(1,))
    assert len(cases) == 4 + 2 * 11 + 14 + 15 + 5
    _run_all(tmp_path, cases)


def test_every_snippet_at_the_defaults_run_here_prints_the_pages_numbers():
    """The fast loop's version: each snippet executed in this process (its torch seeding in a
    forked generator, torch's print options restored), the last printed line compared."""
    s = Settings(training=True)  # dropout 0.1 draws a mask on the causal pages
    cases = _pages(prepare.prepare(TEXT, s), s, heads=(1,))
    for name, code, want in cases:
        out = io.StringIO()
        try:
            with torch.random.fork_rng(devices=[]), contextlib.redirect_stdout(out):
                exec(compile(code, name, "exec"), {"__name__": "__main__"})
        finally:
            torch.set_printoptions(profile="default")
        last = out.getvalue().strip().splitlines()[-1]
        assert _same(_numbers(last), want), (name, last[:300])


@pytest.mark.slow
def test_every_snippet_in_book_mode_prints_the_chapters_numbers(tmp_path):
    s = Settings()
    prep = prepare.prepare("", s, use_book=True)
    cases = _pages(prep, s, heads=(0, 1))
    _run_all(tmp_path, cases)
    # and those are the chapter's printouts (attnviz/core/book_printouts.txt), e.g. the masking walk
    from attnviz.core import book as BK

    weights = expected("causal", "attn_weights", prep, s)
    assert BK.matches_printout(weights, "masking_weights")[0]
    assert BK.matches_printout(
        expected("trainable", "queries", prep, s, variant="v1")[1], "trainable_query_2"
    )[0]


@pytest.mark.slow
def test_every_snippet_in_training_mode_with_dropout_prints_the_dropped_weights(tmp_path):
    s = Settings(training=True, dropout=0.5, seed_dropout=7)
    prep = prepare.prepare(TEXT, s)
    cases = _cases("causal", prep, s)
    cases += _cases("multihead", prep, s, heads=(0, 1))
    cases += _cases("wrapper", prep, s, heads=(0, 1))
    _run_all(tmp_path, cases)
    dropped = expected("causal", "dropout_mask", prep, s)
    assert (dropped == 0).any()  # dropout really zeroed some weights here


@pytest.mark.slow
def test_snippets_with_sixteen_heads_and_a_hostile_text(tmp_path):
    s = Settings(d_in=8, d_out=32, num_heads=16, training=True, dropout=0.3, qkv_bias=True)
    prep = prepare.prepare(HOSTILE, s)
    cases = []
    for matrix in reproduce.MATRICES["multihead"]:
        code = reproduce.snippet("multihead", matrix, prep, s, head=15, text=HOSTILE)
        cases.append((f"mh16-{matrix}", code, expected("multihead", matrix, prep, s, head=15)))
    _run_all(tmp_path, cases)


@pytest.mark.slow
@pytest.mark.parametrize("page", ["simplified", "trainable", "causal", "multihead", "wrapper"])
def test_each_pages_weights_snippet_runs_alone_with_python_isolated(tmp_path, page):
    """Exactly what a student does: save the snippet, run it with only torch installed."""
    s = Settings(training=True, dropout=0.5)
    prep = prepare.prepare(TEXT, s)
    path = tmp_path / "reproduce.py"
    path.write_text(
        reproduce.snippet(page, "attn_weights", prep, s, head=0, text=TEXT), encoding="utf-8"
    )
    run = subprocess.run(
        [sys.executable, "-I", str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    last = run.stdout.strip().splitlines()[-1]
    assert _same(_numbers(last), expected(page, "attn_weights", prep, s))


# --- fast checks on the text of the snippets ---------------------------------------------------------
def test_a_snippet_copies_the_chapters_module_and_imports_nothing_of_attnviz():
    s = Settings()
    code = reproduce.snippet("causal", "attn_weights", prepare.prepare(TEXT, s), s, text=TEXT)
    import inspect

    assert inspect.getsource(M.CausalAttention) in code
    tree = ast.parse(code)
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
    assert imported == {"hashlib", "torch", "torch.nn"}
    assert "token_ids = [7120, 7002, 4940, 351, 530, 2239]" in code
    assert "torch.manual_seed(123)  # the weight seed" in code
    assert "module.eval()" in code and "module.train()" not in code
    assert (
        "CausalAttention(d_in=8, d_out=8, context_length=32, dropout=0.1, qkv_bias=False)" in code
    )


def test_a_snippet_in_training_mode_seeds_the_dropout_right_before_the_forward():
    s = Settings(training=True, seed_dropout=99)
    code = reproduce.snippet("multihead", "weights_dropped", prepare.prepare(TEXT, s), s)
    lines = code.splitlines()
    k = lines.index("    context_vec = module(x)")
    assert lines[k - 3] == "module.train()  # training mode: dropout is on"
    assert lines[k - 2].startswith("torch.manual_seed(99)  # the dropout seed")


def test_a_hostile_text_is_a_python_literal_in_the_snippet():
    s = Settings()
    code = reproduce.snippet(
        "simplified", "attn_weights", prepare.prepare(HOSTILE, s), s, text=HOSTILE
    )
    tree = ast.parse(code)
    texts = [
        n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "text"
    ]
    assert texts == [HOSTILE]


def test_book_mode_writes_the_chapters_inputs_tensor():
    s = Settings()
    code = reproduce.snippet("trainable", "queries", prepare.prepare("", s, True), s, variant="v1")
    assert "[[0.43, 0.15, 0.89],  # Your     (x^1)" in code
    assert " [0.05, 0.80, 0.55]]  # step     (x^6)" in code
    assert "torch.manual_seed(123)" in code and "SelfAttention_v1(d_in=3, d_out=2)" in code
    assert "hashlib" not in code
    v2 = reproduce.snippet("trainable", "queries", prepare.prepare("", s, True), s)
    assert "torch.manual_seed(789)" in v2  # the chapter's seed for sa_v2


def test_long_text_is_cut_to_the_context_on_the_causal_pages():
    s = Settings(context_length=4)
    code = reproduce.snippet("causal", "attn_weights", prepare.prepare(TEXT, s), s)
    assert "token_ids = [7120, 7002, 4940, 351]" in code


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda p, s: reproduce.snippet("nowhere", "attn_weights", p, s),
            "There is no page 'nowhere'",
        ),
        (
            lambda p, s: reproduce.snippet("causal", "nothing", p, s),
            "Page causal shows no matrix 'nothing'",
        ),
        (
            lambda p, s: reproduce.snippet("multihead", "attn_weights", p, s, head=2),
            "There is no head 2",
        ),
        (
            lambda p, s: reproduce.snippet("trainable", "keys", p, s, variant="v3"),
            "Page 2's module",
        ),
        (
            lambda p, s: reproduce.snippet("simplified", "inputs", prepare.prepare("", s), s),
            "There is no text to attend over",
        ),
        (
            lambda p, s: reproduce.snippet("multihead", "inputs", p, s.with_changes(num_heads=3)),
            "d_out=8 is not divisible by num_heads=3",
        ),
    ],
)
def test_what_cannot_be_reproduced_gets_a_sentence(call, message):
    s = Settings()
    with pytest.raises(reproduce.ReproduceError) as err:
        call(prepare.prepare(TEXT, s), s)
    assert str(err.value).startswith(message)


# --- every panel the pages draw has the snippet that prints it ------------------------------------
def _panels_of(value, found: dict) -> dict:
    """Every Panel inside a lesson object (fields, tuples, dicts), by key."""
    from attnviz.teach.panel import Panel

    if isinstance(value, Panel):
        found.setdefault(value.key, value)
    elif isinstance(value, dict):
        for v in value.values():
            _panels_of(v, found)
    elif isinstance(value, tuple | list):
        for v in value:
            _panels_of(v, found)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            _panels_of(getattr(value, f.name), found)
    return found


def _page_panels(prep, s: Settings) -> dict:
    """The panels pages 1-4 draw, built by the lessons from the traces the pages use."""
    from attnviz.teach.lessons import causal, multihead, simplified, trainable

    tr = {
        page: reproduce.page_trace(page, prep, s) for page in ("simplified", "trainable", "causal")
    }
    mh = reproduce.page_trace("multihead", prep, s)
    lab = reproduce.page_trace("causal", prep, s.with_changes(training=True))
    v1 = reproduce.page_trace("trainable", prep, s, "v1")
    found: dict = {}
    _panels_of(simplified.simplified_lesson(tr["simplified"], prep.book), found)
    _panels_of(trainable.trainable_lesson(tr["trainable"], v1, None, prep.book), found)
    lesson = causal.causal_lesson(tr["causal"], lab, None, (), settings=s, book=prep.book)
    _panels_of(lesson, found)
    _panels_of(multihead.build(mh, None, prep.book), found)
    for h in range(mh.num_heads):
        _panels_of({f"head {h}": multihead.head_view(mh, h).panels}, found.setdefault(h, {}))
    return found


def _panel_expected(key: str, prep, s: Settings, head: int) -> torch.Tensor:
    """What reproduce.panel_snippet prints for the panel ``key``, from the page's trace: the
    matrix its PanelSource names (page 3's dropout lab: in training mode)."""
    source = reproduce.PANELS[key]
    s = s.with_changes(training=True) if source.lab else s
    return expected(source.page, source.matrix, prep, s, head)


@pytest.mark.parametrize("book", [False, True], ids=["training-mode", "book-mode"])
def test_every_mapped_panel_is_drawn_with_the_numbers_its_snippet_prints(book):
    s = Settings(training=True, dropout=0.5, d_out=12, num_heads=3)
    prep = prepare.prepare("", s, True) if book else prepare.prepare(TEXT, s)
    found = _page_panels(prep, s)
    heads = 2 if book else 3
    checked = set()
    for key, source in reproduce.PANELS.items():
        if source.lab and book:
            with pytest.raises(reproduce.ReproduceError, match="Book mode's dropout lab"):
                reproduce.panel_snippet(key, prep, s)
            continue
        per_head_views = [found[h].get(key) for h in range(heads)]
        if key in found:
            panel = found[key]
            for h in range(heads if source.per_head else 1):
                values = panel.values[h] if source.per_head else panel.values
                want = _panel_expected(key, prep, s, head=h)
                assert torch.equal(values.isnan(), want.isnan()), key
                assert torch.equal(values.nan_to_num(), want.nan_to_num()), key
        elif all(p is None for p in per_head_views):  # not drawn at these settings
            assert book and key == "p4_weights_before", key  # dropout 0: no "before dropout"
            continue
        else:  # a head view's panel: one per head
            assert all(p is not None for p in per_head_views), key
            for h, panel in enumerate(per_head_views):
                assert torch.equal(panel.values, _panel_expected(key, prep, s, head=h)), (
                    key,
                    h,
                )
        code = reproduce.panel_snippet(
            key, prep, s, head=heads - 1 if source.page == "multihead" else 0
        )
        assert (
            f"matrix = {reproduce.MATRICES[source.page][source.matrix].expr.split('{')[0]}" in code
        )
        checked.add(key)
    skipped = {"p4_weights_before"} if book else set()
    expected_keys = {k for k, v in reproduce.PANELS.items() if not (v.lab and book)} - skipped
    assert checked == expected_keys
    with pytest.raises(reproduce.ReproduceError, match="has no reproduce snippet"):
        reproduce.panel_snippet("p3_uniform", prep, s)
