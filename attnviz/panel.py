"""What a page shows, as data: panels (a figure and its exact numbers) and claims (sentences
that state a property of those numbers, with the property itself so a test can check it).

The lesson modules (``attnviz.lessons``) build these from a trace, once per input and settings;
pages only pick and arrange them. Nothing here imports Streamlit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import plotly.graph_objects as go
import torch


@dataclass(frozen=True)
class Panel:
    """One matrix as the page draws it.

    ``values`` holds the exact numbers the figure shows: (rows, cols), or (heads, rows, cols)
    for a stack of heads. ``key`` is stable across reruns: it names the widgets and the CSV.
    ``formula`` (LaTeX) and ``sentence`` are the one-line story the presenter's stepper tells.
    """

    key: str
    figure: go.Figure
    values: torch.Tensor
    rows: tuple[str, ...]
    cols: tuple[str, ...]
    caption: str = ""
    formula: str = ""
    sentence: str = ""

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.values.shape)


def _rows(values: torch.Tensor) -> torch.Tensor:
    return values.reshape(-1, values.shape[-1]).to(torch.float64)


def _rows_sum_to_one(values: torch.Tensor, _arg: float | None) -> bool:
    sums = _rows(values).sum(dim=-1)
    return bool(torch.allclose(sums, torch.ones_like(sums), atol=1e-5))


def _some_row_sum_differs(values: torch.Tensor, _arg: float | None) -> bool:
    sums = _rows(values).sum(dim=-1)
    return bool(((sums - 1).abs() > 1e-5).any())


def _max_below(values: torch.Tensor, arg: float | None) -> bool:
    return bool(_rows(values).max() <= (arg if arg is not None else 1.0))


def _max_at_least(values: torch.Tensor, arg: float | None) -> bool:
    return bool(_rows(values).max() >= (arg if arg is not None else 0.0))


def _future_is_zero(values: torch.Tensor, _arg: float | None) -> bool:
    n = values.shape[-1]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    return bool((values[..., future] == 0).all())


def _all_nonnegative(values: torch.Tensor, _arg: float | None) -> bool:
    return bool((_rows(values) >= 0).all())


def _has_negative(values: torch.Tensor, _arg: float | None) -> bool:
    return bool((_rows(values) < 0).any())


def _every_row_mixes(values: torch.Tensor, arg: float | None) -> bool:
    """Every row puts at least ``arg`` (default 0.1) on two or more entries."""
    floor = arg if arg is not None else 0.1
    return bool(((_rows(values) >= floor).sum(dim=-1) >= 2).all())


def _causal_near_even(values: torch.Tensor, arg: float | None) -> bool:
    """Causal weights: every weight a query gives a key it can see (key <= query) is within
    ``arg`` (default 0.1) of an even share, 1 / (query + 1)."""
    n = values.shape[-1]
    seen = torch.tril(torch.ones(n, n, dtype=torch.bool))
    even = (1.0 / torch.arange(1, n + 1, dtype=torch.float64))[:, None].expand(n, n)
    gap = (values.to(torch.float64) - even).abs()[..., seen]
    return bool((gap <= (arg if arg is not None else 0.1) + 1e-9).all())


def _future_is_minus_inf(values: torch.Tensor, _arg: float | None) -> bool:
    """Every entry above the diagonal (a future key) is −∞: masked scores."""
    n = values.shape[-1]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    return bool(torch.isneginf(values[..., future]).all())


# Printed numbers are rounded to 3 decimals: a claim that names one holds within half a unit.
_PRINTED = 5e-4 + 1e-6


def _is_symmetric(values: torch.Tensor, _arg: float | None) -> bool:
    v = values.to(torch.float64)
    return bool(torch.allclose(v, v.transpose(-2, -1), rtol=1e-5, atol=1e-6))


def _max_near(values: torch.Tensor, arg: float | None) -> bool:
    """The largest entry, printed to 3 decimals, is ``arg``."""
    return arg is not None and abs(float(_rows(values).max()) - arg) <= _PRINTED


def _largest_change_near(values: torch.Tensor, arg: float | None) -> bool:
    """The largest absolute entry (of a difference), printed to 3 decimals, is ``arg``."""
    return arg is not None and abs(float(_rows(values).abs().max()) - arg) <= _PRINTED


def _num_rows(values: torch.Tensor, arg: float | None) -> bool:
    return arg is not None and values.shape[-2] == int(arg)


# name -> test(values, arg): the properties a sentence on a page may state about a panel.
PROPERTIES: dict[str, Callable[[torch.Tensor, float | None], bool]] = {
    "rows_sum_to_one": _rows_sum_to_one,
    "some_row_sum_differs": _some_row_sum_differs,
    "max_at_most": _max_below,
    "max_at_least": _max_at_least,
    "future_is_zero": _future_is_zero,
    "all_nonnegative": _all_nonnegative,
    "has_negative": _has_negative,
    "every_row_mixes": _every_row_mixes,
    "causal_near_even": _causal_near_even,
    "future_is_minus_inf": _future_is_minus_inf,
    "is_symmetric": _is_symmetric,
    "max_near": _max_near,
    "largest_change_near": _largest_change_near,
    "num_rows": _num_rows,
}


@dataclass(frozen=True)
class Claim:
    """A sentence about a panel's numbers, with the property it states.

    ``PROPERTIES[prop](panel.values, arg)`` must hold for the panel named ``panel``; the
    consistency tests check every claim of every page, in every mode, against the tensors drawn.
    """

    text: str
    panel: str
    prop: str
    arg: float | None = None

    def holds(self, panels: dict[str, Panel]) -> bool:
        return PROPERTIES[self.prop](panels[self.panel].values, self.arg)
