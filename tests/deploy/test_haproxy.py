"""deploy/haproxy.cfg, for real, on loopback: Debian's haproxy runs the very file Compose
mounts into the official image, in front of two ``streamlit run app.py`` on 127.0.0.1 that
share one server.cookieSecret (as deploy/compose.yaml gives them).

Students are bench/loadtest.py's sessions (the project's one load client): they load the page,
keep the cookies, open the websocket with them, run pages, open a matrix's "Numbers and CSV"
box and download its CSV from the /media/ URL on the button. Checked: both replicas get
students; a CSV lives only in the memory of the replica that drew the page, and the cookie
takes the download (and a reconnect) there; a replica that dies is routed around;
/_stcore/metrics is not served. Under load, ``bench/loadtest.py --url <HAProxy> --url <one
replica>`` runs with 0 errors, every CSV download succeeding, both replicas serving sessions;
its table (throughput through HAProxy beside one replica's) is printed and written to
test-artifacts/haproxy-load.md.
"""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
from contextlib import ExitStack
from urllib.parse import urlencode

import pytest

from bench import live, loadtest
from bench.support import aio, haproxy
from bench.support.network import proxy_env
from bench.support.pages import ROOT, app_pages
from bench.support.server import running_app

CONFIG = haproxy.CONFIG
COOKIE = haproxy.COOKIE
REPLICAS = haproxy.REPLICAS
PAGES = [p for p in app_pages() if p.draws_sidebar_text]  # pages drawn from the sidebar's text
SESSIONS = int(os.environ.get("ATTNVIZ_LB_SESSIONS", "12"))
DOWNLOADS = 3  # CSV downloads per student during the load


def http_get(url: str, cookies: dict[str, str] | None = None):
    """(status, body, Set-Cookie values) of a GET, with no proxy."""
    status, body, headers = loadtest.http_get(url, cookies)
    return status, body, headers.get_all("Set-Cookie") or []


class Cluster:
    def __init__(self, replicas: dict[str, str], procs: dict[str, subprocess.Popen], proxy: str):
        self.replicas = replicas  # name -> http://127.0.0.1:PORT
        self.procs = procs  # name -> its streamlit process
        self.url = proxy


def wait_until(predicate, seconds: float, what: str) -> None:
    try:
        haproxy.wait_until(predicate, seconds, what)
    except RuntimeError as exc:
        raise AssertionError(str(exc)) from None


def replica_of_new_visitors(url: str, visits: int) -> list[str]:
    return haproxy.sticky_values(url, visits)


@pytest.fixture(scope="module")
def cluster(blackhole, artifacts):
    # The image's environment (one torch thread, as deployed), so that both replicas compute
    # alike: a matrix product on two threads differs in its last bits from one on one thread,
    # and with torch's default threads one run of this test saw every figure of one setting
    # differ between the replicas in that way.
    env = {**live.deployed_env(), **proxy_env(blackhole)}
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
        # The repository's config, once it answers and both replicas pass its health check.
        proxy = stack.enter_context(
            haproxy.running_haproxy(
                replicas["replica-a"], replicas["replica-b"], artifacts / "haproxy.log"
            )
        )
        yield Cluster(replicas, procs, proxy)


