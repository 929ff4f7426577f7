"""Two limits at once, 3 a minute and 1,000 a day, on their own and in front of a WSGI
app: a request is admitted only if both admit it, and the middleware lists both rules in
RateLimit-Policy and reports the one that binds in RateLimit. The READMEs' Python policy
snippets are lines of this program (scripts/check-docs.py checks them), which
tests/test_examples.py runs: its requests come well within a second, so its output is
fixed."""

from wsgiref.util import setup_testing_defaults

import librate
from librate.middleware import WSGIRateLimit

policy = librate.Policy(
    [
        librate.Config.gcra(3, 60),  # 3 a minute
        librate.Config.fixed_window(1000, 86400),  # and 1,000 a day
    ]
)
d = policy.acquire()  # or policy.try_acquire(): a bool
print(d.decision.allowed, d.denied_by, [rule.remaining for rule in d.rules])


def hello(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"hello\n"]


app = WSGIRateLimit(hello, policy, rule_names=["minute", "day"])


def start_response(status, headers, exc_info=None):
    fields = dict(headers)
    print(status, fields["RateLimit"], fields.get("Retry-After"))
    if status.startswith("429"):
        print("RateLimit-Policy:", fields["RateLimit-Policy"])


for _ in range(3):
    environ = {}
    setup_testing_defaults(environ)
    app(environ, start_response)
