"""Process-wide changes to Streamlit that app.py installs once, each with an off switch.

``ui/handover.py`` and ``ui/keyprobe.py`` each replace a few Streamlit internals for the whole
server process. :class:`Install` is what both share: installed on the first call (app.py asks on
every run; after the first, one attribute read), never twice (a lock for the first calls that
race), and not at all when its environment variable says 0, false, no or off, so the change can
be measured against Streamlit's own (bench/handover.py, bench/pair.py).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable


def switched_on(env: str) -> bool:
    """Whether the environment leaves ``env`` on (unset, empty or anything but an off word)."""
    return os.environ.get(env, "1").strip().lower() not in ("0", "false", "no", "off")


class Install:
    """Call to apply ``apply`` once per process; True when it is (or was) applied, False when
    ``env`` switches it off."""

    def __init__(self, env: str, apply: Callable[[], None]) -> None:
        self.env = env
        self._apply = apply
        self._done = False
        self._lock = threading.Lock()

    def __call__(self) -> bool:
        if self._done:
            return True
        if not switched_on(self.env):
            return False
        with self._lock:
            if not self._done:
                self._apply()
                self._done = True
        return True
