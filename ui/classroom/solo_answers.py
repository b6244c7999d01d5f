"""A student alone keeps her concept-check answers in her own browser, across reloads and visits.

Her answers before the lesson and after it are written into this browser's local storage and a
cookie (so that a new session's first run already has them, through ``st.context.cookies``),
never into the server: the server keeps nothing of a student alone. A reload, a new tab or a
visit a day later on the same browser finds them again; "Start again" replaces them; another
browser or a private window starts empty.

What is kept is one short record, ``1.<who>.<before>.<after>``: ``who`` is the 16 hex digits
that choose her options' order (``attnviz.teach.concepts.shown_order``), and each round is one
digit per question, the position of her pick among the options *as she saw them* (empty: not
answered yet). Positions, not the canonical indices, so that the record says nothing about
which option is right (the canonical index of every right answer is 0).

The keeper is a ``streamlit.components.v2`` component with no markup, like
``ui.classroom.browser_token``'s: the server offers the record it holds; the browser stores
it, or, when the server asks (a first run whose cookie brought none: cookies cleared, say)
and the browser holds one, sends that one back for the server to take up.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import streamlit as st
import streamlit.components.v2 as components

from attnviz.teach import concepts as C

COOKIE = "attnviz_concepts"
KEEPER_KEY = "concepts_solo_keeper"
VERSION = "1"
BEFORE, AFTER = "before", "after"
_WHO = re.compile(r"[0-9a-f]{16}")

_JS = """
const NAME = "attnviz_concepts";
const VALID = /^1\\.[0-9a-f]{16}\\.[0-9]*\\.[0-9]*$/;
const MAX_AGE = 180 * 24 * 3600; // seconds: a term

export default function (component) {
  const { data, parentElement, setStateValue } = component;
  const host = parentElement instanceof ShadowRoot ? parentElement.host : parentElement;
  const box = host && host.closest("[data-testid='stElementContainer']");
  if (box) {
    box.style.display = "none";
  }
  const offered = data && VALID.test(data.record || "") ? data.record : null;
  if (!offered) {
    return;
  }
  let held = null;
  try {
    held = window.localStorage.getItem(NAME);
  } catch (err) {
    held = null; // storage blocked: the cookie alone keeps it
  }
  if (data.ask && held && VALID.test(held) && held !== offered) {
    setStateValue("record", held); // the server takes it up, then offers it back
    return;
  }
  try {
    window.localStorage.setItem(NAME, offered);
  } catch (err) {
    // the cookie below still carries it
  }
  const secure = window.location.protocol === "https:" ? "; Secure" : "";
  document.cookie = `${NAME}=${offered}; Path=/; Max-Age=${MAX_AGE}; SameSite=Lax${secure}`;
}
"""
_keeper = components.component("attnviz_concepts_solo", js=_JS)


def encode(who: str, done: Mapping[str, Sequence[int]]) -> str:
    """The record of ``who``'s answers (``done``: canonical indices per round name, one per
    question): each as its position in the order she saw that round's options."""
    parts = [VERSION, who]
    for round_name in (BEFORE, AFTER):
        answers = done.get(round_name)
        if answers is None:
            parts.append("")
            continue
        parts.append(
            "".join(
                str(C.shown_order(item, who, round_name).index(a))
                for item, a in zip(C.ITEMS, answers, strict=True)
            )
        )
    return ".".join(parts)


def decode(record: object) -> tuple[str, dict[str, tuple[int, ...]]] | None:
    """(who, canonical answers per round) of a record, or None when it is not one this
    version of the check wrote (another number of questions, a position past an item's
    options, an after without a before)."""
    if not isinstance(record, str):
        return None
    parts = record.split(".")
    if len(parts) != 4 or parts[0] != VERSION or not _WHO.fullmatch(parts[1]):
        return None
    who, done = parts[1], {}
    for round_name, digits in zip((BEFORE, AFTER), parts[2:], strict=True):
        if not digits:
            continue
        if len(digits) != len(C.ITEMS) or not digits.isdigit():
            return None
        answers = []
        for item, digit in zip(C.ITEMS, digits, strict=True):
            order = C.shown_order(item, who, round_name)
            if int(digit) >= len(order):
                return None
            answers.append(order[int(digit)])
        done[round_name] = tuple(answers)
    if AFTER in done and BEFORE not in done:
        return None
    return who, done


def from_cookie() -> tuple[str, dict[str, tuple[int, ...]]] | None:
    """What this browser's cookie brought to this session (None: nothing, or not a record)."""
    return decode(st.context.cookies.get(COOKIE))


def keep(who: str, done: Mapping[str, Sequence[int]], *, ask: bool, on_found) -> None:
    """Mount the keeper: the browser stores this record (``who``'s ``done``), or, when
    ``ask`` and it holds another, sends it; ``on_found(who, done)`` then takes it up."""

    def found() -> None:
        result = st.session_state.get(KEEPER_KEY)
        kept = decode(result.get("record") if result is not None else None)
        if kept is not None:
            on_found(*kept)

    _keeper(
        key=KEEPER_KEY,
        data={"record": encode(who, done), "ask": ask},
        on_record_change=found,
    )
