//! Sequential reference models of every algorithm (docs/decision.md, docs/keyed.md,
//! docs/policies.md), kept the obvious way: per-window counts, every admitted timestamp, a
//! TAT in u128. Each decision field is found from its definition (by search), never by the
//! library's closed forms. Used by the model tests (`windows_model.rs`, `gcra.rs`,
//! `policy.rs`) and by the differential fuzz target (`fuzz/fuzz_targets/abi_sequence.rs`),
//! which includes this file by path.

use super::Refused;
use librate::{Algorithm, Config, Decision};
use std::collections::{BTreeMap, HashMap};

/// A sequential reference model of one algorithm.
pub trait WindowModel: Clone {
    /// Whether `n ≥ 1` units would be admitted at `t`.
    fn fits(&self, t: u64, n: u64) -> bool;
    /// Logs `n` admitted units at `t`.
    fn record(&mut self, t: u64, n: u64);
    /// Units that could be admitted at `t`.
    fn remaining(&self, t: u64) -> u64;
    fn limit(&self) -> u64;
}

/// Per-window counts, for both window models, of the windows that can still count. A
/// request from a window older than the latest one anything was admitted in is evaluated
/// at the start of that latest window.
#[derive(Clone, PartialEq)]
pub struct WindowCounts {
    limit: u64,
    period: u64,
    counts: BTreeMap<u64, u64>,
    latest_window: u64,
}

impl WindowCounts {
    pub fn new(limit: u64, period: u64) -> Self {
        Self {
            limit,
            period,
            counts: BTreeMap::new(),
            latest_window: 0,
        }
    }

    /// The instant a request at `t` is evaluated at.
    pub fn instant(&self, t: u64) -> u64 {
        t.max(self.latest_window * self.period)
    }

    pub fn count(&self, window: Option<u64>) -> u64 {
        window
            .and_then(|w| self.counts.get(&w))
            .copied()
            .unwrap_or(0)
    }

    pub fn record(&mut self, t: u64, n: u64) {
        let window = self.instant(t) / self.period;
        *self.counts.entry(window).or_default() += n;
        self.latest_window = window;
        // Every request is now evaluated in this window or a later one, so only this
        // window and the one before can count again.
        self.counts.retain(|&counted, _| counted + 1 >= window);
    }
}

/// Fixed window: the count of the window the request is evaluated in.
#[derive(Clone, PartialEq)]
pub struct FixedModel(WindowCounts);

impl FixedModel {
    pub fn new(limit: u64, period: u64) -> Self {
        Self(WindowCounts::new(limit, period))
    }

    pub fn count(&self, t: u64) -> u64 {
        let windows = &self.0;
        windows.count(Some(windows.instant(t) / windows.period))
    }
}

impl WindowModel for FixedModel {
    fn fits(&self, t: u64, n: u64) -> bool {
        self.count(t) + n <= self.0.limit
    }
    fn record(&mut self, t: u64, n: u64) {
        self.0.record(t, n);
    }
    fn remaining(&self, t: u64) -> u64 {
        self.0.limit - self.count(t)
    }
    fn limit(&self) -> u64 {
        self.0.limit
    }
}

/// Sliding window counter: the previous window's count weighted by its overlap.
#[derive(Clone, PartialEq)]
pub struct SlidingModel(WindowCounts);

impl SlidingModel {
    pub fn new(limit: u64, period: u64) -> Self {
        Self(WindowCounts::new(limit, period))
    }

    /// prev·(P − e) + (cur + extra)·P ≤ L·P, in u128.
    pub fn fits_extra(&self, t: u64, extra: u64) -> bool {
        let windows = &self.0;
        let t = windows.instant(t);
        let window = t / windows.period;
        let elapsed = u128::from(t - window * windows.period);
        let period = u128::from(windows.period);
        let prev = u128::from(windows.count(window.checked_sub(1)));
        let cur = u128::from(windows.count(Some(window)));
        prev * (period - elapsed) + (cur + u128::from(extra)) * period
            <= u128::from(windows.limit) * period
    }
}

