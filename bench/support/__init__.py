"""What the benchmarks, the scripts and the tests share: the loopback blackhole, the app's page
list, starting and stopping a live server, and Chromium under Playwright. It lives in bench/ so
that bench/ never imports tests/; the tests import it from here."""
