//! The decision on one request's head: pass it on (with the RateLimit fields, or
//! untouched), or answer it (429, or 503 when the limiter cannot decide).

use super::headers;
use super::key::Key;
use super::limit::{Decided, RequestLimit};
use crate::error::Error;
use crate::time::Instant;
use http::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use http::request::Parts;
use http::StatusCode;
use std::sync::Arc;

/// The draft's field names (draft-ietf-httpapi-ratelimit-headers-11), lowercase as the
/// `http` crate keeps every name; HTTP/1.1 writes them so, HTTP/2 requires it.
pub(super) const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
pub(super) const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");

/// The clock decisions are made at.
pub(super) type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;

/// What the layer calls on each denial (in shadow: each would-be denial).
pub(super) type OnDenied = Arc<dyn Fn(&Denied<'_>, &Parts) + Send + Sync>;

/// A request the limit denied, or in shadow would have denied, as
/// [`Builder::on_denied`](super::Builder::on_denied) reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Denied<'a> {
    /// The rule that denied, by index: the first, in the order given, that denied (the
    /// one a policy's counts charge the denial to; `RateLimit` reports, of the rules
    /// that denied, the longest wait, which may be another).
    pub rule: usize,
    /// Its name, as given to [`Builder::names`](super::Builder::names) (`"default"`,
    /// `"rule0"`… by default).
    pub name: &'a str,
    /// Whether the denial is a would-be one, the request served all the same: the layer
    /// runs in shadow, or `rule` is a policy's shadow rule (docs/policies.md, shadow
    /// rules).
    pub shadow: bool,
}

/// What every request through one layer shares.
pub(super) struct Gate<L> {
    pub(super) limiter: L,
    pub(super) key: Key,
    /// Each rule's name, in order, as given, and as an sf-string.
    pub(super) names: Vec<String>,
    pub(super) quoted: Vec<String>,
    /// The whole `RateLimit-Policy` value.
    pub(super) policy: HeaderValue,
    /// A policy's cost of each rule; `None`: 1 of every rule.
    pub(super) costs: Option<Vec<u64>>,
    pub(super) clock: Clock,
    pub(super) fail_open: bool,
    /// `Retry-After` of the 503 for a table full of live keys: one period of the first rule.
    pub(super) table_full: HeaderValue,
    /// Decide and report, never refuse (docs/tower.md, Which rule denied).
    pub(super) shadow: bool,
    /// The field naming the rule that denied, with each rule's value; `None`: no field.
    pub(super) rule_field: Option<(HeaderName, Vec<HeaderValue>)>,
    pub(super) on_denied: Option<OnDenied>,
}

/// The fields added to a served request's response: the RateLimit fields (none in
/// shadow), and the field naming the rule that would have denied it (in shadow).
#[derive(Clone, Debug, Default)]
pub(super) struct Fields {
    pub(super) ratelimit: Option<(HeaderValue, HeaderValue)>,
    pub(super) rule: Option<(HeaderName, HeaderValue)>,
}

impl Fields {
    /// Puts the fields into a response's `headers`.
    pub(super) fn insert_into(self, headers: &mut HeaderMap) {
        if let Some((policy, ratelimit)) = self.ratelimit {
            headers.insert(RATELIMIT_POLICY, policy);
            headers.insert(RATELIMIT, ratelimit);
        }
        if let Some((name, value)) = self.rule {
            headers.insert(name, value);
        }
    }
}

/// An answer the layer gives in the service's place.
#[derive(Debug)]
pub(super) struct Answer {
    pub(super) status: StatusCode,
    pub(super) fields: Vec<(HeaderName, HeaderValue)>,
}

impl Answer {
    /// The answer's body, as the Python middleware writes it: "429 Too Many Requests".
    pub(super) fn body(&self) -> &'static str {
        if self.status == StatusCode::TOO_MANY_REQUESTS {
            "429 Too Many Requests\n"
        } else {
            "503 Service Unavailable\n"
        }
    }

    /// The content type of [`body`](Self::body).
    pub(super) const CONTENT_TYPE: (HeaderName, HeaderValue) = (
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
}

/// What becomes of one request.
#[derive(Debug)]
pub(super) enum Verdict {
    /// Served untouched: no key, or the limiter failed and the layer fails open.
    Pass,
    /// Served, its response gaining the fields.
    Admitted(Fields),
    /// Answered by the layer.
    Answered(Answer),
}

