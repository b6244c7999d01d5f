"""One browser, one vote: an anonymous token each browser keeps, the poll store's id for it.

Streamlit's session ends with a reload, an app switch that drops the websocket, or a move to
another replica behind the balancer; the browser stays. So a phone is counted by a random
token the browser keeps (in its local storage, and in a cookie so that the next session's
first run already has it through ``st.context.cookies``): a reload finds its answer again and
sends none twice. The token names no one; the store keeps only an HMAC of it under each poll's
own salt. The same token lets the presenter's browser keep the controls of the polls it opened
without a secret in the address bar.

The keeper is a small ``streamlit.components.v2`` component with no markup: the server offers
a token (the cookie's, or a new random one); the browser keeps the one it already holds, or
stores the offer, and says which it holds when they differ.
"""

from __future__ import annotations

import re
import secrets

import streamlit as st
import streamlit.components.v2 as components

COOKIE = "attnviz_browser"
TOKEN_KEY = "_attnviz_poll_me"  # this session's browser token (what the store salts, per poll)
KEEPER_KEY = "poll_browser_keeper"
_VALID = re.compile(r"[A-Za-z0-9_-]{16,64}")

_JS = """
const NAME = "attnviz_browser";
const VALID = /^[A-Za-z0-9_-]{16,64}$/;
const MAX_AGE = 30 * 24 * 3600; // seconds: longer than any poll lives

function fresh() {
  const bytes = new Uint8Array(24);
  crypto.getRandomValues(bytes);
  return btoa(String.fromCharCode(...bytes)).replace(/\\+/g, "-").replace(/\\//g, "_")
    .replace(/=+$/, "");
}

export default function (component) {
  const { data, parentElement, setStateValue } = component;
  // Nothing to see: the keeper's element takes no room on the page.
  const host = parentElement instanceof ShadowRoot ? parentElement.host : parentElement;
  const box = host && host.closest("[data-testid='stElementContainer']");
  if (box) {
    box.style.display = "none";
  }
  const offered = data && VALID.test(data.offered || "") ? data.offered : null;
  let token = null;
  try {
    token = window.localStorage.getItem(NAME);
  } catch (err) {
    token = null; // storage blocked: the cookie alone keeps it
  }
  if (!token || !VALID.test(token)) {
    token = offered || fresh();
    try {
      window.localStorage.setItem(NAME, token);
    } catch (err) {
      // nothing more to do: the cookie below still carries it
    }
  }
  const secure = window.location.protocol === "https:" ? "; Secure" : "";
  document.cookie = `${NAME}=${token}; Path=/; Max-Age=${MAX_AGE}; SameSite=Lax${secure}`;
  if (token !== offered) {
    setStateValue("token", token);
  }
}
"""
_keeper = components.component("attnviz_browser_token", js=_JS)


def valid(token: object) -> bool:
    return isinstance(token, str) and _VALID.fullmatch(token) is not None


def token() -> str:
    """This browser's token: the one its cookie brought to this session, or (first visit, or
    cookies off) a new random one, which the keeper offers the browser to keep."""
    if TOKEN_KEY not in st.session_state:
        cookie = st.context.cookies.get(COOKIE)
        st.session_state[TOKEN_KEY] = cookie if valid(cookie) else secrets.token_urlsafe(24)
    return st.session_state[TOKEN_KEY]


def keep() -> None:
    """Mount the keeper (every run of the poll page): the browser stores this session's token,
    or answers with the one it holds, which this session then uses."""
    _keeper(key=KEEPER_KEY, data={"offered": token()}, on_token_change=_adopt)


def _adopt() -> None:
    result = st.session_state.get(KEEPER_KEY)
    held = result.get("token") if result is not None else None
    if valid(held):
        st.session_state[TOKEN_KEY] = held
