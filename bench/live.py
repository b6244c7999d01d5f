"""Live-server benchmark: what a class feels, measured on ``streamlit run`` as deployed.

    .venv/bin/python bench/live.py                  # per-page CPU, cold runs, the own-sentence
                                                    # class and the shared settings at 50
                                                    # sessions (~9 min)
    .venv/bin/python bench/live.py --sessions 0     # per-page CPU, warm and cold, only
    .venv/bin/python bench/live.py --gc on          # the same with Streamlit's post-run GC forced on

AppTest runs a page script in-process and skips what the live server does around it (the
websocket, the post-run garbage collection, forward-message queueing), so its timings miss the
server's real cost. This benchmark starts, side by side in one run:

- attnviz as the Docker image runs it: the Dockerfile's ENV (read from the Dockerfile itself),
  the repository's ``.streamlit/config.toml``, ``streamlit run app.py`` (loopback here);
- the trivial reference app (``bench/trivial/``: seven pages, one cached heatmap each), served
  by a plain ``streamlit run`` from its own folder, so with Streamlit's default settings.

and reports:

1. per page, the server's CPU per warm page run: one websocket session reruns the page at the
   default settings (after warm-up runs), and the server process's user + system CPU time
   (psutil, every thread) before and after the runs is divided by their number. The app's page
   and the trivial app's page are measured in alternating blocks; the ratio app / trivial is
   what the CI guard (bench/guard.py) compares with bench/baseline.json;
2. per page, cold runs: the server CPU of the FIRST run of the page with a new text (a
   sentence no one computed before, 5-8 words, drawn with a per-run seed), of its warm rerun
   right after, and of a trivial-app page run measured right after each (a new ``seed``, so its
   one heatmap is new too): cold ms, warm ms, trivial ms and the ratios, medians over
   ``--cold-rounds`` rounds that take the pages in turn (bench/measure.py);
3. the own-sentence class: N sessions at once, each with a sentence of its own, changing one
   sidebar value at each of six page runs (text, d_out, heads, training mode, dropout, a seed),
   and the trivial app under the same harness (six page runs per session, each with a new
   seed): page runs per second, p50, p95, server CPU per page run, errors;
4. under N concurrent websocket sessions each opening every page under every setting
   (bench/loadtest.py's protocol and plans): page runs per second, p50, p95, server CPU per page
   run, errors, and figures that differ from a single-session reference; the same load on the
   trivial app right after.

Server CPU is the server process's user + system time, every thread, read from the kernel's
per-process CPU clock (bench/measure.py), after the run's tail. The machine's load average is
recorded beside every number: this machine is shared.

Output: bench/live-results.md (and the console). Loopback only; every outbound request goes to a
blackhole; the servers stop when the run ends.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import shlex
import statistics
import sys
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402

from bench import loadtest, measure  # noqa: E402
from bench.support import aio  # noqa: E402
from bench.support.network import Blackhole, proxy_env  # noqa: E402
from bench.support.pages import app_pages  # noqa: E402
from bench.support.server import running_app, streamlit_command  # noqa: E402

RESULTS = ROOT / "bench" / "live-results.md"
TRIVIAL = ROOT / "bench" / "trivial"
TRIVIAL_PAGES = 7
# The image's vocabulary folder does not exist here; the shared cache holds the same files.
SHARED_CACHE = ROOT.parent / "shared" / "tiktoken_cache"


# --- the servers -------------------------------------------------------------------------------
def dockerfile_env(path: Path = ROOT / "Dockerfile") -> dict[str, str]:
    """Every ``ENV`` the Dockerfile sets, in order (continuation lines joined)."""
    env: dict[str, str] = {}
    logical: list[str] = []
    current = ""
    for line in path.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        logical.append(current + stripped)
        current = ""
    for instruction in logical:
        word, _, rest = instruction.partition(" ")
        if word.upper() != "ENV":
            continue
        for item in shlex.split(rest):
            key, sep, value = item.partition("=")
            # A value made of a build argument (ATTNVIZ_GPT2_DIR=${GPT2_DIR:+/opt/gpt2}) is
            # empty in an image built without it, as here: left out.
            if sep and "${" not in value:
                env[key] = value
    return env


def deployed_env() -> dict[str, str]:
    """The image's environment, with the vocabulary read from the local cache."""
    env = dockerfile_env()
    env.pop("TIKTOKEN_CACHE_DIR", None)
    cache = os.environ.get("TIKTOKEN_CACHE_DIR") or (
        str(SHARED_CACHE) if SHARED_CACHE.is_dir() else None
    )
    if cache:
        env["TIKTOKEN_CACHE_DIR"] = cache
    return env


