//! Which region an operation on a key runs in: the table's current one, or while a change
//! sweeps keys into it (`change.rs`), for a key not moved yet, the region before it.
//!
//! **Views.** An operation reads the regions through a [`View`]: the first region while it
//! is in force, as it is, and any other pinned (`versions.rs`), from the first time it
//! needs one until the view is dropped, so no region it reads is freed under it.
//!
//! **Routing.** Every operation loads the current region once (Acquire) and works there.
//! - A key found there is decided there. A key found in a slot that was moved on (the
//!   region was replaced after the load) fails its decision, which committed nothing, and
//!   the operation starts again on the region in force.
//! - A key missing from a region that is still being swept into is looked up in the
//!   region before: found with a state, it is decided there, under the old rule, and the
//!   sweep carries that decision over when it reaches the slot; found moved (the sweep is
//!   between its swap of the old slot and its write of the new one), the lookup starts
//!   again; absent, the key is new, and waits until the sweep ends before it is inserted,
//!   so that nothing but the sweep writes a region being swept into.
//! - A key missing from a region no change sweeps into is inserted there. If the region
//!   was replaced meanwhile, the insert meets a moved slot (its claim scan or its rival
//!   scan) and starts again on the current region; or it claimed its slot before the
//!   sweep reached it, and the sweep waits for the insert and moves what it installed.

use super::claim::Installed;
use super::file::{Slots, TableFile};
use super::insert::Refusal;
use super::insert::{Request, Stop};
use super::layout::Located;
use super::lookup::{Evicted, Lookup, Tenant};
use super::region::Region;
use super::KeyedLimiter;
use crate::decider::Decider;
use crate::decision::Decision;
use crate::error::SharedError;
use crate::shared::Pinned;
use crate::sync::{AtomicU64, Backoff, Ordering};
use crate::versions::{Pin, Versions};
use std::cell::OnceCell;

/// One operation's view of a table's regions (module docs, **Views**): what it reads
/// through it lives as long as the view.
pub(super) struct View<'a> {
    regions: &'a Versions<Region>,
    /// Taken the first time the operation reads a region other than the first.
    pin: OnceCell<Pin<'a, Region>>,
    /// The file the table follows the rule of, if any (`file.rs`).
    file: Option<&'a TableFile>,
    /// In a file, the operation's pin there, taken before it reads which rule is in force,
    /// kept once it has entered that rule ([`enter`](Self::enter)): until then, the
    /// operation decides in the file's first region, which needs no pin.
    pinned: OnceCell<Pinned<'a>>,
}

impl<'a> View<'a> {
    /// The region in force: the first, read as it is, while no change replaced it.
    #[inline(always)]
    pub(super) fn current(&self) -> &Region {
        match self.regions.first_in_force() {
            Some(first) => first,
            None => self.later(),
        }
    }

    /// [`current`](Self::current) once the first region was replaced here: in a file,
    /// the first until the operation has entered the rule in force (a decision there
    /// meets the marker of the change, and [`latest`](Self::latest) enters).
    #[cold]
    fn later(&self) -> &Region {
        match self.file.is_some() && self.pinned.get().is_none() {
            true => self.regions.first(),
            false => self.pinned().current(),
        }
    }

    /// The region in force, by a read-modify-write, which reads the pointer's latest value
    /// (a load may return an older one for a while): for an operation that found its
    /// region replaced, so that it does not retry on that region for ever. In a file, the
    /// region of the file's rule in force, once the change that replaced the operation's
    /// region has ended (it waits for it: a change sweeps every key before it publishes).
    ///
    /// # Errors
    /// In a file, as [`Rules::wait_for_change`](crate::shared::Rules::wait_for_change) and
    /// [`enter`](Self::enter).
    pub(super) fn latest(&self) -> Result<&Region, SharedError> {
        let Some(file) = self.file else {
            return Ok(self.pinned().latest());
        };
        let serial = self.current().serial;
        let rules = file.rules();
        if rules.serial() == serial {
            rules.wait_for_change(serial, &Slots(file))?;
        }
        self.enter(file)?;
        Ok(self.pinned().current())
    }