impl WindowModel for SlidingModel {
    fn fits(&self, t: u64, n: u64) -> bool {
        self.fits_extra(t, n)
    }
    fn record(&mut self, t: u64, n: u64) {
        self.0.record(t, n);
    }
    /// The largest m ≤ L that fits (fitting is monotone in m), by bisection.
    fn remaining(&self, t: u64) -> u64 {
        let (mut fits, mut too_many) = (0, self.0.limit + 1);
        if !self.fits_extra(t, 0) {
            return 0;
        }
        while too_many - fits > 1 {
            let middle = fits + (too_many - fits) / 2;
            if self.fits_extra(t, middle) {
                fits = middle;
            } else {
                too_many = middle;
            }
        }
        fits
    }
    fn limit(&self) -> u64 {
        self.0.limit
    }
}

/// Every admitted unit's timestamp that can still count. A request is evaluated (and
/// logged) at the latest logged timestamp if it is older.
#[derive(Clone, PartialEq)]
pub struct LogModel {
    limit: u64,
    period: u64,
    /// The timestamps in `(latest − P, latest]`: those older never count again, every
    /// request being evaluated at `latest` or later.
    stamps: Vec<u64>,
    /// The latest logged timestamp, or the latest time of a log emptied by a reset, below
    /// which nothing is judged.
    latest: u64,
}

impl LogModel {
    pub fn new(limit: u64, period: u64) -> Self {
        Self {
            limit,
            period,
            stamps: Vec::new(),
            latest: 0,
        }
    }

    pub fn instant(&self, t: u64) -> u64 {
        t.max(self.latest)
    }

    /// Logged units in `(t − P, t]`.
    pub fn live(&self, t: u64) -> u64 {
        let t = u128::from(self.instant(t));
        let period = u128::from(self.period);
        self.stamps
            .iter()
            .filter(|&&s| u128::from(s) + period > t)
            .count() as u64
    }
}

impl WindowModel for LogModel {
    fn fits(&self, t: u64, n: u64) -> bool {
        self.live(t) + n <= self.limit
    }
    fn record(&mut self, t: u64, n: u64) {
        let at = self.instant(t);
        self.latest = at;
        let period = u128::from(self.period);
        self.stamps
            .retain(|&s| u128::from(s) + period > u128::from(at));
        self.stamps.extend((0..n).map(|_| at));
    }
    fn remaining(&self, t: u64) -> u64 {
        self.limit - self.live(t)
    }
    fn limit(&self) -> u64 {
        self.limit
    }
}

/// A rule whose period is `Config::FOREVER`: `capacity` units over the whole timeline,
/// never refilled. Time plays no part: a request fits iff the units used so far and its
/// own are at most the capacity.
#[derive(Clone, PartialEq)]
pub struct AllowanceModel {
    capacity: u64,
    used: u64,
}

impl AllowanceModel {
    pub fn new(capacity: u64) -> Self {
        Self { capacity, used: 0 }
    }
}

impl WindowModel for AllowanceModel {
    fn fits(&self, _t: u64, n: u64) -> bool {
        u128::from(self.used) + u128::from(n) <= u128::from(self.capacity)
    }
    fn record(&mut self, _t: u64, n: u64) {
        self.used += n;
    }
    fn remaining(&self, _t: u64) -> u64 {
        self.capacity - self.used
    }
    fn limit(&self) -> u64 {
        self.capacity
    }
}

/// The smallest d with `holds(t + d)`, given it is monotone in d; `u64::MAX` if it does
/// not hold even at the end of the timeline.
pub fn first_d(t: u64, holds: impl Fn(u64) -> bool) -> u64 {
    let (mut low, mut high) = (0u64, u64::MAX - t);
    if !holds(u64::MAX) {
        return u64::MAX;
    }
    while low < high {
        let middle = low + (high - low) / 2;
        if holds(t + middle) {
            high = middle;
        } else {
            low = middle + 1;
        }
    }
    low
}