@dataclass
class Server:
    label: str
    url: str
    pid: int
    others: tuple[int, ...] = ()  # more processes behind ``url`` (replicas behind a balancer)

    @property
    def pids(self) -> tuple[int, ...]:
        return (self.pid, *self.others)

    def cpu_seconds(self) -> float:
        """User + system CPU seconds of every process behind ``url``, to the nanosecond."""
        return measure.cpu_of(self.pids)

    def rss(self) -> int:
        return psutil.Process(self.pid).memory_info().rss


# Streamlit's post-run full collection, switched by environment (it overrides a config file).
POST_RUN_GC_ENV = "STREAMLIT_RUNNER_POST_SCRIPT_GC"


@contextmanager
def attnviz_server(
    gc: str = "config",
    extra_env: dict[str, str] | None = None,
    name: str = "attnviz",
    root: Path = ROOT,
):
    """attnviz as deployed: the Dockerfile's ENV, the checkout's config, ``streamlit run``.
    ``gc``: "config" (whatever .streamlit/config.toml says), "on" or "off" (forced by env);
    ``name``: the server's label and log file (test-artifacts/live-NAME.log); ``root``: the
    checkout to run (this one, or another commit's files beside it)."""
    env = {**deployed_env(), **(extra_env or {})}
    if gc != "config":
        env[POST_RUN_GC_ENV] = "true" if gc == "on" else "false"
    hole = Blackhole()
    log = ROOT / "test-artifacts" / f"live-{name}.log"
    try:
        with running_app("app.py", env={**env, **proxy_env(hole)}, log_path=log, cwd=root) as (
            url,
            proc,
        ):
            yield Server(name, url, proc.pid)
    finally:
        hole.close()


@contextmanager
def trivial_server(post_run_gc: bool = True, extra_env: dict[str, str] | None = None):
    """The trivial app, a plain ``streamlit run`` in its own folder (Streamlit's defaults).
    ``post_run_gc=False``: without the full collection Streamlit runs after every script run,
    which is most of its page run's CPU and moves with the host (bench/pair-results.md); what is
    left (Streamlit's run and one graph_objects heatmap) is the guard's yardstick. ``extra_env``:
    more environment on top (a ``STREAMLIT_*`` option, such as the script health check)."""
    hole = Blackhole()
    log = ROOT / "test-artifacts" / ("live-trivial.log" if post_run_gc else "live-trivial-nogc.log")
    command = streamlit_command(0, "app.py")
    command[command.index("--server.port") + 1] = "{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}
    if not post_run_gc:
        env[POST_RUN_GC_ENV] = "false"
    env.update(extra_env or {})
    try:
        with running_app(
            command=command, env={**env, **proxy_env(hole)}, log_path=log, cwd=TRIVIAL
        ) as (url, proc):
            yield Server("trivial", url, proc.pid)
    finally:
        hole.close()


def machine() -> dict:
    """What the ratios were measured on (saved with the guard's baseline)."""
    from importlib.metadata import version

    out = {"cores": os.cpu_count(), "python": platform.python_version()}
    for name in ("streamlit", "torch", "plotly"):
        out[name] = version(name)
    out["post-run GC"] = "off (.streamlit/config.toml)"
    return out


# --- 1. server CPU per warm page run -----------------------------------------------------------
def app_step(page, setting: str = "default") -> loadtest.Step:
    return loadtest.Step(
        setting, loadtest.query_for(setting), page.url_path, "" if page.default else page.url_path
    )


