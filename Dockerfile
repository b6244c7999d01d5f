# attnviz, the classroom image. Build: docker build -t attnviz .   Run: docker run --rm -p 8501:8501 attnviz
# See docs/deploy.md (online, behind a mirror, offline; podman needs `--format docker` to keep
# the HEALTHCHECK). Classroom-only settings are STREAMLIT_* variables below, so a laptop
# (`streamlit run app.py`) and the tests keep Streamlit's normal behaviour.
# No `# syntax=` line: it would make BuildKit pull a frontend image from Docker Hub, and the
# build must work with nothing but the base image (and a package mirror) at hand.

# Official slim Python 3.11 image, for both stages (one base image, pulled once). For
# byte-for-byte repeatable builds, pin the digest too (python:3.11-slim@sha256:...).
#
# Stage 1, "sources": the build context, with the optional input folders below taken out of it,
# so they reach the image only where they belong (not a second time under /app).
FROM python:3.11-slim AS sources

# An offline build: a folder inside the build context that holds a tiktoken cache of GPT-2's
# vocabulary (the files of a TIKTOKEN_CACHE_DIR after one `tiktoken.get_encoding("gpt2")`).
# Empty (the default): the build downloads the vocabulary.
#   --build-arg TIKTOKEN_VOCAB_DIR=vocab
ARG TIKTOKEN_VOCAB_DIR=
# GPT-2 small's weights baked into the image, for the trained-heads page: a folder inside the
# build context with Hugging Face's config.json and model.safetensors (about 550 MB). Empty
# (the default): no weights, and the page says how to add them.
#   --build-arg GPT2_DIR=gpt2
ARG GPT2_DIR=

