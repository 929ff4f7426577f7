//! Making a table's file: a new one beside its path, and room for it on its file system.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use crate::sync::{Ordering, ProcessAtomicU64};

/// Creates a new file of mode 0600 beside `path`, under a name no other opener uses: one
/// left behind by a process killed mid-create, or made by anybody else, is skipped.
pub(super) fn create_beside(path: &Path) -> io::Result<(PathBuf, File)> {
    let mut attempts = 0;
    loop {
        let temporary = temporary_beside(path);
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)
        {
            Ok(file) => return Ok((temporary, file)),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists && attempts < 64 => {
                attempts += 1;
            }
            Err(error) => return Err(error),
        }
    }
}

/// Refuses a file of `bytes` larger than its file system's free space before any of it
/// is written: written word by word, it would fill the file system first (`ENOSPC`).
pub(super) fn check_room(file: &File, bytes: u64) -> io::Result<()> {
    let mut stats = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `file`'s descriptor is open, and `stats` is writable for fstatvfs to fill.
    if unsafe { libc::fstatvfs(file.as_raw_fd(), stats.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fstatvfs returned 0, so it filled `stats`.
    let stats = unsafe { stats.assume_init() };
    // A file system that reports no blocks at all (ramfs, an unlimited tmpfs) has no
    // free-space figure to compare with.
    if stats.f_blocks != 0 && bytes > stats.f_bavail.saturating_mul(stats.f_frsize) {
        return Err(io::Error::from_raw_os_error(libc::ENOSPC));
    }
    Ok(())
}

/// A name beside `path` that no other opener uses: the process id and a counter.
fn temporary_beside(path: &Path) -> PathBuf {
    static NEXT: ProcessAtomicU64 = ProcessAtomicU64::new(0);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(
        ".{}.{}.tmp",
        std::process::id(),
        // Relaxed: a counter for unique names; nothing else is ordered by it.
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    path.with_file_name(name)
}
