//! One request's conversation with Redis, without its I/O: the script calls it sends and
//! what it does with each reply. The sync and the async client run the same [`Exchange`]
//! and differ only in how they send a [`Call`] (over `redis::ConnectionLike` or
//! `redis::aio::ConnectionLike`), so they decide alike by construction.
//!
//! A request is first one script call naming all its keys (`keys.lua` decides each).
//! `NOSCRIPT` (Redis restarted or flushed its scripts; the call did nothing) loads the
//! script and sends the call again, once. `CROSSSLOT` (a Cluster node refusing keys of
//! several hash slots) splits the keys into one script call per [`slot`](super::slot()),
//! each its own request, since a Cluster connection sends a request to the node of its
//! first key. A policy's call names its rules' keys, which share a slot by their layout,
//! and its reply is read whole: its keys are never split.

use std::collections::BTreeMap;

use super::reply::group_decisions;
use super::RedisError;
use crate::decision::Decision;

/// The decision or error of each key of a request, in the order of its keys.
pub(super) type Decisions = Vec<Result<Decision, RedisError>>;

/// A request to send to Redis.
pub(super) enum Call {
    /// One command: a single decision, sent as `redis::Script` sends one, so a connection
    /// that wraps another sees the command itself and a Cluster connection routes it by
    /// its key; and `SCRIPT LOAD`.
    Command(redis::Cmd),
    /// A pipeline of one script call: a batch's. Its reply carries the script's error as a
    /// value instead of failing the call, so an error for the whole call is each key's.
    Pipeline(redis::Pipeline),
}

/// What every script call of a request sends besides its keys.
pub(super) struct Request<'a> {
    /// The script's SHA1, for `EVALSHA`.
    pub(super) sha: &'a str,
    /// The script, for `SCRIPT LOAD`.
    pub(super) source: &'a str,
    /// The arguments after the three every script takes.
    pub(super) config_args: &'a [u64],
    /// The caller's time, or `None` for the server's clock.
    pub(super) now_ns: Option<u64>,
    pub(super) n: u64,
    pub(super) max_wait_ns: u64,
    /// A policy's shadow mask (docs/policies.md, Shadow rules), sent after `config_args`
    /// when not 0.
    pub(super) shadow: u32,
}

/// One request in progress: [`next`](Self::next) is what to send, [`answer`](Self::answer)
/// takes its replies, [`finish`](Self::finish) gives the decisions once nothing is left
/// to send.
pub(super) struct Exchange<'a> {
    request: Request<'a>,
    redis_keys: Vec<Vec<u8>>,
    /// Whether script calls go as [`Call::Pipeline`] (a batch) or [`Call::Command`].
    pipelined: bool,
    /// The keys of the script call in flight, as indices into `redis_keys`.
    group: Vec<usize>,
    /// The script call in flight; `None` once the request is decided or has failed.
    call: Option<Call>,
    /// `SCRIPT LOAD` while it is in flight; the script call goes again after it.
    loading: Option<Call>,
    /// Whether the script was loaded for the call in flight: a second `NOSCRIPT` is then
    /// its reply.
    reloaded: bool,
    /// Whether the call in flight names every key: only that call is split by slot.
    whole: bool,
    /// Whether the keys are decided together (a policy's rules): the reply is then kept
    /// whole in `reply` rather than read as one decision per key.
    together: bool,
    reply: Option<redis::Value>,
    /// The groups to send after `group`, the last first.
    pending: Vec<Vec<usize>>,
    decisions: Vec<Option<Result<Decision, RedisError>>>,
    /// The error that ended the request without decisions.
    failure: Option<RedisError>,
}

impl<'a> Exchange<'a> {
    /// A single decision of `redis_key`.
    pub(super) fn single(request: Request<'a>, redis_key: Vec<u8>) -> Self {
        Self::new(request, vec![redis_key], false)
    }

    /// A batch deciding each of `redis_keys`, in one script call where Redis allows it.
    pub(super) fn batch(request: Request<'a>, redis_keys: Vec<Vec<u8>>) -> Self {
        Self::new(request, redis_keys, true)
    }

    /// One script call deciding `redis_keys` together, its reply kept whole (see
    /// [`finish_together`](Self::finish_together)).
    pub(super) fn together(request: Request<'a>, redis_keys: Vec<Vec<u8>>) -> Self {
        let mut exchange = Self::new(request, redis_keys, false);
        exchange.together = true;
        exchange.whole = false;
        exchange
    }

    fn new(request: Request<'a>, redis_keys: Vec<Vec<u8>>, pipelined: bool) -> Self {
        let mut exchange = Self {
            request,
            decisions: redis_keys.iter().map(|_| None).collect(),
            pipelined,
            group: (0..redis_keys.len()).collect(),
            redis_keys,
            call: None,
            loading: None,
            reloaded: false,
            whole: true,
            together: false,
            reply: None,
            pending: Vec::new(),
            failure: None,
        };
        if !exchange.group.is_empty() {
            exchange.call = Some(exchange.script_call());
        }
        exchange
    }

