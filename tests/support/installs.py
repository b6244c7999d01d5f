"""Python code in a fresh process, as a server starts: ``ui.switches.Install`` and the like."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def python_in_a_fresh_process(code: str, env: dict[str, str], timeout: float = 120) -> str:
    """What ``python -c code`` prints, run from the project root with exactly ``env``; a
    failure shows the end of its stderr."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def installed_in_a_fresh_process(module: str, env: str, env_value: str | None, check: str) -> str:
    """What ``ui.<module>.install()`` returns twice, then whether ``check`` (a Python expression
    over the module, imported as ``m``) holds afterwards: "True True True" when it installed,
    "False False False" when the switch ``env`` (set to ``env_value``, or unset) kept it off."""
    environ = {k: v for k, v in os.environ.items() if k != env}
    if env_value is not None:
        environ[env] = env_value
    code = (
        f"from ui import {module} as m\n"
        "first, again = m.install(), m.install()\n"
        f"print(first, again, bool({check}))"
    )
    return python_in_a_fresh_process(code, environ, timeout=60).strip()


def assert_on_by_default_once_and_off_by_switch(module: str, env: str, check: str) -> None:
    """On when the switch is unset or nonsense, installed once; off when it says 0."""
    assert installed_in_a_fresh_process(module, env, None, check) == "True True True"
    assert installed_in_a_fresh_process(module, env, "0", check) == "False False False"
    assert installed_in_a_fresh_process(module, env, "nonsense", check) == "True True True"
