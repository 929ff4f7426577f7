//! A limiter that follows the rule of its file (docs/shared.md, changing the rule): the
//! file's side A is its first generation, decided on as any first generation; the rule in
//! force, which a change by any process makes in the file, is **adopted** here (published
//! as a generation of this process) before a decision is made on it, pinned here and in
//! the file (`shared/pins.rs`).

use super::Check;
use super::{Generation, Generations, Memory, Operation, MAY_BE_REPLACED};
use crate::config::Config;
use crate::decider::Decider;
use crate::error::SharedError;
use crate::replaced::Replaceable;
use crate::shared::{Adoption, Attached, OneState, Pinned, Rules, Sides};
use crate::versions::{Pin, Version};
use std::ptr::NonNull;

/// A limiter file whose rule can change (`shared/rules.rs`).
#[derive(Debug)]
pub(crate) struct InFile {
    pub(crate) attached: Attached,
    /// The state words of the rule the file was created with.
    pub(crate) first_words: usize,
}

impl InFile {
    pub(crate) fn rules(&self) -> Rules<'_> {
        self.attached.rules(Sides::of_state(self.first_words))
    }

    /// The generation of the file's rule of `serial`, `config` (decided by `decider`), on
    /// that rule's side.
    pub(crate) fn generation(&self, decider: Decider, config: &Config, serial: u64) -> Generation {
        let state = NonNull::from(&self.rules().side(serial, decider.state_words())[0]);
        let memory = Memory::Shared {
            _mapping: self.attached.mapping(),
        };
        let mut generation = Generation::new(decider, config, state, memory);
        generation.serial = serial;
        generation
    }
}

impl Generations {
    /// The generations of a limiter that follows the rule of `file`, whose side A
    /// `first` decides on; the rule in force is adopted now.
    ///
    /// # Errors
    /// As [`adopt`](Self::adopt).
    pub(crate) fn in_file(first: Generation, file: InFile) -> Result<Self, SharedError> {
        let generations = Self {
            file: Some(file),
            ..Self::new(first)
        };
        generations.follow()?;
        Ok(generations)
    }

    /// The file this limiter follows the rule of, if any: for a model of another process
    /// attached to it.
    #[cfg(loom)]
    pub(crate) fn mapping(&self) -> Option<std::sync::Arc<crate::shared::Mapping>> {
        self.file.as_ref().map(|file| file.attached.mapping())
    }

    /// Adopts the rule in force in the file, if this limiter follows one.
    ///
    /// # Errors
    /// As [`adopt`](Self::adopt).
    pub(super) fn follow(&self) -> Result<(), SharedError> {
        match &self.file {
            Some(file) => loop {
                let serial = file.rules().serial();
                let adopted = match self.versions.first_in_force() {
                    Some(first) => first.serial,
                    None => self.versions.pin().current().serial,
                };
                // The changes' lock only when there is a rule to adopt.
                if adopted >= serial || self.adopt(file, serial)? {
                    return Ok(());
                }
            },
            None => Ok(()),
        }
    }

    /// Makes the file's rule of `serial` the generation in force here, unless this
    /// process has it or a later one: whether it was (or is) adopted; `false` if that
    /// rule's record was rewritten meanwhile for a later one (read the serial again).
    ///
    /// # Errors
    /// [`SharedError::Incompatible`] if the file's rule in force is no rule (bytes another
    /// writer put there).
    #[cold]
    pub(super) fn adopt(&self, file: &InFile, serial: u64) -> Result<bool, SharedError> {
        let mut change = self.versions.change();
        let adopted = change.current().0.serial;
        let config = match file.rules().adoption(adopted, serial)? {
            Adoption::Has => return Ok(true),
            Adoption::Reread => return Ok(false),
            Adoption::Publish(config) => config,
        };
        let decider = Decider::new(&config).map_err(|_| SharedError::Incompatible)?;
        change.publish(file.generation(decider, &config, serial));
        Ok(true)
    }

    /// [`run_again`](Self::run_again) for a limiter that follows its file's rule: pinned
    /// here and in the file, on the generation of the file's rule in force (adopted first
    /// if it is new here). Words frozen by a change in flight are waited for (the change
    /// finished if its process died); a marker no change explains is read as a state.
    /// Inlined, as `run_again` is, with the pinning and waiting out of line: a call that
    /// returned the operation's result would put every decision's result in memory.
    #[inline(always)]
    pub(super) fn run_in_file<O: Operation, E: From<SharedError>>(
        &self,
        file: &InFile,
        check: impl Check<E>,
        operation: O,
    ) -> Result<O::Output, E> {
        const AS_A_STATE: Replaceable = Replaceable { replaceable: false };
        loop {
            let (pin, pinned, serial) = self.pin_in_file(file)?;
            let generation = pin.current();
            check(&generation.decider)?;
            if let Ok(result) = operation.run(generation, &MAY_BE_REPLACED) {
                return Ok(result);
            }
            if file.rules().is_forged(serial) {
                if let Ok(result) = operation.run(generation, &AS_A_STATE) {
                    return Ok(result);
                }
            }
            drop((pinned, pin));
            file.rules().wait_for_change(serial, &OneState)?;
        }
    }

    /// Pins this thread here and in the file, on the generation of the file's rule in
    /// force, adopted first if it is new here: the pins and that rule's serial.
    ///
    /// # Errors
    /// As [`Rules::pin`] and [`adopt`](Self::adopt).
    #[cold]
    #[inline(never)]
    fn pin_in_file<'a>(
        &'a self,
        file: &'a InFile,
    ) -> Result<(Pin<'a, Generation>, Pinned<'a>, u64), SharedError> {
        let rules = file.rules();
        loop {
            let pin = self.versions.pin();
            let pinned = rules.pin(&file.attached.entry)?;
            let serial = rules.serial();
            if pin.current().serial == serial {
                return Ok((pin, pinned, serial));
            }
            drop((pinned, pin));
            self.adopt(file, serial)?;
        }
    }

    /// [`with_current`](Self::with_current) in a file: on the file's rule in force, or,
    /// if it cannot be pinned or adopted (hostile bytes, a full registry), the one this
    /// process last adopted.
    #[cold]
    pub(super) fn with_current_in_file<R>(
        &self,
        file: &InFile,
        read: impl FnOnce(&Version<Generation>) -> R,
    ) -> R {
        match self.pin_in_file(file) {
            Ok((pin, _pinned, _)) => read(pin.current()),
            Err(_) => read(self.versions.pin().current()),
        }
    }
}
