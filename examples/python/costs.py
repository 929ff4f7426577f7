"""One site's limits as one keyed policy, with a cost per rule for each route: a post
costs the client's post rule and everybody's rule, a like the client's like rule and
everybody's rule. Two WSGI middlewares over the one policy, one per route; RateLimit
reports the binding rule of those the route costs. The READMEs' snippets of a cost per
rule are lines of this program (scripts/check-docs.py checks them), which
tests/test_examples.py runs: its requests come well within a second, so its output is
fixed."""

from wsgiref.util import setup_testing_defaults

import librate
from librate import Config, KeyedRule
from librate.middleware import WSGIRateLimit

site = librate.KeyedPolicy(
    [
        KeyedRule.per_key(Config.gcra(1, 60)),  # per client: 1 post a minute
        KeyedRule.per_key(Config.gcra(5, 60)),  # and 5 likes a minute
        KeyedRule.global_(Config.gcra(1000, 1)),  # everybody: 1,000 a second
    ],
    capacity=100_000,
)


def hello(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"hello\n"]


names = ["posts", "likes", "all"]
posts = WSGIRateLimit(hello, site, cost=[1, 0, 1], rule_names=names)
likes = WSGIRateLimit(hello, site, cost=[0, 1, 1], rule_names=names)


def start_response(status, headers, exc_info=None):
    print(status, dict(headers)["RateLimit"])


for path, app in (("/posts", posts), ("/likes", likes), ("/posts", posts)):
    environ = {"PATH_INFO": path, "REMOTE_ADDR": "203.0.113.7"}
    setup_testing_defaults(environ)
    print(path, end=" ")
    app(environ, start_response)