/// The model's decision for `n` at `t`, every field by its definition; records it.
pub fn model_decide<M: WindowModel>(model: &mut M, t: u64, n: u64) -> Result<Decision, Refused> {
    let limit = model.limit();
    if n > limit {
        return Err(Refused::InsufficientCapacity);
    }
    let allowed = n == 0 || model.fits(t, n);
    if allowed && n > 0 {
        model.record(t, n);
    }
    let retry_after_ns = if allowed {
        0
    } else {
        first_d(t, |at| model.fits(at, n))
    };
    Ok(Decision {
        allowed,
        limit,
        remaining: model.remaining(t),
        retry_after_ns,
        // `remaining` is the most units that fit, so it is the limit iff the limit fits.
        reset_after_ns: first_d(t, |at| model.fits(at, limit)),
        wait_ns: 0,
    })
}

/// The largest TAT a state stores, 2⁶⁴ − 257: the values above it mark keyed-table
/// slots, so the timeline of a TAT ends there (src/gcra.rs).
pub const END: u64 = u64::MAX - 256;

/// GCRA (docs/decision.md), sequentially, in u128 so nothing can overflow.
#[derive(Clone, PartialEq)]
pub struct GcraModel {
    pub emission_interval: u128,
    pub burst: u128,
    pub tat: u128,
}

impl GcraModel {
    /// The new TAT if `n` units at `t` with `max_wait` would be admitted, ignoring that
    /// the TAT must fit in u64: this part of the rule is monotone in `t`.
    pub fn admits_unbounded(&self, t: u128, n: u128, max_wait: u128) -> Option<u128> {
        let new_tat = self.tat.max(t) + n * self.emission_interval;
        (new_tat - t <= self.burst * self.emission_interval + max_wait).then_some(new_tat)
    }

    /// The whole rule: also, the new TAT must be storable, at most END.
    pub fn admits(&self, t: u128, n: u128, max_wait: u128) -> Option<u128> {
        self.admits_unbounded(t, n, max_wait)
            .filter(|&new_tat| new_tat <= u128::from(END))
    }

    pub fn remaining(&self, t: u128) -> u128 {
        // The most units a plain acquire could take at t: admission only gets harder as the
        // cost grows, so bisect 0..=burst for the last cost admitted.
        let (mut admitted, mut too_many) = (0, self.burst + 1);
        while too_many - admitted > 1 {
            let middle = admitted + (too_many - admitted) / 2;
            if self.admits(t, middle, 0).is_some() {
                admitted = middle;
            } else {
                too_many = middle;
            }
        }
        admitted
    }

    /// The smallest d with `holds(d)`, where `holds` = (a monotone rising condition, found
    /// by `rising`) ∧ (the end-of-time condition, which only falls): search the first,
    /// then check the second there.
    pub fn first(t: u64, rising: impl FnMut(u64) -> bool, holds: impl Fn(u64) -> bool) -> u64 {
        match smallest(u64::MAX - t, rising) {
            d if d != u64::MAX && holds(d) => d,
            _ => u64::MAX,
        }
    }

    pub fn decide(&mut self, t: u64, n: u64, max_wait: u64) -> Decision {
        let (t128, n128, w128) = (u128::from(t), u128::from(n), u128::from(max_wait));
        let at = |d: u64| t128 + u128::from(d);
        // A query (n = 0) is always admitted and changes nothing (docs/decision.md).
        let new_tat = if n == 0 {
            Some(self.tat)
        } else {
            self.admits(t128, n128, w128)
        };
        let retry_after_ns = match new_tat {
            Some(_) => 0,
            None => Self::first(
                t,
                |d| self.admits_unbounded(at(d), n128, w128).is_some(),
                |d| self.admits(at(d), n128, w128).is_some(),
            ),
        };
        let wait_ns = match new_tat.filter(|_| n > 0) {
            Some(new_tat) => {
                self.tat = new_tat;
                (new_tat - t128).saturating_sub(self.burst * self.emission_interval) as u64
            }
            None => 0,
        };
        let reset_after_ns = Self::first(
            t,
            |d| self.admits_unbounded(at(d), self.burst, 0).is_some(),
            |d| self.remaining(at(d)) == self.burst,
        );
        Decision {
            allowed: new_tat.is_some(),
            limit: self.burst as u64,
            remaining: self.remaining(t128) as u64,
            retry_after_ns,
            reset_after_ns,
            wait_ns,
        }
    }
}

