//! Each operation's error (docs/rust.md, Errors): what it says, what it carries, how it
//! converts into `librate::Error`, and the sizes the hot paths' results are held to.

mod common;

use common::processes::Scratch;
use librate::{
    AcquireError, ChangeError, Config, ConfigError, CostsError, Decision, Error, Instant,
    InsufficientCapacity, KeyedAcquireError, KeyedLimiter, Limiter, OpenError, Policy,
    ReserveError, ResetError, SharedError, WaitError,
};
use std::error::Error as _;
use std::io;
use std::mem::size_of;
use std::time::Duration;

/// The acquires' errors are one byte or none, so their results come back in registers:
/// an outcome and its error in two bytes, a decision with no more room than its own.
#[test]
fn the_hot_paths_results_stay_small() {
    assert_eq!(size_of::<InsufficientCapacity>(), 0);
    assert_eq!(size_of::<AcquireError>(), 1);
    assert_eq!(size_of::<KeyedAcquireError>(), 1);
    assert_eq!(size_of::<ReserveError<AcquireError>>(), 1);
    assert_eq!(size_of::<ReserveError<KeyedAcquireError>>(), 1);
    assert_eq!(size_of::<ResetError>(), 1);
    assert_eq!(size_of::<Result<bool, InsufficientCapacity>>(), 1);
    assert_eq!(size_of::<Result<bool, AcquireError>>(), 2);
    assert_eq!(size_of::<Result<bool, KeyedAcquireError>>(), 2);
    // A decision is a bool and five u64s, 48 bytes; its error fits beside the bool.
    assert_eq!(size_of::<Decision>(), 48);
    assert_eq!(size_of::<Result<Decision, AcquireError>>(), 48);
    assert_eq!(size_of::<Result<Decision, KeyedAcquireError>>(), 48);
    assert_eq!(
        size_of::<Result<Decision, ReserveError<AcquireError>>>(),
        48
    );
}

/// Each request's error says what went wrong, in the sentence every error of that kind
/// writes.
#[test]
fn a_request_s_error_says_what_went_wrong() {
    let limiter = Limiter::new(&Config::per_second(2)).unwrap();
    let over = limiter.acquire_at(3, Instant::ZERO).unwrap_err();
    assert_eq!(over, AcquireError::InsufficientCapacity);
    assert_eq!(over.to_string(), "cost exceeds the limiter's capacity");
    let policy = Policy::new(&[Config::per_second(2)]).unwrap();
    assert_eq!(policy.try_acquire(3), Err(InsufficientCapacity));
    assert_eq!(
        InsufficientCapacity.to_string(),
        "cost exceeds the limiter's capacity"
    );

    let window = Limiter::new(&Config::fixed_window(2, Duration::from_secs(1))).unwrap();
    let queue = window.reserve_at(1, Instant::ZERO, Duration::from_secs(1));
    assert_eq!(queue, Err(ReserveError::Unsupported));
    assert_eq!(
        queue.unwrap_err().to_string(),
        "operation not supported by this limiter (a reserve needs GCRA)"
    );
    let too_many = limiter.reserve_at(3, Instant::ZERO, Duration::from_secs(1));
    assert_eq!(
        too_many,
        Err(ReserveError::Acquire(AcquireError::InsufficientCapacity))
    );
    assert_eq!(
        too_many.unwrap_err().to_string(),
        "cost exceeds the limiter's capacity"
    );

    let table = KeyedLimiter::new(&Config::per_second(1), 1).unwrap();
    for key in [&b"a"[..], b"b"] {
        assert!(table.acquire_at(key, 1, Instant::ZERO).unwrap().allowed);
    }
    let full = table.acquire_at(b"c", 1, Instant::ZERO).unwrap_err();
    assert_eq!(full, KeyedAcquireError::TableFull);
    assert_eq!(full.to_string(), "keyed table is full of live keys");
    assert_eq!(
        ResetError::TableFull.to_string(),
        "keyed table is full of live keys"
    );

    let costs = policy.acquire_costs_at(&[1, 1], Instant::ZERO).unwrap_err();
    assert_eq!(costs, CostsError::CostCount { costs: 2 });
    assert_eq!(
        costs.to_string(),
        "2 costs: a policy request gives one cost per rule"
    );
}

/// The errors a shared file gives at run time, each with its sentence and the errno the
/// C ABI sets for it.
#[test]
fn a_shared_file_s_trouble_says_what_stands_in_the_way() {
    let sentences = [
        (
            SharedError::Busy,
            "shared file: another process's change of rule, or a decision of a stopped \
             process, held this operation up",
            Some(libc::EBUSY),
        ),
        (
            SharedError::RegistryFull,
            "shared file: every entry of its registry belongs to a live process",
            Some(libc::EUSERS),
        ),
        (
            SharedError::Incompatible,
            "shared file: its rule in force is no rule of this table (bytes another writer \
             put there)",
            None,
        ),
    ];
    for (error, sentence, errno) in sentences {
        assert_eq!(error.to_string(), sentence);
        assert_eq!(error.raw_os_error(), errno);
        assert_eq!(AcquireError::Shared(error).to_string(), sentence);
    }
}