impl<L: RequestLimit> Gate<L> {
    /// The verdict on the request whose head is `parts`.
    pub(super) fn check(&self, parts: &Parts) -> Verdict {
        if !L::KEYED {
            return self.decide(parts, b"");
        }
        self.key.with(parts, |key| {
            key.map_or(Verdict::Pass, |key| self.decide(parts, key))
        })
    }

    fn decide(&self, parts: &Parts, key: &[u8]) -> Verdict {
        let at = (self.clock)();
        match self.limiter.acquire_at(key, self.costs.as_deref(), at) {
            Ok(decided) => self.decided(parts, &decided),
            Err(error) => self.failed(error),
        }
    }

    /// The verdict on a decision: `RateLimit` reports the binding rule of those the
    /// request costs. In shadow the request is served, without the RateLimit fields of
    /// a limit that is not in force.
    fn decided(&self, parts: &Parts, decided: &L::Decided) -> Verdict {
        let decision = decided.decision();
        let rules = decided.rules();
        let denied_by = decided.denied_by().filter(|_| !decision.allowed);
        let shadow_denied_by = decided.shadow_denied_by();
        let out_of_range = |rule: Option<usize>| rule.is_some_and(|rule| rule >= rules.len());
        if rules.len() != self.names.len()
            || out_of_range(denied_by)
            || out_of_range(shadow_denied_by)
        {
            // A limiter deciding another number of rules than it advertised, or naming
            // a rule it has not: a failure of the limiter, as in Go, never an index out
            // of bounds.
            return self.failed(Error::Unsupported);
        }
        let named = denied_by.and_then(|rule| self.denied(parts, rule, self.shadow));
        // A shadow rule's would-be denial is reported too; named if no rule denied.
        let would = shadow_denied_by.and_then(|rule| self.denied(parts, rule, true));
        let named = named.or(would);
        // A shadow rule binds nothing: RateLimit reports an enforced rule the request
        // costs, if any.
        let costs = self.costs.as_deref();
        let takes_part = |index: usize| {
            !decided.is_shadow(index) && !costs.is_some_and(|costs| costs.get(index) == Some(&0))
        };
        let binding = headers::binding_rule(decision.allowed, rules, takes_part);
        let ratelimit = binding.filter(|_| !self.shadow).and_then(|rule| {
            let text = headers::ratelimit(&self.quoted[rule], &rules[rule]);
            // The text is the names (checked printable ASCII when the layer was built)
            // and digits: always a valid field value.
            HeaderValue::try_from(text).ok()
        });
        if decision.allowed || self.shadow {
            let ratelimit = ratelimit.map(|ratelimit| (self.policy.clone(), ratelimit));
            return match (ratelimit, named) {
                (None, None) => Verdict::Pass,
                (ratelimit, rule) => Verdict::Admitted(Fields { ratelimit, rule }),
            };
        }
        let retry_after = HeaderValue::from(headers::seconds(decision.retry_after_ns));
        let mut fields = vec![(RETRY_AFTER, retry_after)];
        if let Some(ratelimit) = ratelimit {
            fields.push((RATELIMIT_POLICY, self.policy.clone()));
            fields.push((RATELIMIT, ratelimit));
        }
        fields.extend(named);
        Verdict::Answered(Answer {
            status: StatusCode::TOO_MANY_REQUESTS,
            fields,
        })
    }

    /// Reports that `rule` denied the request whose head is `parts` (or, `shadow`, would
    /// have) to the `on_denied` callback, and returns the field naming it, if the layer
    /// sends one.
    fn denied(
        &self,
        parts: &Parts,
        rule: usize,
        shadow: bool,
    ) -> Option<(HeaderName, HeaderValue)> {
        if let Some(on_denied) = &self.on_denied {
            let denied = Denied {
                rule,
                name: &self.names[rule],
                shadow,
            };
            on_denied(&denied, parts);
        }
        let (name, values) = self.rule_field.as_ref()?;
        Some((name.clone(), values[rule].clone()))
    }

    /// The limiter could not decide: serve the request untouched (fail open, or in
    /// shadow, which refuses nothing), or answer 503, with `Retry-After` of one period
    /// when the table is full of live keys (an attacker who fills the table gains
    /// nothing).
    fn failed(&self, error: Error) -> Verdict {
        if self.fail_open || self.shadow {
            return Verdict::Pass;
        }
        let fields = match error {
            Error::TableFull => vec![(RETRY_AFTER, self.table_full.clone())],
            _ => Vec::new(),
        };
        Verdict::Answered(Answer {
            status: StatusCode::SERVICE_UNAVAILABLE,
            fields,
        })
    }
}
