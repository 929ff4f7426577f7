//! A thread that renews leases in the background (the `redis` cargo feature): a round every
//! renewal interval, on a connection from the caller's client, until it is stopped.

use crate::error::Error;
use crate::redis::RedisError;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

/// A connection the renewer opens when it needs one, and drops after a failure.
pub(super) struct Connection<C> {
    connect: Box<dyn FnMut() -> redis::RedisResult<C> + Send>,
    open: Option<C>,
}

impl<C> Connection<C> {
    /// The open connection, or a new one.
    pub(super) fn get(&mut self) -> Result<&mut C, RedisError> {
        match &mut self.open {
            Some(open) => Ok(open),
            slot @ None => Ok(slot.insert((self.connect)()?)),
        }
    }

    /// Drops the connection after a failure: the next round opens another.
    pub(super) fn failed(&mut self) {
        self.open = None;
    }
}

/// The renewing thread; stopping it (or dropping this) runs its last step.
pub(super) struct Renewer {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<Result<(), RedisError>>>,
}

impl Renewer {
    /// Runs `round` at once and then every `every`, until stopped; then `last` (a
    /// hand-back), again on a new connection if it fails (the one open may have been
    /// broken since the last round), whose error [`stop`](Self::stop) returns.
    ///
    /// # Errors
    /// [`Error::Timer`] if the thread cannot be started.
    pub(super) fn start<C: 'static>(
        every: Duration,
        connect: impl FnMut() -> redis::RedisResult<C> + Send + 'static,
        mut round: impl FnMut(&mut Connection<C>) + Send + 'static,
        mut last: impl FnMut(&mut Connection<C>) -> Result<(), RedisError> + Send + 'static,
    ) -> Result<Self, Error> {
        let (stop, stopped) = mpsc::channel::<()>();
        let connect = Box::new(connect);
        let thread = std::thread::Builder::new()
            .name("librate-lease".to_owned())
            .spawn(move || {
                // Opened on this thread: a connection need not be `Send`.
                let mut connection = Connection {
                    connect,
                    open: None,
                };
                loop {
                    round(&mut connection);
                    match stopped.recv_timeout(every) {
                        Err(RecvTimeoutError::Timeout) => continue,
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
                last(&mut connection).or_else(|_| {
                    connection.failed();
                    last(&mut connection)
                })
            })
            .map_err(Error::Timer)?;
        Ok(Self {
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Stops the thread after its round in progress, and returns its last step's error.
    pub(super) fn stop(&mut self) -> Result<(), RedisError> {
        drop(self.stop.take());
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(last)) => last,
            // The thread panicked (it holds no lock of the holder's that would stay held).
            Some(Err(_)) => Err(RedisError::Reply("the lease renewer stopped".to_owned())),
            None => Ok(()),
        }
    }
}

impl Drop for Renewer {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}