/// A file the operating system refuses is an I/O error that names its path, with the
/// OS's kind and number, and the `io::Error` as its source.
#[test]
fn a_file_the_os_refuses_names_its_path() {
    let scratch = Scratch::new("errors-os");
    let path = scratch.path("no-such-dir").join("limits");
    let error = Limiter::open(&path, &Config::per_second(10)).unwrap_err();
    let OpenError::Io(file) = &error else {
        panic!("{error:?}");
    };
    assert_eq!(file.path(), path);
    assert_eq!(file.kind(), io::ErrorKind::NotFound);
    assert_eq!(file.raw_os_error(), Some(libc::ENOENT));
    let sentence = format!(
        "shared file {}: No such file or directory (os error 2)",
        path.display()
    );
    assert_eq!(error.to_string(), sentence);
    let source = error.source().unwrap().downcast_ref::<io::Error>().unwrap();
    assert_eq!(source.raw_os_error(), Some(libc::ENOENT));
    // Into an `io::Error` for an `io::Result`: the kind kept, the path in the message.
    let OpenError::Io(file) = error else {
        unreachable!()
    };
    let as_io = io::Error::from(file);
    assert_eq!(as_io.kind(), io::ErrorKind::NotFound);
    assert_eq!(as_io.to_string(), sentence);
}

/// A file that holds another kind of table is refused, naming its path, and left as it
/// was.
#[test]
fn a_file_of_another_table_is_incompatible_and_named() {
    let scratch = Scratch::new("errors-incompatible");
    let path = scratch.path("limits");
    drop(Limiter::open(&path, &Config::per_second(10)).unwrap());
    let before = std::fs::read(&path).unwrap();
    let error = KeyedLimiter::open(&path, &Config::per_second(10), 100).unwrap_err();
    assert!(
        matches!(&error, OpenError::Incompatible { path: named } if *named == path),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "shared file {} is not a librate table of this kind, rule and size (describe_file \
             says what it holds; an opener may replace its rules)",
            path.display()
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // An invalid configuration is the configuration's error, before any file is touched.
    let missing = scratch.path("missing");
    let invalid = Limiter::open(&missing, &Config::per_second(0)).unwrap_err();
    assert!(matches!(invalid, OpenError::Config(ConfigError::ZeroLimit)));
    assert_eq!(
        invalid.to_string(),
        "invalid configuration: limit 0: must be at least 1"
    );
    assert!(!missing.exists());
}

/// A change refused keeps the rule in force, and says why.
#[test]
fn a_refused_change_says_why() {
    let limiter = Limiter::new(&Config::per_second(10)).unwrap();
    let error = limiter
        .set_config_at(
            &Config::fixed_window(10, Duration::from_secs(1)),
            Instant::ZERO,
        )
        .unwrap_err();
    assert_eq!(error, ChangeError::Config(ConfigError::LiveChange));
    assert_eq!(
        error.to_string(),
        "invalid configuration: a live change keeps the algorithm (and the number of rules), \
         and a sliding log's rule does not change"
    );
    assert_eq!(
        error.source().unwrap().to_string(),
        ConfigError::LiveChange.to_string()
    );
    assert_eq!(limiter.config(), &Config::per_second(10));
}

/// A wait that cannot sleep says so, with the OS's error as its source.
#[test]
fn a_wait_without_a_timer_says_so() {
    let error = WaitError::<AcquireError>::Timer(io::Error::from_raw_os_error(libc::EAGAIN));
    assert_eq!(
        error.to_string(),
        "a thread of librate's (its timer, a lease's renewer) could not be started"
    );
    let source = error.source().unwrap().downcast_ref::<io::Error>().unwrap();
    assert_eq!(source.raw_os_error(), Some(libc::EAGAIN));
}

/// `?` lifts every operation's error into `librate::Error` (and `Box<dyn Error>`), each
/// failure to the variant that names it.
#[test]
fn every_error_lifts_into_the_umbrella() {
    fn opened(path: &std::path::Path) -> Result<Decision, Error> {
        let limiter = Limiter::open(path, &Config::per_second(1))?;
        limiter.acquire_at(1, Instant::ZERO)?;
        Ok(limiter.reserve_at(2, Instant::ZERO, Duration::ZERO)?)
    }
    let scratch = Scratch::new("errors-umbrella");
    let path = scratch.path("limits");
    assert!(matches!(opened(&path), Err(Error::InsufficientCapacity)));
    let nowhere = scratch.path("none").join("limits");
    match opened(&nowhere) {
        Err(Error::Io(file)) => assert_eq!(file.path(), nowhere),
        other => panic!("{other:?}"),
    }
    let boxed: Box<dyn std::error::Error> = Error::from(ConfigError::ZeroLimit).into();
    assert_eq!(
        boxed.to_string(),
        "invalid configuration: limit 0: must be at least 1"
    );
    assert_eq!(
        boxed.source().unwrap().to_string(),
        "limit 0: must be at least 1"
    );
    let cases: [(Error, &str); 6] = [
        (
            KeyedAcquireError::TableFull.into(),
            "keyed table is full of live keys",
        ),
        (
            ReserveError::<KeyedAcquireError>::Unsupported.into(),
            "operation not supported by this limiter (a reserve needs GCRA)",
        ),
        (
            CostsError::<InsufficientCapacity>::CostCount { costs: 3 }.into(),
            "invalid configuration: 3 costs: a policy request gives one cost per rule",
        ),
        (
            ResetError::Shared(SharedError::RegistryFull).into(),
            "shared file: every entry of its registry belongs to a live process",
        ),
        (
            ChangeError::Shared(SharedError::Busy).into(),
            "shared file: another process's change of rule, or a decision of a stopped \
             process, held this operation up",
        ),
        (
            OpenError::Incompatible {
                path: "/run/limits".into(),
            }
            .into(),
            "shared file /run/limits is not a librate table of this kind, rule and size \
             (describe_file says what it holds; an opener may replace its rules)",
        ),
    ];
    for (error, sentence) in cases {
        assert_eq!(error.to_string(), sentence, "{error:?}");
    }
    assert!(matches!(
        Error::from(CostsError::<KeyedAcquireError>::CostCount { costs: 3 }),
        Error::InvalidConfig(ConfigError::PolicyCosts { costs: 3 })
    ));
}
