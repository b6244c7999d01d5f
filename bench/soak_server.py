"""``streamlit run`` with a census of the process's objects, for the soak only (never deployed).

    python bench/soak_server.py run app.py --server.address 127.0.0.1 ...   (bench/soak.py)

The app itself has no debug endpoint. This wrapper starts Streamlit in this process and adds
one daemon thread that watches the folder named by ``ATTNVIZ_CENSUS_DIR``: for each
``<name>.request`` file it writes ``<name>.json`` with

- ``own``: how many live objects of each of the app's own types (modules ``attnviz``, ``ui``,
  ``pages``) the collector tracks, plus Streamlit's session objects;
- ``gc``: the collector's counts, and the objects its automatic collections freed so far, per
  generation (from ``gc.callbacks``): cyclic garbage the app makes, freed without the post-run
  collection;
- when the request file says ``garbage``: one full collection with ``DEBUG_SAVEALL``, the
  unreachable objects it found grouped by type (cycles that were waiting for the collector),
  and ``reachable own``: the app's own objects still in use, and ``heap after collection``
  (:func:`heap_stats` once the garbage is freed). The soak asks for it at the start, half and
  end of its measured runs only (three full collections in thousands of runs);
- when it says ``stats``: only :func:`heap_stats` (cheap: no collection, no walk over objects).

``ATTNVIZ_SOAK_LEAK=1`` adds the deliberate leak (:func:`_install_leak`).
"""

from __future__ import annotations

import collections
import ctypes
import gc
import json
import os
import sys
import threading
import time
from pathlib import Path

OWN_PREFIXES = ("attnviz", "ui", "pages", "__page__")
STREAMLIT_TYPES = ("AppSession", "SessionState", "ScriptRunner", "ForwardMsgQueue")
freed = collections.Counter()


def _count_freed(phase: str, info: dict) -> None:
    if phase == "stop":
        freed[f"gen{info['generation']}"] += info["collected"]
        freed[f"gen{info['generation']} runs"] += 1


def _type_name(obj) -> tuple[str, str]:
    t = type(obj)
    module = t.__dict__.get("__module__") if isinstance(t.__dict__, dict) else None
    module = getattr(t, "__module__", "?") if module is None else module
    return (module if isinstance(module, str) else "?"), str(getattr(t, "__qualname__", "?"))


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def heap_stats() -> dict:
    """Cheap readings (no collection, no walk over objects): the memory blocks Python's own
    allocator hands out, and glibc's heap (bytes in use, free inside the heap, mmapped), to
    tell a leak of Python objects or of native buffers from a heap that only fragments."""
    out: dict = {"time": time.time(), "python blocks": sys.getallocatedblocks()}
    try:
        libc = ctypes.CDLL(None)
        libc.mallinfo2.restype = _Mallinfo2
        info = libc.mallinfo2()
        out["malloc"] = {
            "in use": info.uordblks + info.hblkhd,
            "free in heap": info.fordblks,
            "mmapped": info.hblkhd,
        }
    except (OSError, AttributeError):  # not glibc, or glibc older than 2.33
        pass
    return out


def census(with_garbage: bool) -> dict:
    own: collections.Counter = collections.Counter()
    total = 0
    for obj in gc.get_objects():
        total += 1
        module, name = _type_name(obj)
        if module.split(".")[0] in OWN_PREFIXES or name in STREAMLIT_TYPES:
            own[f"{module}.{name}"] += 1
    out = {
        "time": time.time(),
        "tracked objects": total,
        "own": dict(own),
        "gc": {"counts": gc.get_count(), "freed": dict(freed)},
    }
    if with_garbage:
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            found = gc.collect()
            kinds = collections.Counter(".".join(_type_name(o)) for o in gc.garbage)
            own_kinds = {k: v for k, v in kinds.items() if k.split(".")[0] in OWN_PREFIXES}
            out["garbage"] = {
                "unreachable": found,
                "by type": dict(kinds.most_common(25)),
                "own types": own_kinds,
            }
            # What is still in use: the count above minus the cycles that were only waiting
            # for the collector (they are freed now).
            out["reachable own"] = {k: v - kinds.get(k, 0) for k, v in own.items()}
        finally:
            gc.garbage.clear()
            gc.set_debug(0)
        # What the process holds once no garbage waits: the level a leak raises. (The cycles
        # DEBUG_SAVEALL kept in gc.garbage are unreachable again: one more collection frees them.)
        gc.collect()
        out["heap after collection"] = heap_stats()
    return out


def _watch(folder: Path) -> None:
    while True:
        for request in sorted(folder.glob("*.request")):
            mode = request.read_text().strip()
            result = heap_stats() if mode == "stats" else census(mode == "garbage")
            tmp = request.with_suffix(".tmp")
            tmp.write_text(json.dumps(result, indent=1))
            tmp.rename(request.with_suffix(".json"))
            request.unlink()
        time.sleep(0.05)


LEAKED: list[bytes] = []


def _install_leak() -> None:
    """The deliberate regression (``ATTNVIZ_SOAK_LEAK=1``, ``bench/soak.py --leak``): every
    chart a run sends is also kept, as its JSON's bytes, in a module list that only grows."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from ui import charts

    send = charts.send_plotly_spec

    def leaking(dg, spec, *args, **kwargs):
        LEAKED.append(spec.encode())
        return send(dg, spec, *args, **kwargs)

    charts.send_plotly_spec = leaking


def main() -> None:
    if os.environ.get("ATTNVIZ_SOAK_LEAK") == "1":
        _install_leak()
    folder = Path(os.environ["ATTNVIZ_CENSUS_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    gc.callbacks.append(_count_freed)
    threading.Thread(target=_watch, args=(folder,), name="census", daemon=True).start()
    from streamlit.web import cli

    sys.argv = ["streamlit", *sys.argv[1:]]
    sys.exit(cli.main())


if __name__ == "__main__":
    main()