def trivial_step(i: int, seed: int = 0) -> loadtest.Step:
    return loadtest.Step(f"seed={seed}", f"seed={seed}", f"page-{i}", "" if i == 0 else f"page-{i}")


async def _cpu_per_run(server: Server, step: loadtest.Step, runs: int, warm: int) -> dict:
    session = loadtest.Session(server.url, timeout=120)
    await session.connect()
    try:
        for _ in range(warm):
            result = await session.rerun(step)
            if result.errors:
                raise RuntimeError(f"{server.label} {step.page}: {result.errors[0]}")
        await asyncio.sleep(0.3)  # the last warm-up run's after-run work ends
        before = server.cpu_seconds()
        start = time.perf_counter()
        received = 0
        for _ in range(runs):
            result = await session.rerun(step)
            received += result.received_bytes
        # What the server does after script_finished (the post-run collection) belongs to the
        # run: wait for it, then read the clock.
        await asyncio.sleep(0.3)
        cpu = server.cpu_seconds() - before
        wall = time.perf_counter() - start - 0.3
    finally:
        await session.close()
    return {
        "cpu_ms": 1000 * cpu / runs,
        "wall_ms": 1000 * wall / runs,
        "kb": received / runs / 1024,
    }


def cpu_per_run(server: Server, step: loadtest.Step, runs: int = 10, warm: int = 3) -> dict:
    return aio.run(_cpu_per_run(server, step, runs, warm))


def page_costs(app: Server, trivial: Server, pages, runs: int = 10, blocks: int = 3) -> dict:
    """Per page: the median over ``blocks`` alternating blocks of the app's and the trivial
    app's CPU per warm run (ms), and their ratio."""
    out = {}
    for i, page in enumerate(pages):
        ours, theirs, kb = [], [], []
        for block in range(blocks):
            warm = 3 if block == 0 else 1
            a = cpu_per_run(app, app_step(page), runs, warm)
            t = cpu_per_run(trivial, trivial_step(i % TRIVIAL_PAGES), runs, warm)
            ours.append(a["cpu_ms"])
            theirs.append(t["cpu_ms"])
            kb.append(a["kb"])
        app_ms, trivial_ms = statistics.median(ours), statistics.median(theirs)
        out[page.path] = {
            "page": page.url_path,
            "app_ms": app_ms,
            "trivial_ms": trivial_ms,
            "ratio": app_ms / trivial_ms,
            "kb": statistics.median(kb),
        }
        print(
            f"  {page.url_path:26s} server CPU per warm run {app_ms:6.1f} ms  "
            f"trivial {trivial_ms:5.1f} ms  ratio {app_ms / trivial_ms:5.2f}  "
            f"({statistics.median(kb):.0f} kB a run)",
            flush=True,
        )
    return out


# --- 2. N concurrent sessions ------------------------------------------------------------------
@dataclass
class LoadArgs:  # what loadtest.run_load reads
    max_seconds: float
    timeout: float
    settle: float


def load(server: Server, label: str, steps, settings, pages, sessions: int, args) -> dict:
    report = loadtest.Report(label, sessions, 1, tuple(settings), tuple(pages))
    before = os.getloadavg()[0]
    load_args = LoadArgs(args.max_seconds, args.timeout, 2.0)
    try:
        aio.run(
            asyncio.wait_for(
                loadtest.run_load(server.url, server.pid, report, steps, load_args),
                args.max_seconds + 60,
            )
        )
    except TimeoutError as exc:
        report.failures.append(f"time budget: {exc!r}")
    times = [r.seconds for r in report.results]
    runs = len(report.results)
    return {
        "loadavg": (before, os.getloadavg()[0]),
        "label": label,
        "sessions": sessions,
        "runs": runs,
        "runs_per_s": report.reruns_per_second,
        "p50": loadtest.pct(times, 0.5),
        "p95": loadtest.pct(times, 0.95),
        "cpu_ms": 1000 * report.cpu_seconds / runs if runs else float("nan"),
        "cores_busy": report.cpu_seconds / report.load_seconds if report.load_seconds else 0.0,
        "errors": report.errors,
        "mismatches": report.mismatches,
        "kb": statistics.mean(r.received_bytes for r in report.results) / 1024 if runs else 0,
        "rss_before": report.rss.get("before", 0),
        "rss_peak": report.rss.get("peak", 0),
        "pages": report.page_rows(),
    }


