"""The header vectors every middleware is held to (bindings/testdata/ratelimit_headers.json
and policy_headers.json, which Go's middleware and Rust's tower layer pass too), as
cases a framework's test client can replay: a limiter that reports a vector's rules and
answers its decision, whatever the key and the time (as tower-tests/tests/vectors.rs
scripts its limits), and the answer the vector expects."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import librate
from librate import Config, Decision, KeyedRule, PolicyDecision

TESTDATA = Path(__file__).resolve().parents[2] / "testdata"


class ScriptedLimiter(librate.KeyedLimiter):
    """A keyed limiter of one rule that always answers ``decision``."""

    def __init__(self, rule: Config, decision: Decision) -> None:
        super().__init__(limit=1, period=1, capacity=1)
        self.rule, self.decision = rule, decision

    @property
    def config(self) -> Config:
        return self.rule

    def acquire(self, key: Any, n: int = 1, *, now_ns: int | None = None) -> Decision:
        return self.decision


class ScriptedPolicy(librate.KeyedPolicy):
    """A keyed policy of per-key ``rules`` that always answers ``decision``."""

    def __init__(self, rules: Sequence[Config], decision: PolicyDecision) -> None:
        super().__init__([KeyedRule.per_key(Config.gcra(1, 1))], capacity=1)
        self.scripted = tuple(KeyedRule.per_key(rule) for rule in rules)
        self.decision = decision

    @property
    def rules(self) -> tuple[KeyedRule, ...]:
        return self.scripted

    def acquire(self, key: Any, n: int = 1, *, now_ns: int | None = None) -> PolicyDecision:
        return self.decision

    def acquire_costs(
        self, key: Any, costs: Sequence[int], *, now_ns: int | None = None
    ) -> PolicyDecision:
        return self.decision


@dataclass
class Case:
    """A vector as a middleware's arguments and the answer it must give."""

    what: str
    limiter: ScriptedLimiter | ScriptedPolicy
    #: The middleware's ``policy``, ``rule_names`` and ``cost`` arguments.
    options: dict[str, Any]
    status: int
    #: RateLimit-Policy, RateLimit and Retry-After (None: absent).
    headers: tuple[str, str, str | None]


def _rule(vector: dict[str, Any]) -> Config:
    return Config("gcra", vector["limit"], vector["period_ns"], vector["burst"] or None)


def _decision(rule: Config, d: dict[str, Any]) -> Decision:
    times = d["retry_after_ns"], d["reset_after_ns"]
    return Decision(d["allowed"], rule.max_n, d["remaining"], *times)


def _expected(case: dict[str, Any]) -> tuple[int, tuple[str, str, str | None]]:
    status = 200 if case["retry_after"] is None else 429
    return status, (case["policy"], case["ratelimit"], case["retry_after"])


def cases() -> list[Case]:
    """Every vector of both files."""
    found = []
    for case in json.loads((TESTDATA / "ratelimit_headers.json").read_text())["cases"]:
        rule = _rule(case)
        limiter = ScriptedLimiter(rule, _decision(rule, case["decision"]))
        found.append(Case(case["what"], limiter, {"policy": case["name"]}, *_expected(case)))
    for case in json.loads((TESTDATA / "policy_headers.json").read_text())["cases"]:
        rules = [_rule(rule) for rule in case["rules"]]
        each = tuple(map(_decision, rules, case["decisions"]))
        # The policy's decision combines its rules' (docs/policies.md), of those it costs.
        costs = case.get("costs") or [1] * len(rules)
        counted = [i for i, cost in enumerate(costs) if cost]
        combined = Decision(
            case["denied_by"] is None,
            min(rules[i].max_n for i in counted),
            min(each[i].remaining for i in counted),
            max(each[i].retry_after_ns for i in counted),
            max(each[i].reset_after_ns for i in counted),
        )
        policy = ScriptedPolicy(rules, PolicyDecision(combined, case["denied_by"], each))
        options: dict[str, Any] = {"rule_names": case["names"]} if case["names"] else {}
        if case.get("costs"):
            options["cost"] = case["costs"]
        found.append(Case(case["what"], policy, options, *_expected(case)))
    return found
