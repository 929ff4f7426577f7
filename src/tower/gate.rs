//! The decision on one request's head: pass it on (with the RateLimit fields, or
//! untouched), or answer it (429, or 503 when the limiter cannot decide).

use super::headers;
use super::key::Key;
use super::limit::{Decided, RequestLimit};
use crate::error::Error;
use crate::time::Instant;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use http::request::Parts;
use http::StatusCode;
use std::sync::Arc;

/// The draft's field names (draft-ietf-httpapi-ratelimit-headers-11), lowercase as the
/// `http` crate keeps every name; HTTP/1.1 writes them so, HTTP/2 requires it.
pub(super) const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
pub(super) const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");

/// The clock decisions are made at.
pub(super) type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;

/// What every request through one layer shares.
pub(super) struct Gate<L> {
    pub(super) limiter: L,
    pub(super) key: Key,
    /// Each rule's name as an sf-string, in order.
    pub(super) names: Vec<String>,
    /// The whole `RateLimit-Policy` value.
    pub(super) policy: HeaderValue,
    /// A policy's cost of each rule; `None`: 1 of every rule.
    pub(super) costs: Option<Vec<u64>>,
    pub(super) clock: Clock,
    pub(super) fail_open: bool,
    /// `Retry-After` of the 503 for a table full of live keys: one period of the first rule.
    pub(super) table_full: HeaderValue,
}

/// The RateLimit fields added to an admitted request's response.
#[derive(Clone, Debug)]
pub(super) struct Fields {
    pub(super) policy: HeaderValue,
    pub(super) ratelimit: HeaderValue,
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
            return self.decide(b"");
        }
        self.key.with(parts, |key| {
            key.map_or(Verdict::Pass, |key| self.decide(key))
        })
    }

    fn decide(&self, key: &[u8]) -> Verdict {
        let at = (self.clock)();
        match self.limiter.acquire_at(key, self.costs.as_deref(), at) {
            Ok(decided) => self.decided(&decided),
            Err(error) => self.failed(error),
        }
    }

    /// The verdict on a decision: `RateLimit` reports the binding rule of those the
    /// request costs.
    fn decided(&self, decided: &L::Decided) -> Verdict {
        let decision = decided.decision();
        let rules = decided.rules();
        if rules.len() != self.names.len() {
            // A limiter deciding another number of rules than it advertised: a failure
            // of the limiter, as in Go, never an index out of bounds.
            return self.failed(Error::Unsupported);
        }
        let rule = headers::binding_rule(decision.allowed, rules, self.costs.as_deref());
        let text = headers::ratelimit(&self.names[rule], &rules[rule]);
        // The text is the names (checked printable ASCII when the layer was built) and
        // digits: always a valid field value.
        let Ok(ratelimit) = HeaderValue::try_from(text) else {
            return Verdict::Pass;
        };
        let fields = Fields {
            policy: self.policy.clone(),
            ratelimit,
        };
        if decision.allowed {
            return Verdict::Admitted(fields);
        }
        let retry_after = HeaderValue::from(headers::seconds(decision.retry_after_ns));
        Verdict::Answered(Answer {
            status: StatusCode::TOO_MANY_REQUESTS,
            fields: vec![
                (RETRY_AFTER, retry_after),
                (RATELIMIT_POLICY, fields.policy),
                (RATELIMIT, fields.ratelimit),
            ],
        })
    }

    /// The limiter could not decide: serve the request untouched (fail open), or answer
    /// 503, with `Retry-After` of one period when the table is full of live keys (an
    /// attacker who fills the table gains nothing).
    fn failed(&self, error: Error) -> Verdict {
        if self.fail_open {
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
