# syntax=docker/dockerfile:1
# attnviz, the classroom image. Build: docker build -t attnviz .   Run: docker run --rm -p 8501:8501 attnviz
# See docs/deploy.md. Classroom-only settings are STREAMLIT_* variables below, so a laptop
# (`streamlit run app.py`) and the tests keep Streamlit's normal behaviour.

# Official slim Python 3.11 image. For byte-for-byte repeatable builds, pin the digest too
# (python:3.11-slim@sha256:...).
FROM python:3.11-slim

# Build-time Python and pip behaviour: no .pyc files in the image, logs go straight to
# `docker logs`, and pip keeps no download cache in the layers.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Streamlit cannot run a script that sits in / , so the app lives in /app.
WORKDIR /app

# The runtime user: a fixed numeric uid, no login shell. It owns only its home folder.
RUN useradd --no-log-init --create-home --uid 10001 --shell /usr/sbin/nologin attnviz

# Dependencies first, from requirements.txt alone, so editing the code reuses these layers.
# torch comes from PyTorch's CPU-only index (no CUDA wheels, about 2 GB smaller); the
# requirements' torch==2.13.0 is then already satisfied by 2.13.0+cpu.
COPY requirements.txt ./
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0 \
 && pip install -r requirements.txt

# GPT-2's vocabulary, fetched once at build time, so the container needs no network when it
# runs. The folder belongs to root: the runtime user can read it but not change it.
# If the download fails or gives the wrong tokens, the build stops here with a message.
ENV TIKTOKEN_CACHE_DIR=/opt/tiktoken
RUN mkdir -p "$TIKTOKEN_CACHE_DIR" \
 && { python -c "import sys, tiktoken; ids = tiktoken.get_encoding('gpt2').encode('Your journey starts with one step'); ids == [7120, 7002, 4940, 351, 530, 2239] or sys.exit(f'GPT-2 encodes the test sentence as {ids}'); print('GPT-2 vocabulary cached')" \
      || { echo "BUILD FAILED: could not fetch GPT-2's vocabulary into $TIKTOKEN_CACHE_DIR (network or checksum problem, see above)" >&2; exit 1; }; } \
 && chmod -R a+rX "$TIKTOKEN_CACHE_DIR"

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
# - script health check on: the HEALTHCHECK below also runs app.py once through it. The first
#   script run of a process switches Streamlit from its legacy pages/ lookup to the app's own
#   navigation; without it, the first student to open a lesson link to a page other than the
#   home page would see a spurious "Page not found" notice.
ENV OMP_NUM_THREADS=1 \
    MKL_NUM_THREADS=1 \
    STREAMLIT_SERVER_HEADLESS=true \
    STREAMLIT_CLIENT_SHOW_ERROR_DETAILS=type \
    STREAMLIT_SERVER_FILE_WATCHER_TYPE=none \
    STREAMLIT_BROWSER_SERVER_ADDRESS=localhost \
    STREAMLIT_SERVER_SCRIPT_HEALTH_CHECK_ENABLED=true

# The code last (see .dockerignore); owned by root, so the app cannot change itself.
COPY . .

USER 10001

# Proof, as the runtime user and with the network forbidden, that the app's own loader finds
# the real GPT-2 vocabulary (not the fallback tokenizer).
RUN python -c "import sys; from attnviz.tokens import load_tokenizer; t = load_tokenizer(allow_network=False); t.status.is_real or sys.exit('BUILD FAILED: the app would start with the fallback tokenizer: ' + t.status.detail); print(t.status.headline)"

EXPOSE 8501

# Slim images have no curl: ask Streamlit's health endpoint with Python's urllib, then have it
# run app.py once (the script health check; see the ENV above). During the start period the
# check runs every 2 s, so the app is warm within seconds of the container starting.
HEALTHCHECK --interval=30s --timeout=60s --start-period=120s --start-interval=2s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request as u; urls = ('http://127.0.0.1:8501/_stcore/health', 'http://127.0.0.1:8501/_stcore/script-health-check'); sys.exit(0 if all(u.urlopen(x, timeout=50).read() == b'ok' for x in urls) else 1)"]

# The README's `streamlit run app.py`, listening on every interface of the container.
ENTRYPOINT ["streamlit", "run", "app.py", "--server.address=0.0.0.0", "--server.port=8501", "--server.headless=true"]