def app_load_plan(settings: tuple[str, ...]):
    pages = app_pages()
    steps = [app_step(p, s) for s in settings for p in pages]
    return steps, settings, [p.url_path for p in pages]


def trivial_load_plan(count: int):
    seeds = range(count)
    steps = [trivial_step(i, s) for s in seeds for i in range(TRIVIAL_PAGES)]
    return steps, [f"seed={s}" for s in seeds], [f"page-{i}" for i in range(TRIVIAL_PAGES)]


# --- 2. and 3. cold runs, the own-sentence class -------------------------------------------------
def cold_costs(app: Server, trivial: Server, pages, rounds: int, seed: int) -> dict:
    """Per page: cold, warm and trivial ms and the ratios (bench/measure.py's pairs)."""
    load = os.getloadavg()[0]
    pairs = measure.cold_warm_pairs(app, trivial, pages, rounds, seed)
    out = {}
    for path, pp in pairs.items():
        row = {**pp.summary(), "loadavg": (load, os.getloadavg()[0])}
        out[path] = row
        print(
            f"  {row['page']:26s} cold {row['cold_ms']:6.1f} ms  warm {row['warm_ms']:5.1f} ms  "
            f"trivial {row['trivial_ms']:5.1f} ms  cold/trivial {row['cold_ratio']:5.2f}  "
            f"warm/trivial {row['warm_ratio']:4.2f}  (load {os.getloadavg()[0]:.1f})",
            flush=True,
        )
        if row["errors"]:
            print(f"    errors: {row['errors'][:3]}")
    return out


def own_sentence_classes(app: Server, trivial: Server, sessions: int, seed: int) -> list[dict]:
    """The own-sentence class on attnviz, then on the trivial app, under one harness."""
    rows = []
    for server, is_trivial in ((app, False), (trivial, True)):
        label = "trivial app" if is_trivial else "attnviz"
        print(f"own-sentence class: {sessions} sessions × 6 page runs on {label} …", flush=True)
        result = measure.own_sentence_class(
            server.url, server.pids, label, sessions, seed, trivial=is_trivial
        )
        rows.append(result.row())
        print(f"  {class_line(rows[-1])}", flush=True)
    return rows


def class_line(r: dict) -> str:
    return (
        f"{r['label']}: {r['runs']} runs, {r['runs_per_s']:.2f} runs/s, p50 {r['p50']:.2f} s, "
        f"p95 {r['p95']:.2f} s, {r['cpu_ms']:.1f} ms CPU a run, {len(r['errors'])} errors "
        f"(load {r['loadavg'][0]:.1f} → {r['loadavg'][1]:.1f})"
    )


def class_table(rows: list[dict]) -> list[str]:
    lines = [
        "| served | sessions | page runs | runs/s | p50 (s) | p95 (s) | server CPU per run (ms) | "
        "cores busy | errors | load average before / after |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['label']} | {r['sessions']} | {r['runs']} | {r['runs_per_s']:.2f} | "
            f"{r['p50']:.2f} | {r['p95']:.2f} | {r['cpu_ms']:.1f} | {r['cores_busy']:.2f} | "
            f"{len(r['errors'])} | {r['loadavg'][0]:.1f} / {r['loadavg'][1]:.1f} |"
        )
    return lines