/// The smallest `d` in `0..=bound` for which `holds(d)` is true, given that `holds` is
/// monotone there (false … false true … true); `u64::MAX` ("never") if it never holds.
pub fn smallest(bound: u64, mut holds: impl FnMut(u64) -> bool) -> u64 {
    if !holds(bound) {
        return u64::MAX;
    }
    let (mut low, mut high) = (0u64, bound); // holds(high) is true
    if holds(low) {
        return 0;
    }
    while high - low > 1 {
        let mid = low + (high - low) / 2;
        if holds(mid) {
            high = mid;
        } else {
            low = mid;
        }
    }
    high
}

/// One rule of any algorithm, as its model: what a limiter of `config` must decide.
#[derive(Clone, PartialEq)]
pub enum RuleModel {
    Gcra(GcraModel),
    Fixed(FixedModel),
    Sliding(SlidingModel),
    Log(LogModel),
    /// Any algorithm with a period of `Config::FOREVER`. GCRA's allowance is its burst and
    /// keeps its reserve (never waiting: what an acquire admits); the others' is their
    /// limit, and they have no reserve.
    Allowance {
        model: AllowanceModel,
        gcra: bool,
    },
}

impl RuleModel {
    /// The model of a fresh limiter of `config`, which must be valid.
    pub fn new(config: &Config) -> Self {
        let (limit, period) = (config.limit, config.period().as_nanos() as u64);
        let burst = if config.burst == 0 {
            limit
        } else {
            config.burst
        };
        if period == u64::MAX {
            let gcra = config.algorithm == Algorithm::Gcra;
            let capacity = if gcra { burst } else { limit };
            return Self::Allowance {
                model: AllowanceModel::new(capacity),
                gcra,
            };
        }
        match config.algorithm {
            Algorithm::Gcra => Self::Gcra(GcraModel {
                emission_interval: u128::from(period / limit),
                burst: u128::from(burst),
                tat: 0,
            }),
            Algorithm::FixedWindow => Self::Fixed(FixedModel::new(limit, period)),
            Algorithm::SlidingWindow => Self::Sliding(SlidingModel::new(limit, period)),
            Algorithm::SlidingLog => Self::Log(LogModel::new(limit, period)),
            algorithm => unimplemented!("no model of {algorithm:?}"),
        }
    }

    /// The most units admitted at once: GCRA's burst, a window's limit.
    pub fn limit(&self) -> u64 {
        match self {
            Self::Gcra(model) => model.burst as u64,
            Self::Fixed(model) => model.limit(),
            Self::Sliding(model) => model.limit(),
            Self::Log(model) => model.limit(),
            Self::Allowance { model, .. } => model.limit(),
        }
    }

    /// The decision on `n` units at `t`, an acquire (`max_wait` `None`) or a reserve;
    /// records what it admits. Windows have no reserve; a cost above the limit is an error.
    pub fn decide(&mut self, t: u64, n: u64, max_wait: Option<u64>) -> Result<Decision, Refused> {
        if max_wait.is_some() && !matches!(self, Self::Gcra(_) | Self::Allowance { gcra: true, .. })
        {
            return Err(Refused::Unsupported);
        }
        if n > self.limit() {
            return Err(Refused::InsufficientCapacity);
        }
        match self {
            Self::Gcra(model) => Ok(model.decide(t, n, max_wait.unwrap_or(0))),
            Self::Fixed(model) => model_decide(model, t, n),
            Self::Sliding(model) => model_decide(model, t, n),
            Self::Log(model) => model_decide(model, t, n),
            Self::Allowance { model, .. } => model_decide(model, t, n),
        }
    }

    /// A reset: from the latest time seen on, the rule decides as a new one. GCRA and the
    /// fixed window are new at any time; the sliding window and the log still judge a
    /// request from before that time as made at it.
    pub fn reset(&mut self, config: &Config) {
        match self {
            Self::Sliding(SlidingModel(windows)) => windows.counts.clear(),
            Self::Log(log) => log.stamps.clear(),
            _ => *self = Self::new(config),
        }
    }

