//! A tower layer that rate-limits HTTP requests: per client IP by default, answering 429
//! with the `RateLimit` fields the Python and Go middleware write (docs/tower.md).
//! Only with the `tower` feature.
//!
//! [`RateLimitLayer`] wraps any [`tower_service::Service`] over [`http`] requests (an
//! axum `Router`, a hyper service, tonic) whose response body can be made from a
//! `&'static str`. For each request it reads a [`Key`], decides one unit of a
//! [`RequestLimit`] (a [`KeyedLimiter`](crate::KeyedLimiter), a
//! [`KeyedPolicy`](crate::KeyedPolicy), a [`Limiter`](crate::Limiter) or a
//! [`Policy`](crate::Policy)), and:
//!
//! - admitted: passes the request on; its response gains `RateLimit-Policy` and
//!   `RateLimit`;
//! - denied: answers `429 Too Many Requests` itself, with `Retry-After`,
//!   `RateLimit-Policy` and `RateLimit`, byte for byte what the Python and Go middleware
//!   answer for the same decision;
//! - the limiter could not decide (a table full of live keys): answers `503 Service
//!   Unavailable`, with `Retry-After` of one period for a full table, or, with
//!   [`fail_open`](Builder::fail_open), passes the request on untouched.
//!
//! Each denial can be reported to a callback ([`on_denied`](Builder::on_denied)) and
//! named in a field ([`rule_header`](Builder::rule_header)); in
//! [`shadow`](Builder::shadow) the layer decides and reports, and refuses nothing.
//!
//! ```
//! use librate::tower::{PeerIp, RateLimitLayer};
//! use librate::{Config, KeyedLimiter};
//! use std::sync::Arc;
//!
//! // 100 requests a minute per client, up to 100,000 clients at once, behind one proxy.
//! let per_ip = Arc::new(KeyedLimiter::new(&Config::per_minute(100), 100_000).unwrap());
//! let layer = RateLimitLayer::builder(Arc::clone(&per_ip))
//!     .key(PeerIp::new().trusting_proxies(1))
//!     .build()
//!     .unwrap();
//! # let _ = layer;
//! ```

mod gate;
mod headers;
mod key;
mod limit;
mod service;

pub use gate::Denied;
pub use key::{Key, PeerIp};
pub use limit::{Decided, RequestLimit};
pub use service::{RateLimit, ResponseFuture};

use crate::time::Instant;
use gate::{Clock, Gate, OnDenied};
use http::request::Parts;
use http::{HeaderName, HeaderValue};
use std::fmt;
use std::sync::Arc;
use tower_layer::Layer;

/// A layer that puts services behind `L`'s limit; see the [module](self) for what it
/// answers. Cloning it is cheap: every service it makes shares one limit.
pub struct RateLimitLayer<L> {
    gate: Arc<Gate<L>>,
}

impl<L: RequestLimit> RateLimitLayer<L> {
    /// A layer over `limiter` with the defaults of [`builder`](Self::builder): keyed by
    /// the peer's IP address, names `"default"` (or `"rule0"`, `"rule1"`… for a policy),
    /// one unit of every rule a request, the library clock, failing closed.
    pub fn new(limiter: L) -> Self {
        let builder = Builder::new(limiter);
        let names = default_names::<L>(builder.limiter.rules().len());
        let quoted = names.iter().map(|name| format!("\"{name}\"")).collect();
        builder.assemble(names, quoted)
    }

    /// A builder of a layer over `limiter`, to choose the key, names, costs, clock,
    /// failing open, shadow, or how a denial is reported.
    pub fn builder(limiter: L) -> Builder<L> {
        Builder::new(limiter)
    }
}

impl<L> Clone for RateLimitLayer<L> {
    fn clone(&self) -> Self {
        Self {
            gate: Arc::clone(&self.gate),
        }
    }
}

impl<L> fmt::Debug for RateLimitLayer<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitLayer")
            .field("key", &self.gate.key)
            .field("policy", &self.gate.policy)
            .finish_non_exhaustive()
    }
}

impl<S, L> Layer<S> for RateLimitLayer<L> {
    type Service = RateLimit<S, L>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimit::new(inner, Arc::clone(&self.gate))
    }
}

/// Builds a [`RateLimitLayer`]; each choice has the default [`RateLimitLayer::new`] takes.
pub struct Builder<L> {
    limiter: L,
    key: Key,
    names: Option<Vec<String>>,
    costs: Option<Vec<u64>>,
    clock: Clock,
    fail_open: bool,
    shadow: bool,
    rule_header: Option<HeaderName>,
    on_denied: Option<OnDenied>,
}

