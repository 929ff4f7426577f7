"""The README's Python snippet, as a program (tests/test_examples.py runs it);
scripts/check-docs.py checks that each line of the snippet is in this file."""

import librate

api = librate.Limiter(limit=100, period=1)  # 100 per second
ok = api.try_acquire()  # False: answer 429

per_ip = librate.KeyedLimiter(algorithm="sliding_window", limit=10, period=60, capacity=100_000)
d = per_ip.acquire("203.0.113.7")  # 10 a minute for each IP
if not d.allowed:
    print(f"retry in {d.retry_after:.3f} s")
print(f"api: {ok}; 203.0.113.7: admitted {d.allowed}, {d.remaining} left")
