//! What a table file holds, in one English sentence: what an opener refused as
//! incompatible tells its user with it (docs/shared.md, what to do about an incompatible
//! file). Read with `read(2)`, never mapped, so a file of any size or contents can be
//! described, and nothing in it is written.

use crate::config::{Algorithm, Config};
use crate::error::FileError;
use crate::policy::MAX_RULES;
use crate::shared::{first_rule, rule_in_force, rule_of, HEADER_WORDS, LAYOUT_VERSION, MAGIC};
use crate::shared::{KIND_KEYED, KIND_KEYED_POLICY, KIND_LEASE, KIND_LIMITER, RECORDS_END};
use crate::shared::{W_ALGORITHM, W_CAPACITY, W_KIND, W_VERSION};
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Words of a keyed policy's rule in its descriptor: scope, algorithm, limit, period, burst.
const POLICY_RULE_WORDS: usize = 5;
/// The most rules a keyed policy file describes.
const POLICY_RULES: usize = MAX_RULES;

/// Describes the table file at `path`: the kind of table and the rule it holds (a
/// limiter's rule in force, changed or not), or why it is no table this librate reads. The
/// sentence starts with the path, as an error message naming the file does:
///
/// ```
/// use librate::{describe_file, Config, Limiter};
/// use std::time::Duration;
/// let path = std::env::temp_dir().join(format!("librate-describe-{}", std::process::id()));
/// let _limiter = Limiter::open(&path, &Config::gcra(10, Duration::from_secs(1))).unwrap();
/// let held = describe_file(&path).unwrap();
/// assert!(held.ends_with(": a librate limiter holding GCRA, limit 10, period_ns 1000000000, burst 10"));
/// assert!(Limiter::open(&path, &Config::gcra(20, Duration::from_secs(1))).is_err());
/// # std::fs::remove_file(&path).unwrap();
/// ```
///
/// # Errors
/// The [`FileError`], naming the path, if the file cannot be opened or read.
pub fn describe_file(path: impl AsRef<Path>) -> Result<String, FileError> {
    let path = path.as_ref();
    let io = |error| FileError::new(path, error);
    let mut bytes = Vec::new();
    let limit = (HEADER_WORDS + POLICY_RULES * POLICY_RULE_WORDS).max(rules_prefix()) * 8;
    let file = File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    (&file)
        .take(limit as u64)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    let words: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|word| u64::from_le_bytes(word.try_into().expect("8 bytes")))
        .collect();
    Ok(format!(
        "{}: {}",
        path.display(),
        holds(&words, size, &file)
    ))
}

/// The words of a limiter file up to its last record.
fn rules_prefix() -> usize {
    HEADER_WORDS + RECORDS_END
}