impl<L: RequestLimit> Builder<L> {
    fn new(limiter: L) -> Self {
        Self {
            limiter,
            key: Key::default(),
            names: None,
            costs: None,
            clock: Arc::new(Instant::now),
            fail_open: false,
            shadow: false,
            rule_header: None,
            on_denied: None,
        }
    }

    /// The key each request counts against (a keyed limiter's or keyed policy's; a
    /// limiter or policy for every request reads none): a [`PeerIp`] (the default:
    /// `PeerIp::new()`), a [`Key::header`] or a [`Key::from_fn`].
    pub fn key(mut self, key: impl Into<Key>) -> Self {
        self.key = key.into();
        self
    }

    /// The rules' names in the fields, one per rule in order, each printable ASCII:
    /// a limiter's one rule is `"default"` unless named, a policy's are `"rule0"`,
    /// `"rule1"`…
    pub fn names<I: IntoIterator<Item = S>, S: Into<String>>(mut self, names: I) -> Self {
        self.names = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// A policy's cost of each rule for every request, one per rule in order, each at
    /// most its rule's capacity (GCRA's burst, or limit when 0; a window's limit), not
    /// all 0: a rule of cost 0 takes no part, and `RateLimit` reports the binding rule of
    /// those the request costs. Without it a request takes 1 unit of every rule.
    pub fn costs(mut self, costs: impl IntoIterator<Item = u64>) -> Self {
        self.costs = Some(costs.into_iter().collect());
        self
    }

    /// The clock decisions are made at (tests, simulations); by default
    /// [`Instant::now`], the library's.
    pub fn clock(mut self, clock: impl Fn() -> Instant + Send + Sync + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// When the limiter cannot decide (a table full of live keys): pass the request on
    /// untouched and without the fields (`true`), or answer `503 Service Unavailable`
    /// (`false`, the default: an attacker who fills the table gains nothing).
    pub fn fail_open(mut self, fail_open: bool) -> Self {
        self.fail_open = fail_open;
        self
    }

    /// Run the limit in shadow (`true`), to see what a new limit would do before it is
    /// enforced: every request is decided (and counted, with counting on), each
    /// would-be denial reported to [`on_denied`](Self::on_denied) and named in the
    /// [`rule_header`](Self::rule_header) field, and every request served, without the
    /// RateLimit fields (no client should slow down for a limit not in force), a
    /// request the limit cannot decide too. `false`, the default, enforces it.
    pub fn shadow(mut self, shadow: bool) -> Self {
        self.shadow = shadow;
        self
    }

    /// A response field naming the rule that denied, its name as an sf-string
    /// (`RateLimit-Rule: "minute"`), on each 429 and, in shadow, on each request that
    /// would have been denied. draft-ietf-httpapi-ratelimit-headers-11 defines no such
    /// field, so the name is yours to choose; by default the layer sends none.
    pub fn rule_header(mut self, name: HeaderName) -> Self {
        self.rule_header = Some(name);
        self
    }

    /// Called on each denial (in shadow: each would-be denial) with the rule that
    /// denied and the request's head, to log it (with `tracing`, `log`, or a counter of
    /// your own) as the Python and Go middleware log it; the layer itself depends on no
    /// logging crate. Keep it quick: it runs on the request's path.
    pub fn on_denied(
        mut self,
        on_denied: impl Fn(&Denied<'_>, &Parts) + Send + Sync + 'static,
    ) -> Self {
        self.on_denied = Some(Arc::new(on_denied));
        self
    }

    /// The layer, or why the names or costs are not the rules'.
    pub fn build(mut self) -> Result<RateLimitLayer<L>, LayerError> {
        let rules = self.limiter.rules();
        let names = self
            .names
            .take()
            .unwrap_or_else(|| default_names::<L>(rules.len()));
        let quoted = names
            .iter()
            .map(|name| headers::sf_string(name).ok_or_else(|| LayerError::Name(name.clone())))
            .collect::<Result<Vec<_>, _>>()?;
        if rules.is_empty() || names.len() != rules.len() {
            return Err(LayerError::Names {
                names: names.len(),
                rules: rules.len(),
            });
        }
        if let Some(costs) = &self.costs {
            check_costs::<L>(costs, &rules)?;
        }
        Ok(self.assemble(names, quoted))
    }

    /// The layer, its rules named by `names`, `quoted` as sf-strings already.
    fn assemble(self, names: Vec<String>, quoted: Vec<String>) -> RateLimitLayer<L> {
        let rules = self.limiter.rules();
        let policy = headers::policy(&quoted, &rules);
        let table_full = rules.first().map_or(1, headers::table_full_retry_after);
        // Each name an sf-string of printable ASCII: a valid field value.
        let values = || {
            quoted
                .iter()
                .map(|name| {
                    HeaderValue::try_from(name.as_str()).unwrap_or(HeaderValue::from_static(""))
                })
                .collect()
        };
        let rule_field = self.rule_header.map(|header| (header, values()));
        RateLimitLayer {
            gate: Arc::new(Gate {
                limiter: self.limiter,
                key: self.key,
                // The names are sf-strings of printable ASCII, and the rest digits and
                // separators: a valid field value.
                policy: HeaderValue::try_from(policy).unwrap_or(HeaderValue::from_static("")),
                names,
                quoted,
                costs: self.costs,
                clock: self.clock,
                fail_open: self.fail_open,
                table_full: HeaderValue::from(table_full),
                shadow: self.shadow,
                rule_field,
                on_denied: self.on_denied,
            }),
        }
    }
}

/// The default names: `default` for a limit of one rule, `rule0`, `rule1`… for a
/// policy's.
fn default_names<L: RequestLimit>(rules: usize) -> Vec<String> {
    if !L::POLICY {
        return vec!["default".to_owned()];
    }
    (0..rules).map(|index| format!("rule{index}")).collect()
}

/// Checks a policy's costs against its rules: one per rule, each at most its rule's
/// capacity, not all 0.
fn check_costs<L: RequestLimit>(costs: &[u64], rules: &[crate::Config]) -> Result<(), LayerError> {
    if !L::POLICY {
        return Err(LayerError::CostsOfOneRule);
    }
    if costs.len() != rules.len() {
        return Err(LayerError::Costs {
            costs: costs.len(),
            rules: rules.len(),
        });
    }
    for (rule, (&cost, config)) in costs.iter().zip(rules).enumerate() {
        let capacity = headers::capacity(config);
        if cost > capacity {
            return Err(LayerError::Cost {
                rule,
                cost,
                capacity,
            });
        }
    }
    if costs.iter().all(|&cost| cost == 0) {
        return Err(LayerError::NoCost);
    }
    Ok(())
}

impl<L> fmt::Debug for Builder<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("key", &self.key)
            .field("names", &self.names)
            .field("costs", &self.costs)
            .field("fail_open", &self.fail_open)
            .field("shadow", &self.shadow)
            .field("rule_header", &self.rule_header)
            .finish_non_exhaustive()
    }
}

/// Why [`Builder::build`] refused: names or costs that are not the rules'.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LayerError {
    /// A name holds a character outside printable ASCII, which a field cannot carry.
    Name(String),
    /// Not one name per rule (or a limit of no rules).
    Names {
        /// The names given.
        names: usize,
        /// The rules of the limit.
        rules: usize,
    },
    /// Costs given for a limit of one rule, which takes 1 unit a request.
    CostsOfOneRule,
    /// Not one cost per rule.
    Costs {
        /// The costs given.
        costs: usize,
        /// The rules of the policy.
        rules: usize,
    },
    /// A cost above its rule's capacity, which would deny every request.
    Cost {
        /// The rule, by index.
        rule: usize,
        /// Its cost.
        cost: u64,
        /// Its capacity: GCRA's burst (or limit when 0), a window's limit.
        capacity: u64,
    },
    /// Every cost is 0: a request would take from no rule.
    NoCost,
}

impl fmt::Display for LayerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(name) => write!(f, "rule name {name:?} is not printable ASCII"),
            Self::Names { names, rules } => write!(f, "{names} rule names for {rules} rules"),
            Self::CostsOfOneRule => {
                f.write_str("costs cost a policy's rules; a limiter has one rule, 1 a request")
            }
            Self::Costs { costs, rules } => write!(f, "{costs} costs for {rules} rules"),
            Self::Cost {
                rule,
                cost,
                capacity,
            } => write!(
                f,
                "cost {cost} of rule {rule} exceeds its capacity {capacity}"
            ),
            Self::NoCost => f.write_str("costs are all 0: a request would take from no rule"),
        }
    }
}

impl std::error::Error for LayerError {}
