//! The words a keyed table puts in a slot's first state word when it holds no state: empty,
//! claimed by an insert in flight, or moved into the next region.
//!
//! They are the values above [`MAX_STATE`], which no algorithm ever stores (the state
//! layer's promise, `state/cell.rs`): so the table tells a marker from a state by the
//! value alone, and a slot's [`Tenancy`](crate::state::Tenancy) (`owner.rs`,
//! `lookup.rs`) refuses every marker before a store decides on it.

use crate::algorithm::MAX_STATE;
pub(crate) use crate::state::is_marker;

/// First-word marker of a keyed slot that holds no key.
pub(crate) const VACANT: u64 = u64::MAX;
/// First-word marker of a keyed slot whose state a change of the table's rule carried
/// over into the table's next region (`change.rs`): final, so no decision is ever made on
/// the slot again. Only a private table's regions hold it; in a shared file it is one
/// more value no claim writes, waited on and recovered as a forged claim marker is.
pub(crate) const MOVED: u64 = VACANT - 1;
/// How many claim markers there are: the values between [`MAX_STATE`] and [`MOVED`].
pub(crate) const CLAIM_MARKERS: u64 = MOVED - MAX_STATE - 1;

/// First-word marker of a keyed slot that one thread has claimed to install a key into,
/// naming the claim: a shared table's entry in its claim registry, so that a claim whose
/// process died can be told from every other (`recover.rs`); 0 in a private table.
#[inline]
pub(crate) const fn installing(claim: u64) -> u64 {
    MAX_STATE + 1 + claim
}

/// The claim an [`installing`] marker names.
#[inline]
pub(crate) const fn claim_of(marker: u64) -> u64 {
    marker - MAX_STATE - 1
}

/// Whether `word` marks a slot claimed by an insert in flight, or (in a private table)
/// moved: a region tells the two apart (`region.rs`).
#[inline]
pub(crate) fn is_installing(word: u64) -> bool {
    is_marker(word) && word != VACANT
}