    /// Whether the state is a new rule's at `t` (docs/keyed.md, reclaim), so a keyed table may drop
    /// it: GCRA's TAT is not after `t`; a window counted nothing in the window of `t` or
    /// the one before; every log entry expired; an allowance used nothing.
    pub fn is_fresh(&self, t: u64) -> bool {
        let windows_empty = |windows: &WindowCounts| {
            let window = windows.instant(t) / windows.period;
            windows.count(Some(window)) == 0 && windows.count(window.checked_sub(1)) == 0
        };
        match self {
            Self::Gcra(model) => model.tat <= u128::from(t),
            Self::Fixed(FixedModel(windows)) | Self::Sliding(SlidingModel(windows)) => {
                windows_empty(windows)
            }
            Self::Log(log) => log.live(t) == 0,
            Self::Allowance { model, .. } => model.used == 0,
        }
    }

    /// What a query (`n` = 0) at `t` reports; changes nothing.
    pub fn query(&self, t: u64) -> Decision {
        self.clone()
            .decide(t, 0, None)
            .expect("a query is always decided")
    }
}

/// What a policy decides (docs/policies.md) from its rules' answers. `taken[i]` is rule i's
/// decision on the request from the policy's state; `state(i)` is rule i's answer to a
/// query at the same instant, read only on a denial, where nothing is taken. Returns the
/// combined decision, the first rule that denied, and each rule's decision as reported.
pub fn combine(
    taken: Vec<Decision>,
    state: impl Fn(usize) -> Decision,
) -> (Decision, Option<usize>, Vec<Decision>) {
    let denied_by = taken.iter().position(|decision| !decision.allowed);
    let each: Vec<Decision> = match denied_by {
        None => taken,
        // Nothing taken: each rule's state as it is, and its own answer to the request.
        Some(_) => taken
            .iter()
            .enumerate()
            .map(|(i, request)| Decision {
                allowed: request.allowed,
                retry_after_ns: request.retry_after_ns,
                ..state(i)
            })
            .collect(),
    };
    let decision = Decision {
        allowed: denied_by.is_none(),
        limit: each.iter().map(|d| d.limit).min().unwrap(),
        remaining: each.iter().map(|d| d.remaining).min().unwrap(),
        retry_after_ns: each.iter().map(|d| d.retry_after_ns).max().unwrap(),
        reset_after_ns: each.iter().map(|d| d.reset_after_ns).max().unwrap(),
        wait_ns: 0,
    };
    (decision, denied_by, each)
}

/// A policy of rules, each its model: a request is admitted iff every rule admits it, and
/// a denial takes nothing from any rule.
pub struct PolicyModel(pub Vec<RuleModel>);

impl PolicyModel {
    /// The policy's decision on `n` units at `t` (see [`combine`]); records what it admits.
    pub fn decide(
        &mut self,
        t: u64,
        n: u64,
    ) -> Result<(Decision, Option<usize>, Vec<Decision>), Refused> {
        if self.0.iter().any(|rule| n > rule.limit()) {
            return Err(Refused::InsufficientCapacity);
        }
        let mut after = self.0.clone();
        let taken = after
            .iter_mut()
            .map(|rule| rule.decide(t, n, None))
            .collect::<Result<Vec<_>, _>>()?;
        let combined = combine(taken, |i| self.0[i].query(t));
        if combined.0.allowed {
            self.0 = after;
        }
        Ok(combined)
    }
}

/// A keyed GCRA table per docs/decision.md and docs/keyed.md, one TAT per key, as obviously as
/// possible: a new key is refused exactly when every one of `slots` holds a live key.
pub struct KeyedGcraModel {
    pub emission_interval: u64,
    pub tolerance: u64,
    pub slots: u64,
    pub tats: HashMap<u64, u64>,
}

impl KeyedGcraModel {
    /// `Err(())` for TableFull, else whether `n` units are admitted.
    pub fn acquire(&mut self, key: u64, n: u64, now: u64) -> Result<(bool, u64), ()> {
        let tat = self.tats.get(&key).copied().unwrap_or(0);
        let live = |tat: u64| tat > now;
        if !live(tat) {
            let others_live = self.tats.values().filter(|&&tat| live(tat)).count() as u64;
            if others_live == self.slots {
                return Err(());
            }
        }
        let start = tat.max(now);
        let due = start + n * self.emission_interval;
        if due - now <= self.tolerance {
            self.tats.insert(key, due);
            Ok((true, 0))
        } else {
            Ok((false, due - now - self.tolerance))
        }
    }
}