    /// Pins the operation in `file`, then adopts the file's rule in force, so that every
    /// region it reads from now on is at least as new as the rule in force after its pin:
    /// one that no change can reuse before the operation ends (`file.rs`).
    ///
    /// # Errors
    /// As [`Rules::pin`](crate::shared::Rules::pin) and [`TableFile::adopt`].
    #[cold]
    fn enter(&self, file: &'a TableFile) -> Result<(), SharedError> {
        let rules = file.rules();
        let taken = match self.pinned.get() {
            Some(_) => None,
            None => Some(rules.pin(&file.attached.entry)?),
        };
        let pin = self.pinned();
        loop {
            let serial = rules.serial();
            // A later rule adopted here than the file's in force: `adopt` tells a serial
            // that went back (bytes another writer put there) from one read too early.
            if pin.current().serial == serial || file.adopt(self.regions, serial)? {
                break;
            }
        }
        if let Some(pinned) = taken {
            let _ = self.pinned.set(pinned);
        }
        Ok(())
    }

    /// The region `region` replaced.
    ///
    /// # Safety
    /// `region` was read through this view, which then read that it is being swept into
    /// (`is_sweeping`): its sweep retires its predecessor only when it ends.
    pub(super) unsafe fn predecessor(&self, region: &Region) -> &Region {
        // SAFETY: the caller's promise.
        unsafe { self.pinned().linked(region.replaced) }
    }

    #[cold]
    fn pinned(&self) -> &Pin<'a, Region> {
        self.pin.get_or_init(|| self.regions.pin())
    }
}

