"""The address phones open to join a poll, and what the presenter must be told when it cannot
work: a link on ``localhost`` (the presenter's own computer), ``ATTNVIZ_PUBLIC_URL`` without
``http://`` (the link gets it added, so the QR code still has an address), or no address at
all (only a path, so no QR code)."""

from __future__ import annotations

from urllib.parse import urlsplit

PUBLIC_URL_ENV = "ATTNVIZ_PUBLIC_URL"  # the address phones use, when the presenter's is not
POLL_PATH = "poll"
_LOCAL_HOSTS = ("localhost", "0.0.0.0", "::1", "::")


def is_local(host: str) -> bool:
    """True for a host that names the machine itself, which no phone can reach."""
    host = host.lower().rstrip(".")
    return host in _LOCAL_HOSTS or host.endswith(".localhost") or host.startswith("127.")


def join_base(public_url: str, seen_url: str) -> tuple[str, str | None]:
    """The app's address for a join link (no trailing slash, no ``/poll``), from
    ``ATTNVIZ_PUBLIC_URL`` when set, else the address the presenter's browser opened; and a
    sentence for the presenter when that address will not work from a phone (None when it
    will, as far as can be told)."""
    public = public_url.strip()
    note = None
    if public:
        scheme = urlsplit(public).scheme.lower() if "://" in public else ""
        if not scheme:
            public = "http://" + public
            note = (
                f"{PUBLIC_URL_ENV} has no http:// or https://, so the join link adds http://; "
                "set it with the scheme the students' phones use."
            )
        elif scheme not in ("http", "https"):
            note = (
                f"{PUBLIC_URL_ENV} is not an http:// or https:// address, so the join link "
                "uses the address this page was opened at."
            )
            public = ""
    base = public or seen_url.strip()
    base = base.split("?", 1)[0].split("#", 1)[0].rstrip("/")
    if base.endswith("/" + POLL_PATH):
        base = base[: -len(POLL_PATH) - 1]
    if not base:
        return "", (
            "This page's own address is unknown, so the join link is only a path and there is "
            f"no QR code: set {PUBLIC_URL_ENV} to the address students open."
        )
    host = urlsplit(base).hostname or ""
    if is_local(host):
        note = (
            f"The join link points at {host}, this computer itself: phones cannot open it. Open "
            "this page at the address students reach (the machine's name or network address), "
            f"or set {PUBLIC_URL_ENV} to it."
        )
    return base, note