/// What a file of `size` bytes, whose first words are `words`, holds.
fn holds(words: &[u64], size: u64, file: &File) -> String {
    let Some(header) = words.get(..HEADER_WORDS) else {
        return format!("not a librate table ({size} bytes)");
    };
    let header: &[u64; HEADER_WORDS] = header.try_into().expect("HEADER_WORDS words");
    if header[0] != MAGIC {
        return "not a librate table (it does not start with librate's magic bytes)".into();
    }
    if header[W_VERSION] != LAYOUT_VERSION {
        return format!(
            "a librate table of layout version {}, which this librate (layout version \
             {LAYOUT_VERSION}) does not read: delete it, and the next opener makes it anew",
            header[W_VERSION]
        );
    }
    let capacity = header[W_CAPACITY];
    let first = first_rule(header);
    match header[W_KIND] {
        KIND_LIMITER => match rule_in_force(&words[HEADER_WORDS..], first) {
            Some((config, serial)) => {
                format!("a librate limiter holding {}", held(&config, serial))
            }
            None => "a librate limiter whose rule words hold no rule".into(),
        },
        KIND_KEYED => match rule_in_force(&words[HEADER_WORDS..], first) {
            Some((config, serial)) => format!(
                "a librate keyed table of capacity {capacity} holding {}",
                held(&config, serial)
            ),
            None => "a librate keyed table whose rule words hold no rule".into(),
        },
        KIND_KEYED_POLICY => {
            let count = header[W_ALGORITHM] as usize;
            let descriptor = words.get(HEADER_WORDS..).unwrap_or_default();
            let blocks = rule_blocks(descriptor, capacity);
            let rules: Vec<String> = descriptor
                .chunks_exact(POLICY_RULE_WORDS)
                .take(count.min(POLICY_RULES))
                .enumerate()
                .map(|(index, rule_words)| {
                    let scope = if rule_words[0] == 2 {
                        "global"
                    } else {
                        "per key"
                    };
                    let words = rule_words[1..].try_into().expect("four words");
                    let Some((created, _)) = rule_of(words) else {
                        return "no rule".into();
                    };
                    let block = blocks.as_ref().and_then(|blocks| blocks.get(index));
                    match block.and_then(|&start| rule_in_force_at(file, start, created)) {
                        Some((config, serial)) => format!("{} ({scope})", held(&config, serial)),
                        None => format!("{} ({scope})", rule(&created)),
                    }
                })
                .collect();
            format!(
                "a librate keyed policy of capacity {capacity} holding {} rule{}: {}",
                count,
                if count == 1 { "" } else { "s" },
                rules.join("; ")
            )
        }
        KIND_LEASE => match first {
            Some(config) => format!(
                "a librate lease holder for a host of {}, leased {capacity} us at a time",
                rule(&config)
            ),
            None => "a librate lease holder whose header holds no rule".into(),
        },
        kind => format!("a librate table of an unknown kind ({kind})"),
    }
}

/// Where each rule's block starts among a keyed policy file's state words, from its
/// descriptor's words and its capacity: `None` if they lay out no file.
#[cfg(not(loom))]
fn rule_blocks(descriptor: &[u64], capacity: u64) -> Option<Vec<usize>> {
    crate::policy::rule_blocks(&crate::policy::rules_described(descriptor)?, capacity)
}

#[cfg(loom)]
fn rule_blocks(_: &[u64], _: u64) -> Option<Vec<usize>> {
    None
}

/// The rule in force, and its serial, of the rule block at state word `start` of `file`,
/// which was created with the rule `created`: `None` if the words there say nothing
/// readable.
fn rule_in_force_at(file: &File, start: usize, created: Config) -> Option<(Config, u64)> {
    use std::os::unix::fs::FileExt;
    let mut bytes = vec![0; RECORDS_END * 8];
    file.read_exact_at(&mut bytes, ((HEADER_WORDS + start) * 8) as u64)
        .ok()?;
    let block: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|word| u64::from_le_bytes(word.try_into().expect("8 bytes")))
        .collect();
    rule_in_force(&block, Some(created))
}

/// The rule in force of `serial`, and how many times the file's rule changed.
fn held(config: &Config, serial: u64) -> String {
    match serial {
        0 => rule(config),
        1 => format!(
            "{} (its rule changed 1 time since it was made)",
            rule(config)
        ),
        _ => format!(
            "{} (its rule changed {serial} times since it was made)",
            rule(config)
        ),
    }
}

/// A rule as its configuration's fields: "GCRA, limit 10, period_ns 1000000000, burst 10".
fn rule(config: &Config) -> String {
    let name = match config.algorithm {
        Algorithm::Gcra => "GCRA",
        Algorithm::FixedWindow => "fixed window",
        Algorithm::SlidingWindow => "sliding window",
        Algorithm::SlidingLog => "sliding log",
    };
    // The effective burst (0 means the limit), as the header of a new file holds it: a
    // rule set with burst 0 is described as the same rule made anew would be.
    let burst = match config.algorithm {
        Algorithm::Gcra if config.burst == 0 => format!(", burst {}", config.limit),
        Algorithm::Gcra => format!(", burst {}", config.burst),
        _ => String::new(),
    };
    format!(
        "{name}, limit {}, period_ns {}{burst}",
        config.limit, config.period_ns
    )
}