def test_the_config_is_valid_for_debians_haproxy():
    env = haproxy.config_env("127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3")
    result = subprocess.run(
        [haproxy.haproxy_binary(), "-c", "-f", str(CONFIG)],
        env=env,
        capture_output=True,
        text=True,
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
    student = loadtest.Session(cluster.url, timeout=120)
    assert await student.load_page("/") == 200
    replica = student.cookies.get(COOKIE)
    page = next(p for p in PAGES if not p.default)
    step = loadtest.Step(
        "", urlencode({"text": "One two three four"}), page.url_path, page.url_path
    )
    await student.connect()
    try:
        run = await student.rerun(step)
        assert run.errors == [] and run.boxes, run
        key = next(iter(run.boxes))  # the page's first matrix
        opened = await student.rerun(step, open_box=run.boxes[key])
        url = opened.csv_urls[key]
        status, body, _ = await student.download(url)
        direct = {name: http_get(base + url)[0] for name, base in cluster.replicas.items()}
        # Reconnect (a laptop lid, a network blip): the cookie brings it back to its replica.
        await student.close()
        await student.connect()
        again = await student.rerun(step)
        opened_again = await student.rerun(step, open_box=again.boxes[key])
        url_again = opened_again.csv_urls[key]
        direct_again = {
            name: http_get(base + url_again)[0] for name, base in cluster.replicas.items()
        }
    finally:
        await student.close()
    return {
        "replica": replica,
        "status": status,
        "labels": [line.split(",")[0] for line in body.decode().splitlines()[1:5]],
        "closed": [k for k in run.boxes if k in run.csv_urls],
        "direct": direct,
        "direct_again": direct_again,
    }


def test_a_csv_lives_on_one_replica_and_the_cookie_takes_the_student_there(cluster):
    result = aio.run(_one_student_downloads(cluster))
    replica = result["replica"]
    other = next(r for r in REPLICAS if r != replica)
    assert replica in REPLICAS
    assert result["closed"] == []  # a closed box has no CSV button
    assert result["status"] == 200
    # One row per token of the student's text, in the numbers of the replica that drew it.
    assert result["labels"] == ["0: One", "1: ␣two", "2: ␣three", "3: ␣four"], result["labels"]
    # The file exists only in the memory of the replica that drew the page: without the
    # cookie, half of the downloads would fail.
    assert result["direct"] == {replica: 200, other: 404}
    # After the reconnect the new page run happened on the same replica.
    assert result["direct_again"] == {replica: 200, other: 404}


def test_the_load_test_through_the_balancer_downloads_every_csv_on_both_replicas(
    cluster, artifacts
):
    """bench/loadtest.py --url HAProxy --url one-replica: the project's load test, as run by
    hand, in this process (its reports are read back, not parsed from its output)."""
    output = artifacts / "haproxy-load.md"
    argv = [
        "--url",
        f"HAProxy, 2 replicas={cluster.url}",
        "--url",
        f"one replica directly={cluster.replicas['replica-a']}",
        "--sessions",
        str(SESSIONS),
        "--settings",
        "default,4 heads",
        "--downloads",
        str(DOWNLOADS),
        "--timeout",
        "180",
        "--max-seconds",
        "900",
        "--output",
        str(output),
    ]
    args = loadtest.parse_args(argv)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:  # see aio.run
        reports, wall, load = pool.submit(loadtest.run, args).result()
    loadtest.write_markdown(output, reports, args, wall, load)
    print("\n" + loadtest.tables(reports) + "\n\n" + loadtest.problems(reports))
    through, alone = reports
    pages = len(app_pages())
    for report in (through, alone):
        assert report.errors == [], report.errors[:5]
        assert report.mismatches == [], report.mismatches[:5]
        assert len(report.results) == SESSIONS * pages * 2
        # Every student downloaded its CSVs, each a 200 with a CSV of the figure's shape.
        assert len(report.downloads) == SESSIONS * DOWNLOADS
        assert report.failed_downloads == 0
        assert report.reruns_per_second > 0
    # New visitors alternate between the replicas, so both serve students.
    assert set(through.sticky) == set(REPLICAS), through.sticky
    assert min(through.sticky.values()) >= SESSIONS // 2 - 1, through.sticky
    assert set(alone.sticky) == {"(none)"}  # straight to a replica: no balancer, no cookie


def test_a_replica_that_dies_gets_no_new_students(cluster):
    """Last in this module: it stops replica-b, as a crash or a rolling update would."""
    cluster.procs["replica-b"].terminate()
    cluster.procs["replica-b"].wait(15)
    # HAProxy's health check marks it down within fall 3 x fastinter 2 s; then every new visitor
    # lands on replica-a, and a student still holding replica-b's cookie is sent there too.
    wait_until(
        lambda: set(replica_of_new_visitors(cluster.url, 4)) == {"replica-a"}, 30, "routed around"
    )
    status, _, cookies = http_get(cluster.url + "/", {COOKIE: "replica-b"})
    assert status == 200
    assert any(c.startswith(f"{COOKIE}=replica-a") for c in cookies), cookies


def _get_gzip(url: str, cookies: dict[str, str] | None = None):
    """(status, body as sent, headers) of a GET that accepts gzip, with no proxy."""
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    headers = {"Accept-Encoding": "gzip"}
    if cookies:
        headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
    request = urllib.request.Request(url, headers=headers)
    with opener.open(request, timeout=30) as response:
        return response.status, response.read(), {k.lower(): v for k, v in response.headers.items()}


def test_static_files_are_gzipped_through_the_balancer_with_their_cache_headers(cluster):
    """The balancer answers Streamlit's fingerprinted files itself, gzipped at build time
    (deploy/static.lua): Streamlit's immutable header, with or without the replica cookie, and
    no cookie set. (A file it does not hold goes to a replica: without the cookie, the answer
    sets one, and the cookie's ``nocache`` marks that one response private.)"""
    import gzip
    import re

    _, page, _ = _get_gzip(cluster.replicas["replica-a"] + "/")
    script = re.search(rb'src="\./(static/js/index\.[^"]+\.js)"', page).group(1).decode()
    sticky = {COOKIE: "replica-a"}
    status, body, through = _get_gzip(f"{cluster.url}/{script}", sticky)
    _, plain, direct = _get_gzip(f"{cluster.replicas['replica-a']}/{script}")
    assert status == 200
    assert direct.get("content-encoding") is None  # Streamlit 1.67 sends it as it is
    assert through["content-encoding"] == "gzip"
    assert gzip.decompress(body) == plain
    assert len(body) < 0.6 * len(plain)
    assert through["cache-control"] == direct["cache-control"]
    assert direct["cache-control"] == "public, immutable, max-age=31536000"
    assert "set-cookie" not in through
    assert body == (haproxy.precompressed_static() / (script + ".gz")).read_bytes()
    _, _, first_contact = _get_gzip(f"{cluster.url}/{script}")
    assert first_contact["cache-control"] == direct["cache-control"]
    assert "set-cookie" not in first_contact
    # The page itself always comes from a replica, which sets the cookie.
    _, _, page = _get_gzip(f"{cluster.url}/")
    assert page["set-cookie"].startswith(COOKIE)
    assert page["cache-control"] in ("private", "no-cache"), page["cache-control"]