impl<S> KeyedLimiter<S> {
    /// A view of the table's regions for one operation: in a file whose rule changed, one
    /// that has entered the rule in force, unless it cannot (then it decides in the first
    /// region, whose markers send it to [`View::latest`], which says why). A key missing
    /// from the region a view reads was missing when the view was made (a region is
    /// replaced only by a change that moved every key out of it first).
    #[inline(always)]
    pub(super) fn view(&self) -> View<'_> {
        let view = View {
            regions: &self.regions,
            pin: OnceCell::new(),
            file: self.file.as_ref(),
            pinned: OnceCell::new(),
        };
        if let Some(file) = &self.file {
            // The first region stays in force here until an operation meets a change's
            // marker there; a key inserted since the change lives in a later region, so
            // an operation that would find it missing enters the rule in force first. (A
            // file whose serial went back to 0, bytes another writer put there, is
            // decided on in the first region, which no change reuses.)
            if file.attached.changed() {
                let _ = view.enter(file);
            }
        }
        view
    }

    /// The region the table was built with, which lives as long as the table: its
    /// layout, its hasher's slot count and its rule's algorithm are every region's.
    #[inline(always)]
    pub(super) fn first(&self) -> &Region {
        self.regions.first()
    }

    /// Runs `op` on `key`'s state wherever the table keeps it (module docs), after `check`
    /// passes the request under that region's rule; else (`Err`) the region, no longer
    /// swept into, where the key would be inserted.
    ///
    /// # Errors
    /// What `check` returns.
    pub(super) fn on_key<'v, R, E: From<SharedError>>(
        &self,
        view: &'v View<'_>,
        key: Located,
        check: impl Fn(&Decider) -> Result<(), E>,
        op: impl Fn(&Region, usize, &[AtomicU64], &Tenant<'_>) -> Result<R, Evicted>,
    ) -> Result<Result<R, &'v Region>, E> {
        let region = view.current();
        check(&region.decider)?;
        match region.on_existing_slot(key, 0, &op) {
            Lookup::Found(result) => Ok(Ok(result)),
            Lookup::Absent if !region.is_sweeping() => Ok(Err(region)),
            Lookup::Absent => Self::on_key_again(view, key, &check, &op, false),
            Lookup::Moved => Self::on_key_again(view, key, &check, &op, true),
        }
    }

    /// [`on_key`](Self::on_key) after its first try found the key missing from a region
    /// being swept into, or (`moved`) its slot moved out of the region it loaded: then
    /// the next region is read by [`View::latest`], which this thread may not have
    /// seen yet (once seen, a load returns it or a later one).
    #[cold]
    #[inline(never)]
    fn on_key_again<'v, R, E: From<SharedError>>(
        view: &'v View<'_>,
        key: Located,
        check: &impl Fn(&Decider) -> Result<(), E>,
        op: &impl Fn(&Region, usize, &[AtomicU64], &Tenant<'_>) -> Result<R, Evicted>,
        mut moved: bool,
    ) -> Result<Result<R, &'v Region>, E> {
        let mut backoff = Backoff::default();
        let mut known_bound = 0;
        loop {
            let region = if moved {
                view.latest()?
            } else {
                view.current()
            };
            moved = false;
            check(&region.decider)?;
            match region.on_existing_slot(key, known_bound, op) {
                Lookup::Found(result) => return Ok(Ok(result)),
                Lookup::Absent if !region.is_sweeping() => return Ok(Err(region)),
                Lookup::Absent => {
                    // SAFETY: read through `view`, which found it swept into.
                    let old = unsafe { view.predecessor(region) };
                    check(&old.decider)?;
                    match old.on_existing_slot(key, 0, op) {
                        Lookup::Found(result) => return Ok(Ok(result)),
                        // The sweep is writing the key's slot (in `region`, which this
                        // thread has seen): read the latest bound, which the sweep raises
                        // before it writes, so the next lookup reaches it. AcqRel: an RMW
                        // that changes nothing, reading the latest value.
                        Lookup::Moved => {
                            known_bound = region.max_distance().fetch_max(0, Ordering::AcqRel);
                        }
                        // A new key (or one whose state was fresh): it waits for the sweep.
                        Lookup::Absent => {
                            while region.is_sweeping() {
                                backoff.snooze();
                            }
                        }
                    }
                }
                Lookup::Moved => moved = true,
            }
            backoff.snooze();
        }
    }

    /// Acquires `request` for `key`, inserting the key if the request changes its fresh
    /// state: `existing` decides it on the key's state in a slot, and `inserted` reports
    /// an insert's decision. A caller that has just missed the key in the region in force
    /// says where (`missed_in`).
    // Always inlined: its first try is the whole path of a key in a table whose rule does
    // not change, and the decision is returned from it without a copy per layer.
    #[inline(always)]
    pub(super) fn acquire_routed<'v, R, E: Refusal>(
        &self,
        view: &'v View<'_>,
        key: Located,
        request: Request,
        mut missed_in: Option<&'v Region>,
        existing: impl Fn(&Region, usize, &[AtomicU64], &Tenant<'_>) -> Result<R, Evicted>,
        inserted: impl Fn(&Region, Decision, Option<Installed>) -> R,
    ) -> Result<R, E> {
        let mut moved = false;
        if missed_in.is_none() {
            let region = view.current();
            request.check::<E>(&region.decider)?;
            match region.on_existing_slot(key, 0, &existing) {
                Lookup::Found(result) => return Ok(result),
                Lookup::Absent => missed_in = Some(region),
                Lookup::Moved => moved = true,
            }
        }
        Self::acquire_elsewhere(view, key, request, missed_in, moved, &existing, &inserted)
    }

    /// [`acquire_routed`](Self::acquire_routed) for a key its first try did not find
    /// where the table keeps it (`missed_in`), or found `moved`: an insert, or a key that
    /// a change is moving.
    fn acquire_elsewhere<'v, R, E: Refusal>(
        view: &'v View<'_>,
        key: Located,
        request: Request,
        missed_in: Option<&'v Region>,
        mut moved: bool,
        existing: &impl Fn(&Region, usize, &[AtomicU64], &Tenant<'_>) -> Result<R, Evicted>,
        inserted: &impl Fn(&Region, Decision, Option<Installed>) -> R,
    ) -> Result<R, E> {
        let mut missed_in = missed_in.filter(|region| !region.is_sweeping());
        loop {
            let region = match missed_in.take() {
                Some(region) => region,
                None => {
                    match Self::on_key_again(
                        view,
                        key,
                        &|rule| request.check::<E>(rule),
                        existing,
                        moved,
                    )? {
                        Ok(result) => return Ok(result),
                        Err(region) => region,
                    }
                }
            };
            request.check::<E>(&region.decider)?;
            match region.acquire_tracked(key, request, true, existing, inserted) {
                Ok(result) => return Ok(result),
                Err(Stop::TableFull) => return Err(E::TABLE_FULL),
                // The key's region was replaced: look again, on the latest region.
                Err(Stop::Moved) => moved = true,
            }
        }
    }

    /// [`acquire_routed`](Self::acquire_routed) reporting the whole decision.
    #[inline]
    pub(super) fn acquire_located<'v, E: Refusal>(
        &self,
        view: &'v View<'_>,
        key: Located,
        request: Request,
        missed_in: Option<&'v Region>,
    ) -> Result<Decision, E> {
        self.acquire_routed(
            view,
            key,
            request,
            missed_in,
            |region, _, state, tenant| request.acquire(&region.decider, state, tenant),
            |_, decision, _| decision,
        )
    }
}