/// A keyed table (docs/keyed.md) as rule models per key, with what the table may do beyond
/// one limiter per key: a key whose state is fresh may be forgotten at any time (so, time
/// going back, it may be decided as a new key's), a reset key's former state holds its
/// slot until it is fresh, and a new key may be refused with `TableFull` only when at
/// least `capacity` other states are live. A key whose state may or may not have been
/// forgotten has both candidates until a decision tells them apart.
pub struct KeyedModel {
    config: Config,
    capacity: u64,
    /// Each key's candidate states; the first is the key's state if never forgotten.
    keys: HashMap<Vec<u8>, Vec<RuleModel>>,
    /// Former states of reset keys, under no key.
    retired: Vec<RuleModel>,
    /// The latest time any call gave.
    latest: u64,
}

/// Candidate states kept per key at most: each is a point where the key may have been
/// forgotten, and a short sequence has few.
const CANDIDATES: usize = 8;

impl KeyedModel {
    pub fn new(config: &Config, capacity: u64) -> Self {
        Self {
            config: *config,
            capacity,
            keys: HashMap::new(),
            retired: Vec::new(),
            latest: 0,
        }
    }

    /// States other than `key`'s that are not fresh at `t` (a key counts if any of its
    /// candidates is not).
    fn live_others(&self, key: &[u8], t: u64) -> u64 {
        let keys = self
            .keys
            .iter()
            .filter(|(other, _)| other.as_slice() != key);
        let live_keys = keys
            .filter(|(_, candidates)| candidates.iter().any(|state| !state.is_fresh(t)))
            .count();
        let live_retired = self
            .retired
            .iter()
            .filter(|state| !state.is_fresh(t))
            .count();
        (live_keys + live_retired) as u64
    }

    /// Checks the table's answer `got` to `n` units for `key` at `t` (a reserve when
    /// `max_wait` is given) and records it; `compare` says whether two decisions agree
    /// (the batch calls report only the outcome). `Err` says what is wrong.
    pub fn check(
        &mut self,
        key: &[u8],
        t: u64,
        n: u64,
        max_wait: Option<u64>,
        got: Result<Decision, Refused>,
        compare: impl Fn(&Decision, &Decision) -> bool,
    ) -> Result<(), String> {
        self.latest = self.latest.max(t);
        let mut candidates = self.keys.get(key).cloned().unwrap_or_default();
        // Forgotten, a key is new: so is one never seen.
        if candidates.is_empty() || candidates.iter().any(|state| state.is_fresh(self.latest)) {
            candidates.push(RuleModel::new(&self.config));
        }
        let mut wants = Vec::new();
        let mut agreeing = Vec::new();
        for mut state in candidates {
            let want = state.decide(t, n, max_wait);
            let agrees = match (&got, &want) {
                (Ok(got), Ok(want)) => compare(got, want),
                (Err(got), Err(want)) => got == want,
                _ => false,
            };
            if agrees && !agreeing.contains(&state) {
                agreeing.push(state);
            }
            wants.push(want);
        }
        if let (Err(Refused::TableFull), Some(Ok(_))) = (&got, wants.first()) {
            let live = self.live_others(key, t);
            if n > 0 && live >= self.capacity {
                return Ok(());
            }
            return Err(format!("TableFull with {live} other live states"));
        }
        if agreeing.is_empty() {
            return Err(format!("table {got:?}, model {wants:?}"));
        }
        agreeing.truncate(CANDIDATES);
        self.keys.insert(key.to_vec(), agreeing);
        Ok(())
    }

    /// Resets `key`: its states, if any, are retired, and the key is new again.
    pub fn reset(&mut self, key: &[u8]) {
        if let Some(candidates) = self.keys.remove(key) {
            self.retired.extend(candidates);
        }
    }
}
