"""A class on the live server: 50 phones answering over Streamlit's websocket, the projector
counting, two replicas behind HAProxy sharing Redis, Redis going away mid-class, nothing
reaching a phone before the reveal, and what it all costs beside a lesson page.

Every student and the projector are bench/classpoll.py's clients: each loads the page over
HTTP (keeping its cookies, so HAProxy's sticky cookie spreads them), then drives the poll page
over the websocket with the widget ids read from the deltas, as a phone's browser does; the
projector's live tally is the fragment its browser reruns every half second.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import re

import pytest

from attnviz.classroom import poll_questions
from attnviz.classroom.polls import Limits
from attnviz.classroom.redis_store import RedisPollStore
from attnviz.core.settings import Settings
from attnviz.teach import questions as Q
from bench import classpoll as CP
from bench import loadtest
from bench.support.network import proxy_env
from bench.support.redis_server import RedisServer
from bench.support.server import running_app
from ui.classroom.poll_views import STORE_RETRY

pytestmark = pytest.mark.slow

TEXT = "Your journey starts with one step"
UNAVAILABLE = "The poll store is unavailable (Redis did not answer)"


def run(coroutine):
    """``asyncio.run`` in a thread of its own (a Playwright test earlier in the process can
    leave this thread's event loop marked running)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


@pytest.fixture(scope="module")
def server(blackhole, artifacts):
    env = {**CP.app_env(), **proxy_env(blackhole)}
    with running_app(env=env, log_path=artifacts / "classpoll-live.log") as (url, proc):
        run(CP.warm(url))
        yield url, proc


LATENCY_P95 = 2.0  # seconds from a student's Send to the projector showing the answer


def check_class(r: CP.ClassResult, students: int, *, latency: bool = True) -> None:
    assert not r.errors, r.errors[:5]
    assert not r.inconsistent, r.inconsistent[:5]
    assert len(r.answers) == students and all(a.accepted for a in r.answers)
    # Every answer counted once: the projector's counts are the counts sent.
    assert sum(r.expected.values()) == students
    assert r.shown == r.expected, (r.shown, r.expected)
    assert r.lost == 0 and r.counted_twice == 0
    assert r.answered_shown == students
    old, new = r.changed
    assert r.moved() == {old: -1, new: +1}
    assert r.join_and_answer_seconds <= 10, r.join_and_answer_seconds
    assert len(r.latencies) == students
    if latency:
        assert loadtest.pct(r.latencies, 0.95) <= LATENCY_P95, sorted(r.latencies)[-5:]


def a_class(url: str, label: str, students: int = 50, **kw) -> CP.ClassResult:
    """A class on ``url``, checked; on this shared machine a class whose p95 from Send to
    the projector is over the limit (every count still exact) gets one more try, as the
    speed guard remeasures a page (a stall of another job's making shows in one class, not
    in two)."""
    result = run(CP.run_class(url, students, **kw))
    print(f"\n(load {os.getloadavg()[0]:.1f})", "\n".join(CP.class_lines(label, result)))
    check_class(result, students, latency=False)
    if loadtest.pct(result.latencies, 0.95) > LATENCY_P95:
        result = run(CP.run_class(url, students, seed=1, **kw))
        print(f"again (load {os.getloadavg()[0]:.1f})", "\n".join(CP.class_lines(label, result)))
    check_class(result, students)
    return result


# --- one server, in-process store ------------------------------------------------------------
def test_fifty_students_answer_within_ten_seconds_and_the_tally_is_exact(server):
    url, _ = server
    a_class(url, "1 server, in-process store")


def hidden_strings(q: Q.Question) -> set[str]:
    """The key and the hidden matrix (every raw score), as a page would print them."""
    n = Q.read(q.page, q.text, q.settings, q.book)
    assert n is not None
    values = [*n.raw.flatten().tolist(), float(q.key)]  # type: ignore[arg-type]
    found = {f"{v:.{d}f}" for v in values for d in (3, 4)} | {f"{float(q.key):.2f}"}  # type: ignore[arg-type]
    return {s for s in found if s not in q.prompt}


def test_nothing_reaches_a_phone_before_the_reveal_and_the_secret_never_does(server):
    url, _ = server
    # The score the presenter's start poses on pass 2 at the default settings, "Another
    # question" pressed ``seed`` times.
    trainable = Settings().for_pass("trainable")
    seed = next(
        s
        for s in range(12)
        if getattr(poll_questions.choose("trainable", TEXT, trainable, False, s), "kind", "")
        == Q.SCORE
    )
    q = poll_questions.choose("trainable", TEXT, trainable, False, seed)
    assert q is not None and q.kind == Q.SCORE
    secret_strings = hidden_strings(q)
    key = f"{float(q.key):.2f}"  # type: ignore[arg-type]

    async def lesson():
        projector = CP.Projector(url)
        phones = []
        try:
            opened = await projector.open(CP.NUMBER_PASS, another=seed)
            assert q.prompt in opened.texts()  # the server asked the question computed here
            phones = [CP.Student(url, projector.code) for _ in range(4)]
            before = []
            for i, phone in enumerate(phones):
                before.append(await phone.join())
                before.append(await phone.answer(0.5 + i / 10))
            await projector.press(CP.SHOW)
            for phone in phones:
                before.append(await phone.reload())  # the spread, shown to the class too
                before.append(await phone.watch())  # its watcher, as its timer sends it
            await projector.press(CP.REASK)
            for phone in phones:
                before.append(await phone.reload())
                before.append(await phone.answer(0.9))
            await projector.press(CP.REVEAL)
            after = [await phone.reload() for phone in phones]
            return projector, before, after
        finally:
            await asyncio.gather(
                projector.close(), *(p.close() for p in phones), return_exceptions=True
            )

    projector, before, after = run(lesson())
    for r in before:
        text = CP.unescape(r.raw.decode("utf-8", "replace"))
        leaked = sorted(s for s in secret_strings if s in text)
        assert not leaked, leaked
        # No true figure: at most the class's own answers, once the presenter shows them.
        assert not any("the answer" in c.spec for c in r.widgets("plotly_chart"))
        assert not r.exceptions
    # The checks can fail: after the reveal the key reaches every phone, with the true figure.
    for r in after:
        assert f"The answer: {key}" in r.texts()
        assert any("the answer" in c.spec for c in r.widgets("plotly_chart"))
    # The secret reaches only the presenter's own browser (its URL), never a phone.
    assert any(projector.secret.encode() in r.raw for r in projector.runs)
    for r in before + after:
        assert projector.secret.encode() not in r.raw
        assert projector.secret not in CP.unescape(r.raw.decode("utf-8", "replace"))


def test_a_class_answering_costs_little_beside_a_lesson_page(server, artifacts):
    url, proc = server
    costs = run(CP.cpu_costs(url, proc.pid, runs=20, blocks=3))
    text = CP.markdown([], {"1 server, in-process store": costs}, "tests/polls/test_class_live.py")
    (artifacts / "classpoll-cpu.md").write_text(text, encoding="utf-8")
    print("\n" + text)
    page = costs["lesson page (causal-attention, warm)"]["app_ms"]
    assert page > 0
    assert costs["phone: answer (form sent, answer stored)"]["app_ms"] <= page
    assert costs["projector: tally refresh (50 answers, spread shown)"]["app_ms"] <= 0.5 * page
    watcher = next(v for k, v in costs.items() if k.startswith("phone: watcher"))
    assert watcher["app_ms"] <= 0.5 * page


# --- two replicas behind HAProxy, Redis ------------------------------------------------------
def test_two_replicas_behind_haproxy_sharing_redis_stay_exact(blackhole, artifacts):
    with RedisServer() as redis_server:
        env = {**CP.app_env(redis_server.url), **proxy_env(blackhole)}
        with CP.replicas_behind_haproxy(env, artifacts) as (url, _servers):
            result = a_class(url, "2 replicas behind HAProxy, Redis")
    # Students on both replicas, the projector on one of them: the counts are still exact.
    assert set(result.sticky) == {"replica-a", "replica-b"}, result.sticky
    assert min(result.sticky.values()) >= 20, result.sticky


def test_the_tally_in_redis_is_the_one_shown(blackhole, artifacts):
    """The same class on one server with Redis: the store itself holds the counts shown."""
    with RedisServer() as redis_server:
        env = {**CP.app_env(redis_server.url), **proxy_env(blackhole)}
        with running_app(env=env, log_path=artifacts / "classpoll-redis.log") as (url, _):
            run(CP.warm(url))
            result = a_class(url, "1 server, Redis", 20, join_spread=2.0)
        stored = RedisPollStore.from_url(redis_server.url).presenter_view(
            result.code, result.secret
        )
    assert not hasattr(stored, "reason"), stored
    counts = {label: n for label, n in stored.rounds[0].counts if n}
    assert counts == result.shown_after_change


# --- Redis going away ------------------------------------------------------------------------
def test_redis_stopping_mid_poll_is_said_and_restarting_it_lets_a_new_poll_run(
    blackhole, artifacts
):
    with RedisServer() as redis_server:
        env = {**CP.app_env(redis_server.url), **proxy_env(blackhole)}
        with running_app(env=env, log_path=artifacts / "classpoll-outage.log") as (url, _):
            run(CP.warm(url))

            async def outage():
                projector = CP.Projector(url)
                phones = [CP.Student(url, "") for _ in range(3)]
                lesson = loadtest.Session(url, timeout=120)
                step = loadtest.Step(
                    "default",
                    loadtest.query_for("default"),
                    "causal-attention",
                    "causal-attention",
                )
                seen: dict[str, object] = {}
                try:
                    await projector.open(CP.CHOICE_PASS)
                    for i, phone in enumerate(phones):
                        phone.query = f"join={projector.code}"
                        await phone.join()
                        await phone.answer(i)
                    seen["before"] = (await projector.refresh()).answered()
                    redis_server.stop()
                    seen["refresh"] = await projector.refresh()
                    seen["full"] = await projector.full()
                    seen["phone"] = await phones[0].reload()
                    await lesson.connect()
                    seen["lesson"] = await lesson.rerun(step)
                    seen["waiting"] = projector.fragment
                    redis_server.start()
                    await asyncio.sleep(1.5)  # past the store's one-second pause after a failure
                    # No reload: the page's own timer asks the store again and, once it
                    # answers, runs the whole page.
                    seen["after"] = await projector.refresh()
                    # The phone's watcher too: the store answers, about a poll it lost.
                    seen["phone_after"] = await phones[0].watch()
                    again = CP.Projector(url)
                    await again.open(CP.CHOICE_PASS)
                    student = CP.Student(url, again.code)
                    await student.join()
                    seen["answered"] = await student.answer(1)
                    seen["new"] = await again.refresh()
                    await asyncio.gather(again.close(), student.close())
                finally:
                    await asyncio.gather(
                        projector.close(),
                        lesson.close(),
                        *(p.close() for p in phones),
                        return_exceptions=True,
                    )
                return seen

            seen = run(outage())
    assert seen["before"] == 3
    for name in ("refresh", "full", "phone"):
        r = seen[name]
        assert isinstance(r, CP.Run)
        assert not r.exceptions, (name, r.exceptions)
        assert any(t.startswith(UNAVAILABLE) for t in r.texts()), (name, r.texts())
    lesson = seen["lesson"]
    assert lesson.errors == [] and lesson.charts, lesson.errors  # the lessons keep working
    assert seen["waiting"] is not None and seen["waiting"][1] == STORE_RETRY, seen["waiting"]
    after = seen["after"]
    # Redis came back empty (the tests' Redis saves nothing): the old poll is gone, said so.
    lost = [t for t in after.texts() if t.startswith("There is no poll with this code")]
    assert len(lost) == 1 and "The poll store restarted less than a minute ago" in lost[0], lost
    assert lost[0] in seen["phone_after"].texts(), seen["phone_after"].texts()
    assert not after.exceptions
    assert any(t.startswith("Answer recorded") for t in seen["answered"].texts())
    assert seen["new"].answered() == 1


# --- one browser, one vote; no one jams the class (issue 36) ----------------------------------
REFUSED = re.compile(r"^(\d+) answers? refused: ")


def test_a_class_over_two_replicas_counts_each_browser_once_and_a_flood_is_held_back(
    blackhole, artifacts
):
    """50 phones over two replicas and Redis; 5 reload, then the projector's replica is killed
    and every phone on it reopens on the other: each browser is counted once, sees its answer
    again, and the presenter keeps the controls. Then 100 scripted browsers: no more get in
    than the join pace allows, and the presenter sees how many were refused."""
    with RedisServer() as redis_server:
        env = {**CP.app_env(redis_server.url), **proxy_env(blackhole)}
        with CP.replicas_behind_haproxy(env, artifacts) as (url, servers):

            async def lesson() -> dict:
                projector = CP.Projector(url, timeout=120)
                phones = [CP.Student(url, "", timeout=120) for _ in range(50)]
                flood: list[CP.Student] = []
                seen: dict = {"picks": {}, "reopened": [], "failed_over": []}
                gate = asyncio.Semaphore(10)  # ten phones at a time: a busy two-core machine

                async def join_and_answer(i: int, phone: CP.Student, pick: int) -> CP.Run:
                    async with gate:
                        phone.query, phone.code = f"join={projector.code}", projector.code
                        await phone.join()
                        return await phone.answer(pick)

                async def reopen(phone: CP.Student) -> CP.Run:
                    async with gate:
                        return await phone.reopen()

                try:
                    await projector.open(CP.CHOICE_PASS)
                    runs = await asyncio.gather(
                        *(join_and_answer(i, p, i % 4) for i, p in enumerate(phones))
                    )
                    seen["accepted"] = sum(p.accepted() for p in phones)
                    seen["errors"] = [r.exceptions for r in runs if r.exceptions]
                    seen["picks"] = {i: i % 4 for i in range(50)}
                    # Five reloads: each sees its answer again and changes it once.
                    for i in range(5):
                        again = await phones[i].reopen()
                        seen["reopened"].append(again.texts())
                        await phones[i].answer((i + 1) % 4)
                        seen["picks"][i] = (i + 1) % 4
                    # The projector's replica dies: its phones and the projector reopen on the
                    # other one (HAProxy redispatches), with their browsers' cookies.
                    victim = projector.client.cookies[CP.STICKY]
                    servers[victim][1].kill()
                    on_victim = [p for p in phones if p.client.cookies.get(CP.STICKY) == victim]
                    seen["on_victim"] = len(on_victim)
                    runs = await asyncio.gather(*(reopen(p) for p in on_victim))
                    seen["failed_over"] = [r.texts() for r in runs]
                    seen["projector"] = await projector.reopen()
                    # A flood: 100 scripted browsers, each with a token of its own.
                    flood = [CP.Student(url, "", timeout=120) for _ in range(100)]
                    await asyncio.gather(
                        *(join_and_answer(100 + i, p, 0) for i, p in enumerate(flood)),
                        return_exceptions=True,
                    )
                    seen["flood_accepted"] = sum(p.accepted() for p in flood)
                    seen["after_flood"] = await projector.full()
                finally:
                    await asyncio.gather(
                        projector.close(),
                        *(p.close() for p in phones + flood),
                        return_exceptions=True,
                    )
                seen["code"], seen["key"] = projector.code, projector.secret
                return seen

            seen = run(lesson())
        stored = RedisPollStore.from_url(redis_server.url).presenter_view(seen["code"], seen["key"])
    assert seen["errors"] == [] and seen["accepted"] == 50
    for texts in seen["reopened"] + seen["failed_over"]:
        assert any(t.startswith("Your answer in round 1: ") for t in texts), texts
    assert seen["on_victim"] >= 10, seen["on_victim"]
    # The presenter's browser keeps the controls on the other replica.
    assert "Reveal the answer" in [b.label for b in seen["projector"].widgets("button")], seen[
        "projector"
    ].texts()
    assert not hasattr(stored, "reason"), stored
    # Every student of the class once, with her last answer; the flood within the join pace.
    flood_in = seen["flood_accepted"]
    assert stored.rounds[0].answered == 50 + flood_in
    counts = [n for _, n in stored.rounds[0].counts]
    want = [0, 0, 0, 0]
    for pick in seen["picks"].values():
        want[pick] += 1
    want[0] += flood_in
    assert counts[:4] == want, (counts, want)
    limits = Limits()
    assert 50 + flood_in <= limits.join_burst + 60, flood_in  # pace: 30 a minute, < 2 minutes
    refused = stored.refused.crowded
    assert refused == 100 - flood_in > 0
    shown = [m for t in seen["after_flood"].texts() if (m := REFUSED.match(t))]
    assert [int(m.group(1)) for m in shown] == [refused], seen["after_flood"].texts()
