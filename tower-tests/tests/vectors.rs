//! The layer writes the fields the Python and Go middleware write for the same decision:
//! every vector of bindings/testdata/ratelimit_headers.json and policy_headers.json,
//! which their tests read too (bindings/python/tests/test_middleware.py,
//! bindings/go/middleware_test.go).

mod common;

use common::{field, respond};
use http::{Request, StatusCode};
use librate::tower::{Decided, RateLimitLayer, RequestLimit};
use librate::{Config, Decision, Error, Instant};
use serde_json::Value;
use std::net::SocketAddr;
use std::time::Duration;

/// The cases of bindings/testdata/`name`: at least 10.
fn cases(name: &str) -> Vec<Value> {
    let path = format!("{}/../bindings/testdata/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let vectors: Value = serde_json::from_str(&text).unwrap();
    let cases = vectors["cases"].as_array().unwrap().clone();
    assert!(cases.len() >= 10, "{path}: {} vectors", cases.len());
    cases
}

fn u64_of(value: &Value) -> u64 {
    value.as_u64().unwrap()
}

fn rule_of(vector: &Value) -> Config {
    Config::gcra(
        u64_of(&vector["limit"]),
        Duration::from_nanos(u64_of(&vector["period_ns"])),
    )
    .with_burst(u64_of(&vector["burst"]))
}

fn decision_of(vector: &Value) -> Decision {
    Decision {
        allowed: vector["allowed"].as_bool().unwrap(),
        remaining: u64_of(&vector["remaining"]),
        retry_after_ns: u64_of(&vector["retry_after_ns"]),
        reset_after_ns: u64_of(&vector["reset_after_ns"]),
        ..Decision::default()
    }
}

/// A limit of one rule that decides every request as a vector says.
struct OneRule {
    rule: Config,
    decision: Decision,
}

impl RequestLimit for OneRule {
    type Decided = Decision;
    const KEYED: bool = true;
    const POLICY: bool = false;

    fn rules(&self) -> Vec<Config> {
        vec![self.rule]
    }

    fn acquire_at(&self, _: &[u8], _: Option<&[u64]>, _: Instant) -> Result<Decision, Error> {
        Ok(self.decision)
    }
}

/// A policy's decision as a vector gives it.
#[derive(Clone)]
struct Rules {
    decision: Decision,
    rules: Vec<Decision>,
}

impl Decided for Rules {
    fn decision(&self) -> &Decision {
        &self.decision
    }

    fn rules(&self) -> &[Decision] {
        &self.rules
    }
}

/// A policy that decides every request as a vector says.
struct Rulebook {
    rules: Vec<Config>,
    decided: Rules,
}

impl RequestLimit for Rulebook {
    type Decided = Rules;
    const KEYED: bool = true;
    const POLICY: bool = true;

    fn rules(&self) -> Vec<Config> {
        self.rules.clone()
    }

    fn acquire_at(&self, _: &[u8], _: Option<&[u64]>, _: Instant) -> Result<Rules, Error> {
        Ok(self.decided.clone())
    }
}

/// What the layer answers one request from 192.0.2.1: its status and fields
/// RateLimit-Policy, RateLimit and Retry-After.
fn answer<L: RequestLimit>(layer: &RateLimitLayer<L>) -> (StatusCode, [Option<String>; 3]) {
    let mut request = Request::new(());
    let peer = "192.0.2.1:1234".parse::<SocketAddr>().unwrap();
    request.extensions_mut().insert(peer);
    let response = respond(layer, request);
    let fields = ["ratelimit-policy", "ratelimit", "retry-after"];
    (response.status(), fields.map(|name| field(&response, name)))
}

/// Checks the layer's answer against a vector's: admitted if its retry_after is null,
/// else a 429 with that Retry-After.
fn check<L: RequestLimit>(layer: &RateLimitLayer<L>, case: &Value) {
    let text = |name: &str| case[name].as_str().map(str::to_owned);
    let status = match text("retry_after") {
        None => StatusCode::OK,
        Some(_) => StatusCode::TOO_MANY_REQUESTS,
    };
    let want = (
        status,
        [text("policy"), text("ratelimit"), text("retry_after")],
    );
    assert_eq!(answer(layer), want, "{}", case["what"]);
}

#[test]
fn one_rule_s_fields_are_python_s_and_go_s() {
    for case in cases("ratelimit_headers.json") {
        let limit = OneRule {
            rule: rule_of(&case),
            decision: decision_of(&case["decision"]),
        };
        let name = case["name"].as_str().unwrap();
        let layer = RateLimitLayer::builder(limit)
            .names([name])
            .build()
            .unwrap();
        check(&layer, &case);
    }
}

#[test]
fn a_policy_s_fields_are_python_s_and_go_s() {
    for case in cases("policy_headers.json") {
        let rules: Vec<Config> = case["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(rule_of)
            .collect();
        let decisions: Vec<Decision> = case["decisions"]
            .as_array()
            .unwrap()
            .iter()
            .map(decision_of)
            .collect();
        let costs: Option<Vec<u64>> = case["costs"]
            .as_array()
            .map(|costs| costs.iter().map(u64_of).collect());
        // The policy's decision combines its rules' (docs/policies.md): admitted unless a
        // rule denied; the least remaining, the longest waits, of the rules it costs.
        let mut decision = Decision {
            allowed: case["denied_by"].is_null(),
            remaining: u64::MAX,
            ..Decision::default()
        };
        for (index, rule) in decisions.iter().enumerate() {
            if costs.as_ref().is_some_and(|costs| costs[index] == 0) {
                continue;
            }
            decision.remaining = decision.remaining.min(rule.remaining);
            decision.retry_after_ns = decision.retry_after_ns.max(rule.retry_after_ns);
            decision.reset_after_ns = decision.reset_after_ns.max(rule.reset_after_ns);
        }
        let policy = Rulebook {
            rules,
            decided: Rules {
                decision,
                rules: decisions,
            },
        };
        let mut builder = RateLimitLayer::builder(policy);
        if let Some(names) = case["names"].as_array() {
            builder = builder.names(names.iter().map(|name| name.as_str().unwrap()));
        }
        if let Some(costs) = costs {
            builder = builder.costs(costs);
        }
        check(&builder.build().unwrap(), &case);
    }
}