# --- report ------------------------------------------------------------------------------------
def markdown(results: dict, args, wall: float, gc: str) -> str:
    from importlib.metadata import version

    costs, cold = results.get("warm", {}), results.get("cold", {})
    classes, loads = results.get("class", []), results.get("load", [])
    pkgs = ", ".join(f"{n} {version(n)}" for n in ("streamlit", "torch", "plotly", "websockets"))
    command = "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]])
    lines = [
        "# attnviz on the live server",
        "",
        f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}, `{command}`; {wall:.0f} s in all. "
        f"Machine: {os.cpu_count()} cores ({platform.machine()}), shared with other work "
        f"(load average at the start {results['loadavg'][0]:.1f}, at the end "
        f"{os.getloadavg()[0]:.1f}); {pkgs}. attnviz runs as the "
        "Docker image does (the Dockerfile's ENV, the repository's config"
        + ("" if gc == "config" else f", post-run GC forced {gc}")
        + "); the trivial app (bench/trivial/, one cached 64×64 heatmap per page) runs on "
        "Streamlit's defaults (post-run GC on). Both on loopback, side by side in this run. "
        "Server CPU: the server process's user + system time, every thread (bench/measure.py).",
        "",
    ]
    if costs:
        lines += [
            "## Server CPU per warm page run (one session, default settings)",
            "",
            "The server process's user + system CPU over "
            f"{args.runs} reruns of the page, median of {args.blocks} blocks alternating "
            "with the trivial app's. Load average "
            f"{results['warm_load'][0]:.1f} before, {results['warm_load'][1]:.1f} after.",
            "",
            "| page | attnviz (ms) | trivial app (ms) | ratio | received per run (kB) |",
            "|---|---:|---:|---:|---:|",
        ]
        for c in costs.values():
            lines.append(
                f"| {c['page']} | {c['app_ms']:.1f} | {c['trivial_ms']:.1f} | "
                f"{c['ratio']:.2f} | {c['kb']:.0f} |"
            )
        lines.append("")
    if cold:
        first = next(iter(cold.values()))
        lines += [
            "## Cold runs: the first run of each page with a new text",
            "",
            f"{args.cold_rounds} rounds over the pages (seed {results['seed']}); in each, per "
            "page: the first run with a new text (5–8 common words no one computed before, "
            "every other value at its default), a trivial-app page run with a new seed, the "
            "page's warm rerun, another trivial run. Server CPU of each run on its own, its "
            "tail included; medians over the rounds, ratios the median over pairs of "
            "(app run / the trivial run right after it). Load average "
            f"{first['loadavg'][0]:.1f} before the cold runs, {first['loadavg'][1]:.1f} after.",
            "",
            "| page | cold (ms) | warm (ms) | trivial (ms) | cold / trivial | warm / trivial | "
            "errors |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for c in cold.values():
            lines.append(
                f"| {c['page']} | {c['cold_ms']:.1f} | {c['warm_ms']:.1f} | "
                f"{c['trivial_ms']:.1f} | {c['cold_ratio']:.2f} | {c['warm_ratio']:.2f} | "
                f"{len(c['errors'])} |"
            )
        lines.append("")
    if classes:
        lines += [
            f"## The own-sentence class: {classes[0]['sessions']} sessions, each with a sentence "
            "of its own, one sidebar value changed at each of six page runs",
            "",
            "Each session connects (the page over HTTP, then the websocket), then runs six "
            "pages back to back: its own text, then d_out, heads, training mode, dropout and "
            "one seed changed in turn (every value valid), a page each (why attention, the four "
            "passes, against PyTorch; rotated per session). The trivial app: six page runs per "
            "session, each with a seed no one used. Latency from sending the run to "
            "`script_finished`; CPU over the whole load.",
            "",
            *class_table(classes),
            "",
        ]
        problems = [f"- {r['label']}: {e}" for r in classes for e in r["errors"]]
        lines += ["Errors:", "", "\n".join(problems[:20]) or "None.", ""]
    if loads:
        lines += [
            f"## {loads[0]['sessions']} concurrent sessions, each opening every page under "
            "every setting",
            "",
            "| app | page runs | errors | figure mismatches | runs/s | p50 (s) | p95 (s) | "
            "server CPU per run (ms) | cores busy | received per run (kB) | RSS before / peak (MB) | "
            "load average before / after |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for r in loads:
            lines.append(
                f"| {r['label']} | {r['runs']} | {len(r['errors'])} | {len(r['mismatches'])} | "
                f"{r['runs_per_s']:.2f} | {r['p50']:.2f} | {r['p95']:.2f} | {r['cpu_ms']:.1f} | "
                f"{r['cores_busy']:.2f} | {r['kb']:.0f} | {r['rss_before'] / 2**20:.0f} / "
                f"{r['rss_peak'] / 2**20:.0f} | {r['loadavg'][0]:.1f} / {r['loadavg'][1]:.1f} |"
            )
        for r in loads:
            lines += [
                "",
                f"**{r['label']}** per page (seconds): single session, p50 and p95 under load",
                "",
                "| page | runs | single | p50 | p95 | max | kB a run |",
                "|---|---:|---:|---:|---:|---:|---:|",
            ]
            for page, n, single, p50, p95, worst, kb in r["pages"]:
                lines.append(
                    f"| {page} | {n} | {single:.3f} | {p50:.3f} | {p95:.3f} | {worst:.3f} | "
                    f"{kb:.0f} |"
                )
        problems = [f"- {r['label']}: {e}" for r in loads for e in (r["errors"] + r["mismatches"])]
        lines += ["", "Errors and mismatches:", "", "\n".join(problems[:20]) or "None."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=10, help="warm reruns per block (10)")
    parser.add_argument("--blocks", type=int, default=3, help="alternating blocks per page (3)")
    parser.add_argument(
        "--cold-rounds", type=int, default=5, help="cold runs per page, one a round (5; 0: none)"
    )
    parser.add_argument("--seed", type=int, default=None, help="the texts' seed (a new one)")
    parser.add_argument("--sessions", type=int, default=50, help="concurrent sessions; 0: none")
    parser.add_argument(
        "--settings",
        default=",".join(loadtest.SETTINGS),
        help="comma list of bench/loadtest.py settings for the load (all five)",
    )
    parser.add_argument("--gc", choices=("config", "on", "off"), default="config")
    parser.add_argument("--skip-pages", action="store_true", help="no per-page measurements")
    parser.add_argument(
        "--skip-shared", action="store_true", help="no shared-settings load (only the class)"
    )
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--max-seconds", type=float, default=1500.0)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if not 0 <= args.sessions <= loadtest.MAX_SESSIONS:
        parser.error(f"--sessions must be 0–{loadtest.MAX_SESSIONS}")
    settings = tuple(s.strip() for s in args.settings.split(","))
    seed = args.seed if args.seed is not None else time.time_ns() % 2**31
    started = time.perf_counter()
    results: dict = {"loadavg": os.getloadavg(), "seed": seed}
    with ExitStack() as stack:
        app = stack.enter_context(attnviz_server(args.gc))
        trivial = stack.enter_context(trivial_server())
        print(f"attnviz {app.url} (pid {app.pid}), trivial {trivial.url} (pid {trivial.pid})")
        if not args.skip_pages:
            print(
                f"server CPU per warm page run, default settings (load {os.getloadavg()[0]:.1f}):"
            )
            before = os.getloadavg()[0]
            results["warm"] = page_costs(app, trivial, app_pages(), args.runs, args.blocks)
            results["warm_load"] = (before, os.getloadavg()[0])
            if args.cold_rounds:
                print(f"cold runs, a new text each (seed {seed}, load {os.getloadavg()[0]:.1f}):")
                results["cold"] = cold_costs(app, trivial, app_pages(), args.cold_rounds, seed)
        if args.sessions:
            results["class"] = own_sentence_classes(app, trivial, args.sessions, seed + 1)
        if args.sessions and not args.skip_shared:
            loads = results["load"] = []
            steps, names, pages = app_load_plan(settings)
            print(f"load: {args.sessions} sessions × {len(steps)} page runs on attnviz …")
            loads.append(load(app, "attnviz", steps, names, pages, args.sessions, args))
            steps, names, pages = trivial_load_plan(len(settings))
            print(f"load: {args.sessions} sessions × {len(steps)} page runs on the trivial app …")
            loads.append(load(trivial, "trivial app", steps, names, pages, args.sessions, args))
    wall = time.perf_counter() - started
    text = markdown(results, args, wall, args.gc)
    print()
    print(text)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(f"written to {args.output}")
    bad = [r for r in results.get("load", []) if r["errors"] or r["mismatches"]]
    bad += [r for r in results.get("class", []) if r["errors"]]
    bad += [r for r in results.get("cold", {}).values() if r["errors"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