    /// What to send next, or `None` when the request is over.
    pub(super) fn next(&self) -> Option<&Call> {
        self.loading.as_ref().or(self.call.as_ref())
    }

    /// Takes the replies to the [`next`](Self::next) call, or the error of sending it.
    pub(super) fn answer(&mut self, replies: redis::RedisResult<Vec<redis::Value>>) {
        if self.loading.take().is_some() {
            let loaded = replies.and_then(|replies| {
                replies
                    .into_iter()
                    .try_for_each(|reply| reply.extract_error().map(drop))
            });
            if let Err(error) = loaded {
                self.fail(error.into());
            }
            return;
        }
        if !self.reloaded && is_no_script(&replies) {
            // Redis restarted or flushed its scripts: load the script, then send again
            // (a call that failed with NOSCRIPT did nothing).
            self.reloaded = true;
            let mut load = redis::cmd("SCRIPT");
            load.arg("LOAD").arg(self.request.source);
            self.loading = Some(Call::Command(load));
            return;
        }
        let reply = match replies.map(|mut replies| replies.pop()) {
            Ok(Some(reply)) => reply,
            Ok(None) => return self.fail(RedisError::Reply("no reply".to_owned())),
            // CROSSSLOT as a Cluster connection's error.
            Err(error) if self.whole && error.kind() == redis::ErrorKind::CrossSlot => {
                return self.split()
            }
            Err(error) => return self.fail(error.into()),
        };
        // CROSSSLOT as the node's reply.
        if self.whole
            && matches!(&reply, redis::Value::ServerError(error) if error.code() == "CROSSSLOT")
        {
            return self.split();
        }
        if self.together {
            self.reply = Some(reply);
            self.call = None;
            return;
        }
        for (index, decision) in self
            .group
            .iter()
            .zip(group_decisions(reply, self.group.len()))
        {
            self.decisions[*index] = Some(decision);
        }
        self.send_next_group();
    }

    /// The decision or error of each key, or the error that left the request undecided.
    pub(super) fn finish(self) -> Result<Decisions, RedisError> {
        match self.failure {
            Some(error) => Err(error),
            None => Ok(self.decisions.into_iter().flatten().collect()),
        }
    }

    /// The reply of a call deciding its keys [`together`](Self::together), or the error
    /// that left it without one.
    pub(super) fn finish_together(self) -> Result<redis::Value, RedisError> {
        match (self.failure, self.reply) {
            (Some(error), _) => Err(error),
            (None, Some(reply)) => Ok(reply),
            (None, None) => Err(RedisError::Reply("no reply".to_owned())),
        }
    }

    /// The `EVALSHA` of the keys of `group`.
    fn script_call(&self) -> Call {
        let request = &self.request;
        let mut call = redis::cmd("EVALSHA");
        call.arg(request.sha).arg(self.group.len());
        for &index in &self.group {
            call.arg(&self.redis_keys[index]);
        }
        call.arg(
            request
                .now_ns
                .map_or_else(String::new, |now| now.to_string()),
        )
        .arg(request.n)
        .arg(request.max_wait_ns)
        .arg(request.config_args);
        if request.shadow != 0 {
            call.arg(request.shadow);
        }
        if self.pipelined {
            let mut pipeline = redis::pipe();
            pipeline.add_command(call);
            Call::Pipeline(pipeline)
        } else {
            Call::Command(call)
        }
    }

    /// After `CROSSSLOT`: the keys again, one script call per hash slot.
    fn split(&mut self) {
        let mut by_slot = BTreeMap::<u16, Vec<usize>>::new();
        for (index, key) in self.redis_keys.iter().enumerate() {
            by_slot.entry(super::slot(key)).or_default().push(index);
        }
        self.pending = by_slot.into_values().rev().collect();
        self.send_next_group();
    }

    fn send_next_group(&mut self) {
        self.call = self.pending.pop().map(|group| {
            self.group = group;
            self.whole = false;
            self.reloaded = false;
            self.script_call()
        });
    }

    fn fail(&mut self, error: RedisError) {
        self.failure = Some(error);
        self.call = None;
    }
}

/// The one decision of a single request.
pub(super) fn only(decisions: Decisions) -> Result<Decision, RedisError> {
    let [decision] = <[_; 1]>::try_from(decisions).map_err(|decisions| {
        RedisError::Reply(format!("{} decisions for one key", decisions.len()))
    })?;
    decision
}

fn is_no_script(replies: &redis::RedisResult<Vec<redis::Value>>) -> bool {
    match replies {
        Ok(replies) => replies.iter().any(
            |reply| matches!(reply, redis::Value::ServerError(error) if error.code() == "NOSCRIPT"),
        ),
        // A Cluster connection answers a node's error as its own.
        Err(error) => error.kind() == redis::ErrorKind::NoScriptError,
    }
}
