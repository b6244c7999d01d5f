"""The speed guard's verdict (its live measurement runs in .ci/run; here its logic, with fake
ratios, and the Dockerfile reading the live servers rely on)."""

from bench import guard
from bench.support.pages import PageInfo

PAGES = (PageInfo("pages/a.py", "a", "A", True), PageInfo("pages/b.py", "b", "B", False))
BASELINE = {"pages/a.py": 4.0, "pages/b.py": 6.0}


def test_ratios_within_one_and_a_half_times_the_baseline_pass():
    measured = {"pages/a.py": 5.9, "pages/b.py": 8.9}
    assert guard.check(PAGES, measured, BASELINE, remeasure=lambda pages: {})


def test_a_page_over_the_limit_twice_fails():
    calls = []

    def remeasure(pages):
        calls.append([p.path for p in pages])
        return {"pages/b.py": 9.5}

    measured = {"pages/a.py": 4.0, "pages/b.py": 10.0}
    assert not guard.check(PAGES, measured, BASELINE, remeasure)
    assert calls == [["pages/b.py"]]  # only the failing page is measured again, once


def test_a_noisy_first_measurement_is_forgiven_by_the_retry():
    measured = {"pages/a.py": 7.0, "pages/b.py": 6.0}
    assert guard.check(PAGES, measured, BASELINE, remeasure=lambda pages: {"pages/a.py": 4.5})


def test_a_page_without_a_baseline_fails():
    measured = {"pages/a.py": 4.0, "pages/b.py": 6.0}
    assert not guard.check(PAGES, measured, {"pages/a.py": 4.0}, remeasure=lambda pages: {})


def test_the_committed_baseline_covers_every_page():
    from bench.support.pages import app_pages

    baseline = guard.load_baseline()["ratios"]
    assert {p.path for p in app_pages()} <= set(baseline)


def test_the_live_server_gets_the_images_environment():
    from bench import live

    env = live.dockerfile_env()
    assert env["OMP_NUM_THREADS"] == "1"
    assert env["STREAMLIT_SERVER_FILE_WATCHER_TYPE"] == "none"
    assert env["STREAMLIT_CLIENT_SHOW_ERROR_DETAILS"] == "type"
    assert "TIKTOKEN_CACHE_DIR" not in live.deployed_env() or (
        live.deployed_env()["TIKTOKEN_CACHE_DIR"] != "/opt/tiktoken"
    )


def test_the_committed_baseline_is_a_live_measurement():
    baseline = guard.load_baseline()
    assert "live server CPU" in baseline["what"]
    assert baseline["tolerance"] == guard.TOLERANCE
    # Without the post-run collection every page costs less than the trivial app's run.
    assert all(0 < r < 1.5 for r in baseline["ratios"].values())