COPY . /src
RUN mkdir -p /inputs/vocab /inputs/gpt2 \
 && for pair in "vocab:$TIKTOKEN_VOCAB_DIR" "gpt2:$GPT2_DIR"; do \
      name="${pair%%:*}"; folder="${pair#*:}"; \
      [ -z "$folder" ] && continue; \
      case "/$folder/" in */../*|*/./*|//) echo "BUILD FAILED: $folder is outside the build context" >&2; exit 1;; esac; \
      [ -d "/src/$folder" ] || { echo "BUILD FAILED: no folder $folder in the build context (or .dockerignore leaves it out)" >&2; exit 1; }; \
      cp -R "/src/$folder/." "/inputs/$name/" && rm -rf "/src/${folder:?}"; \
    done \
 && chmod -R a+rX /inputs

# Stage 2: the image.
FROM python:3.11-slim

# Where torch's CPU-only wheels come from (no CUDA wheels: about 2 GB smaller). The default is
# PyTorch's CPU index. Set it to another index (an internal mirror of it), or to nothing to use
# whatever pip is configured with (a mirror that already serves the CPU build, local wheels):
#   --build-arg TORCH_INDEX_URL=
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
# A package mirror for everything else, read by pip from the environment; unset unless given:
#   --build-arg PIP_INDEX_URL=https://pypi.mirror.example.edu/simple
ARG PIP_INDEX_URL
ARG PIP_TRUSTED_HOST

# Python and pip behaviour: logs go straight to `docker logs`, pip keeps no download cache in
# the layers, and Python writes no .pyc files while the app runs (its folders are read-only to
# the runtime user). Bytecode is still in the image: pip compiles every module it installs, and
# the app's own code is compiled below, so a read-only container starts without compiling.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Streamlit cannot run a script that sits in / , so the app lives in /app.
WORKDIR /app

# The runtime user: a fixed numeric uid, no login shell. It owns only its home folder.
RUN useradd --no-log-init --create-home --uid 10001 --shell /usr/sbin/nologin attnviz

# Dependencies first, from requirements.txt alone, so editing the code reuses these layers.
# torch first, from TORCH_INDEX_URL when set; the requirements' torch==2.13.0 is then already
# satisfied by 2.13.0+cpu.
COPY requirements.txt ./
RUN if [ -n "$TORCH_INDEX_URL" ]; then pip install --index-url "$TORCH_INDEX_URL" torch==2.13.0; \
    else pip install torch==2.13.0; fi \
 && pip install -r requirements.txt

# GPT-2's vocabulary, at build time, so the container needs no network when it runs: from
# TIKTOKEN_VOCAB_DIR when given, else downloaded. The folder belongs to root: the runtime user
# can read it but not change it. If the vocabulary is missing or gives the wrong tokens, the
# build stops here with a message.
ENV TIKTOKEN_CACHE_DIR=/opt/tiktoken
COPY --from=sources /inputs/vocab/ /opt/tiktoken/
RUN { python -c "import sys, tiktoken; ids = tiktoken.get_encoding('gpt2').encode('Your journey starts with one step'); ids == [7120, 7002, 4940, 351, 530, 2239] or sys.exit(f'GPT-2 encodes the test sentence as {ids}'); print('GPT-2 vocabulary cached')" \
      || { echo "BUILD FAILED: no GPT-2 vocabulary in $TIKTOKEN_CACHE_DIR (the download failed, or TIKTOKEN_VOCAB_DIR holds no tiktoken cache; see above)" >&2; exit 1; }; } \
 && chmod -R a+rX "$TIKTOKEN_CACHE_DIR"

# GPT-2 small's weights, only when GPT2_DIR was given; ATTNVIZ_GPT2_DIR stays empty otherwise.
# (The ARG is declared here, not above: a build argument changes the cache key of every RUN
# after its declaration, and the dependency layers must not depend on it.)
ARG GPT2_DIR=
COPY --from=sources /inputs/gpt2/ /opt/gpt2/
# Readable by the runtime user already (the first stage made them so): a chmod here would
# store the 500 MB a second time in a new layer.
RUN if [ -n "$GPT2_DIR" ]; then \
      { [ -s /opt/gpt2/config.json ] && [ -s /opt/gpt2/model.safetensors ]; } \
      || { echo "BUILD FAILED: GPT2_DIR=$GPT2_DIR must hold config.json and model.safetensors" >&2; exit 1; }; \
    else rm -rf /opt/gpt2; fi
ENV ATTNVIZ_GPT2_DIR=${GPT2_DIR:+/opt/gpt2}

# Classroom settings (they apply to the image only):
# - OMP/MKL threads = 1: every student session runs in its own thread of one process, and the
#   matrices are small; letting each torch call spread over every core only makes sessions
#   fight for the CPU. Raise it with `docker run -e OMP_NUM_THREADS=2` on a quiet big machine.
# - headless: no browser to open and no e-mail prompt in a container.
# - error details "type": a student sees only the exception's class name (enough to report
#   "ValueError on the causal page") but no message, file path or stack trace. The app shows
#   its own clear messages for bad input; "none" would hide even the name.
# - file watcher off: the code in the image never changes, and watching torch's modules is
#   wasted CPU.
# - browser server address set: headless on 0.0.0.0, Streamlit would otherwise look up the
#   machine's external IP on the internet at every start. Set it to the class's host name at
#   `docker run` (-e STREAMLIT_BROWSER_SERVER_ADDRESS=attnviz.example.edu) for the right URL.
# - script health check on: /_stcore/script-health-check runs app.py once, and the app answers
#   it 503 until every page has run once at its defaults (ui/entry.py): ready means warm, so
#   students sent to a server only once it is ready find it as cheap as one that has taught for
#   an hour. The HEALTHCHECK below, HAProxy's check and Kubernetes' readiness probe ask it.
# The first visit to any lesson link is clean without a warm-up (ui/entry.py), so nothing else
# here depends on the health check having run.
ENV OMP_NUM_THREADS=1 \
    MKL_NUM_THREADS=1 \
    STREAMLIT_SERVER_HEADLESS=true \
    STREAMLIT_SERVER_SCRIPT_HEALTH_CHECK_ENABLED=true \
    STREAMLIT_CLIENT_SHOW_ERROR_DETAILS=type \
    STREAMLIT_SERVER_FILE_WATCHER_TYPE=none \
    STREAMLIT_BROWSER_SERVER_ADDRESS=localhost

# The code last (see .dockerignore), compiled once; owned by root, so the app cannot change
# itself. Then the installed Streamlit's fingerprinted static files, gzipped at level 9
# (attnviz/deploy/precompress.py), for the balancer: deploy/Dockerfile.balancer copies
# /opt/attnviz/static-gz into HAProxy (deploy/static.lua), which serves them to browsers
# (a first visit: 3.49 MB instead of 4.98, bench/first-visit-results.md). The app never reads them.
COPY --from=sources /src/ /app/
RUN python -m compileall -q /app \
 && python -m attnviz.deploy.precompress /opt/attnviz/static-gz

USER 10001

# Proof, as the runtime user and with the network forbidden, that the app's own loader finds
# the real GPT-2 vocabulary (not the fallback tokenizer).
RUN python -c "import sys; from attnviz.core.tokens import load_tokenizer; t = load_tokenizer(allow_network=False); t.status.is_real or sys.exit('BUILD FAILED: the app would start with the fallback tokenizer: ' + t.status.detail); print(t.status.headline)"

EXPOSE 8501

# Healthy means ready, and ready means warm: the script health check, which answers "ok" once
# every page has run once (the first check starts the warm-up, about 10-20 s). Slim images have
# no curl: Python's urllib asks it. Generous timeouts: Streamlit answers within 60 s whatever
# happens (503 "timeout" past that), and a replica busy with a class must not count as dead.
# Every 10 s: a check is one warm page run (~20 ms of CPU). Only options every engine knows (no
# --start-interval, which older builders refuse). Kubernetes ignores HEALTHCHECK and podman
# keeps it only in the docker format: see deploy/ for their probes, which ask the same check.
HEALTHCHECK --interval=10s --timeout=70s --start-period=120s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request as u; sys.exit(0 if u.urlopen('http://127.0.0.1:8501/_stcore/script-health-check', timeout=65).read() == b'ok' else 1)"]

# The README's `streamlit run app.py`, listening on every interface of the container.
ENTRYPOINT ["streamlit", "run", "app.py", "--server.address=0.0.0.0", "--server.port=8501", "--server.headless=true"]
