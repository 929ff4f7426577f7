//! Real files and real processes for the shared-table tests (docs/shared.md): a scratch
//! directory, forked children, and raw access to a table file's words.

use std::fs;
use std::path::{Path, PathBuf};

/// A directory of its own under the system's temporary directory, removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("librate-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Runs `child` in `count` forked processes at once and returns each one's exit status
/// (what `child` returned, at most 255).
pub fn in_processes(count: usize, child: impl Fn(usize) -> u8) -> Vec<u8> {
    let pids: Vec<libc::pid_t> = (0..count)
        .map(|index| {
            // SAFETY: the child only runs `child` (file and atomic operations, no locks
            // another thread could hold) and leaves with `_exit`, never unwinding into the
            // test harness.
            match unsafe { libc::fork() } {
                0 => {
                    let status =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| child(index)))
                            .unwrap_or(255);
                    // SAFETY: ends the child without running the parent's exit handlers.
                    unsafe { libc::_exit(i32::from(status)) }
                }
                pid => {
                    assert!(pid > 0, "fork failed");
                    pid
                }
            }
        })
        .collect();
    pids.into_iter()
        .map(|pid| {
            let mut status = 0;
            // SAFETY: waits for a child this test forked.
            assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
            assert!(libc::WIFEXITED(status), "child killed: {status}");
            libc::WEXITSTATUS(status) as u8
        })
        .collect()
}

/// Forks a child that runs `child` and then exits 0, and returns its pid at once: for
/// tests that kill it.
pub fn spawn(child: impl FnOnce()) -> libc::pid_t {
    // SAFETY: as in `in_processes`.
    match unsafe { libc::fork() } {
        0 => {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child));
            // SAFETY: ends the child without running the parent's exit handlers.
            unsafe { libc::_exit(0) }
        }
        pid => {
            assert!(pid > 0, "fork failed");
            pid
        }
    }
}

/// Sends SIGKILL to `pid` and reaps it.
pub fn kill_and_reap(pid: libc::pid_t) {
    // SAFETY: signals and reaps a child this test forked.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        let mut status = 0;
        assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
    }
}

/// Overwrites word `index` of the file at `path`.
pub fn rewrite_word(path: &Path, index: usize, value: u64) {
    let mut bytes = fs::read(path).unwrap();
    bytes[index * 8..index * 8 + 8].copy_from_slice(&value.to_le_bytes());
    fs::write(path, bytes).unwrap();
}

/// Reads word `index` of the file at `path`.
pub fn read_word(path: &Path, index: usize) -> u64 {
    let bytes = fs::read(path).unwrap();
    u64::from_le_bytes(bytes[index * 8..index * 8 + 8].try_into().unwrap())
}

/// Runs `threads` threads of `body(thread index)` and sums what they return.
pub fn in_threads(threads: usize, body: impl Fn(usize) -> u64 + Sync) -> u64 {
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let body = &body;
                scope.spawn(move || body(thread))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    })
}
