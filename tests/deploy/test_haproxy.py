"""deploy/haproxy.cfg, for real, on loopback: Debian's haproxy runs the very file Compose
mounts into the official image, in front of two ``streamlit run app.py`` on 127.0.0.1 that
share one server.cookieSecret (as deploy/compose.yaml gives them).

Students (tests/deploy/student.py) load the page, keep the cookies, open the websocket with
them, run every page and download CSVs the way the CSV button does. Checked: both replicas
get students; every page run succeeds; a CSV lives only in the memory of the replica that drew
the page, and the cookie takes the download (and a reconnect) there; a replica that dies is
routed around; /_stcore/metrics is not served. Under load, throughput through HAProxy is
measured beside one replica's, and CSV clicks whose file Streamlit swept before the download
are counted for both (see _load); test-artifacts/haproxy-load.md has the table.

bench/loadtest.py cannot be pointed at a URL (it starts its own server), so the load here is
driven by this module's students.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import random
import shutil
import subprocess
import time
from contextlib import ExitStack
from urllib.parse import urlencode

import pytest

from tests.deploy.student import Student, csv_shape, http_get
from tests.support.network import free_port, proxy_env
from tests.support.pages import ROOT, app_pages
from tests.support.server import running_app

CONFIG = ROOT / "deploy" / "haproxy.cfg"
COOKIE = "ATTNVIZ_REPLICA"
REPLICAS = ("replica-a", "replica-b")
PAGES = [p for p in app_pages() if p.draws_sidebar_text]  # pages drawn from the sidebar's text
SETTINGS = (
    {},
    {"text": "The cat sat on the mat", "d_in": "32", "d_out": "16", "heads": "4"},
)
SESSIONS = int(os.environ.get("ATTNVIZ_LB_SESSIONS", "12"))


def page_name(page) -> str:
    return "" if page.default else page.url_path


def haproxy_binary() -> str:
    binary = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin")
    if not binary:
        pytest.fail("haproxy is not installed: apt-get install -y haproxy")
    return binary


class Cluster:
    def __init__(self, replicas: dict[str, str], procs: dict[str, subprocess.Popen], proxy: str):
        self.replicas = replicas  # name -> http://127.0.0.1:PORT
        self.procs = procs  # name -> its streamlit process
        self.url = proxy


def wait_until(predicate, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except OSError:  # not listening yet
            pass
        time.sleep(0.25)
    raise AssertionError(f"not within {seconds} s: {what}")


def replica_of_new_visitors(url: str, visits: int) -> list[str]:
    return [
        next(
            (
                c.split("=", 1)[1].split(";")[0]
                for c in http_get(url + "/")[2]
                if c.startswith(COOKIE)
            ),
            "",
        )
        for _ in range(visits)
    ]


@pytest.fixture(scope="module")
def cluster(blackhole, artifacts):
    env = dict(proxy_env(blackhole))
    cache = ROOT.parent / "shared" / "tiktoken_cache"
    if cache.is_dir():
        env["TIKTOKEN_CACHE_DIR"] = str(cache)
    # One secret for every replica, as Compose and Kubernetes give them.
    env["STREAMLIT_SERVER_COOKIE_SECRET"] = "test-" + os.urandom(16).hex()
    with ExitStack() as stack:
        replicas, procs = {}, {}
        for name in REPLICAS:
            replicas[name], procs[name] = stack.enter_context(
                running_app(env=env, log_path=artifacts / f"haproxy-{name}.log")
            )
        port = free_port()
        haproxy_env = {
            **os.environ,
            "ATTNVIZ_BIND": f"127.0.0.1:{port}",
            "ATTNVIZ_REPLICA_A": replicas["replica-a"].split("://")[1],
            "ATTNVIZ_REPLICA_B": replicas["replica-b"].split("://")[1],
        }
        log = stack.enter_context(open(artifacts / "haproxy.log", "w"))
        proc = subprocess.Popen(
            [haproxy_binary(), "-db", "-f", str(CONFIG)],
            env=haproxy_env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        stack.callback(lambda: (proc.terminate(), proc.wait(10)))
        proxy = f"http://127.0.0.1:{port}"
        wait_until(lambda: http_get(proxy + "/_stcore/health")[0] == 200, 30, "HAProxy answers")
        # Both replicas pass HAProxy's health check (rise 2 x inter 3 s).
        wait_until(
            lambda: set(replica_of_new_visitors(proxy, 4)) == set(REPLICAS), 30, "both replicas up"
        )
        yield Cluster(replicas, procs, proxy)


def _run(coroutine):
    """``asyncio.run`` in a thread of its own: a browser test earlier in the same process
    (Playwright's sync API) can leave this thread with an event loop still marked running."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def test_the_config_is_valid_for_debians_haproxy():
    env = {
        **os.environ,
        "ATTNVIZ_BIND": "127.0.0.1:1",
        "ATTNVIZ_REPLICA_A": "127.0.0.1:2",
        "ATTNVIZ_REPLICA_B": "127.0.0.1:3",
    }
    result = subprocess.run(
        [haproxy_binary(), "-c", "-f", str(CONFIG)], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_new_visitors_are_spread_over_both_replicas_and_told_which(cluster):
    seen = replica_of_new_visitors(cluster.url, 6)
    assert sorted(set(seen)) == sorted(REPLICAS), seen
    assert seen.count("replica-a") == seen.count("replica-b") == 3  # round robin


def test_metrics_are_not_served_through_the_balancer(cluster):
    assert http_get(cluster.url + "/_stcore/metrics")[0] == 404
    assert http_get(cluster.replicas["replica-a"] + "/_stcore/metrics")[0] == 200


async def _one_student_downloads(cluster) -> dict:
    student = Student(cluster.url)
    assert await student.load_page("/") == 200
    replica = student.cookies.get(COOKIE)
    await student.connect()
    try:
        page = next(p for p in PAGES if not p.default)
        run = await student.run_page(page.url_path, urlencode({"text": "One two three four"}))
        assert run.problems == [] and run.downloads, run
        url = await student.csv_url(run.downloads[0])
        status, body = await student.download(url)
        direct = {name: http_get(base + url)[0] for name, base in cluster.replicas.items()}
        # Reconnect (a laptop lid, a network blip): the cookie brings it back to its replica.
        await student.close()
        await student.connect()
        again = await student.run_page(page.url_path, urlencode({"text": "One two three four"}))
        url_again = await student.csv_url(again.downloads[0])
        direct_again = {
            name: http_get(base + url_again)[0] for name, base in cluster.replicas.items()
        }
    finally:
        await student.close()
    return {
        "replica": replica,
        "status": status,
        "shape": csv_shape(body),
        "labels": [line.split(",")[0] for line in body.decode().splitlines()[1:5]],
        "direct": direct,
        "direct_again": direct_again,
    }


def test_a_csv_lives_on_one_replica_and_the_cookie_takes_the_student_there(cluster):
    result = _run(_one_student_downloads(cluster))
    replica = result["replica"]
    other = next(r for r in REPLICAS if r != replica)
    assert replica in REPLICAS
    assert result["status"] == 200
    # One row per token of the student's text, in the numbers of the replica that drew it.
    assert result["labels"] == ["0: One", "1: ␣two", "2: ␣three", "3: ␣four"], result["labels"]
    # The file exists only in the memory of the replica that drew the page: without the
    # cookie, half of the downloads would fail.
    assert result["direct"] == {replica: 200, other: 404}
    # After the reconnect the new page run happened on the same replica.
    assert result["direct_again"] == {replica: 200, other: 404}


async def _load(url: str, sessions: int, seed: int) -> dict:
    """``sessions`` students at once, each running every page under every setting in its own
    order and clicking one CSV button per page run; then, once every student is done and the
    server is quiet, each downloads one more CSV from its last page.

    Streamlit 1.67 keeps a CSV generated on click in memory unreferenced, and its clean-up
    after any session's run (two sweeps) deletes it: under load a download can miss it even
    on one replica alone. Those misses are counted ("during the load") and compared with one
    replica's; the downloads in the quiet phase show the routing alone, and must all succeed.
    """
    steps = [(p, s) for p in PAGES for s in SETTINGS]
    errors: list[str] = []
    replicas: list[str] = []
    runs: list[float] = []
    csv = {"ok": 0, "missing": 0, "quiet ok": 0}
    done = 0
    all_done = asyncio.Event()

    async def click_csv(student: Student, file_id: str) -> int:
        status, body = await student.download(await student.csv_url(file_id))
        if status == 200:
            csv_shape(body)
        return status

    async def student_life(i: int) -> None:
        nonlocal done
        rng = random.Random(seed + i)
        student = Student(url)
        last: list[str] = []
        try:
            status = await student.load_page("/")
            if status != 200:
                errors.append(f"page load {status}")
                return
            replicas.append(student.cookies.get(COOKIE, "(no cookie)"))
            await student.connect()
            order = steps[:]
            rng.shuffle(order)
            for page, setting in order:
                run = await student.run_page(page_name(page), urlencode(setting))
                runs.append(run.seconds)
                errors.extend(run.problems)
                if run.downloads:
                    last = run.downloads
                    status = await click_csv(student, rng.choice(run.downloads))
                    csv["ok" if status == 200 else "missing"] += 1
                    if status not in (200, 404):
                        errors.append(f"CSV download {status}")
        except Exception as error:  # noqa: BLE001 - every failure is counted, none stops the rest
            errors.append(f"{type(error).__name__}: {error}")
        finally:
            done += 1
            if done == sessions:
                all_done.set()
        try:
            await asyncio.wait_for(all_done.wait(), 600)
            if last:
                status = await click_csv(student, last[0])
                if status == 200:
                    csv["quiet ok"] += 1
                else:
                    errors.append(f"CSV download in the quiet phase: {status}")
        except Exception as error:  # noqa: BLE001
            errors.append(f"{type(error).__name__}: {error}")
        finally:
            await student.close()

    started = time.monotonic()
    await asyncio.wait_for(
        asyncio.gather(*(student_life(i) for i in range(sessions))), timeout=1200
    )
    seconds = time.monotonic() - started
    runs.sort()
    return {
        "sessions": sessions,
        "runs": len(runs),
        "expected_runs": sessions * len(steps),
        "csv": csv,
        "errors": errors,
        "replicas": {r: replicas.count(r) for r in sorted(set(replicas))},
        "seconds": seconds,
        "runs_per_second": len(runs) / seconds,
        "p50": runs[len(runs) // 2] if runs else float("nan"),
        "p95": runs[int(len(runs) * 0.95)] if runs else float("nan"),
    }


def test_load_through_the_balancer_has_no_errors_and_uses_both_replicas(cluster, artifacts):
    through = _run(_load(cluster.url, SESSIONS, seed=1))
    assert through["errors"] == [], through["errors"][:5]
    assert through["runs"] == through["expected_runs"]
    # Every student's CSV reached the replica holding it (both replicas have students).
    assert through["csv"]["quiet ok"] == SESSIONS
    assert set(through["replicas"]) == set(REPLICAS), through["replicas"]
    assert min(through["replicas"].values()) >= SESSIONS // 2 - 1, through["replicas"]
    # The same load on one replica alone, for scale (same machine, same run).
    alone = _run(_load(cluster.replicas["replica-a"], SESSIONS, seed=1))
    assert alone["errors"] == [], alone["errors"][:5]
    lines = [
        f"# Load through HAProxy ({SESSIONS} sessions, {len(PAGES)} pages x {len(SETTINGS)} "
        "settings each, one CSV click per page run, one more CSV each after the load)",
        "",
        "| target | page runs | errors | runs/s | p50 s | p95 s | sessions per replica "
        "| CSV during the load: ok / swept | CSV after the load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in (("HAProxy, 2 replicas", through), ("one replica directly", alone)):
        lines.append(
            f"| {name} | {r['runs']} | {len(r['errors'])} | {r['runs_per_second']:.2f} | "
            f"{r['p50']:.2f} | {r['p95']:.2f} | {r['replicas']} | "
            f"{r['csv']['ok']} / {r['csv']['missing']} | {r['csv']['quiet ok']} of {r['sessions']} |"
        )
    report = "\n".join(lines) + "\n"
    (artifacts / "haproxy-load.md").write_text(report)
    print("\n" + report)


def test_a_replica_that_dies_gets_no_new_students(cluster):
    """Last in this module: it stops replica-b, as a crash or a rolling update would."""
    cluster.procs["replica-b"].terminate()
    cluster.procs["replica-b"].wait(15)
    # HAProxy's health check marks it down within fall 2 x inter 3 s; then every new visitor
    # lands on replica-a, and a student still holding replica-b's cookie is sent there too.
    wait_until(
        lambda: set(replica_of_new_visitors(cluster.url, 4)) == {"replica-a"}, 30, "routed around"
    )
    status, _, cookies = http_get(cluster.url + "/", {COOKIE: "replica-b"})
    assert status == 200
    assert any(c.startswith(f"{COOKIE}=replica-a") for c in cookies), cookies
