//! The Lua scripts the Redis tier sends (docs/redis.md), put together from the files of
//! `src/redis/lua/`, each of which stands alone.
//!
//! Every file but the two entries (`keys.lua`, a single limiter's; `policy.lua`, a
//! policy's) holds function definitions only: `function name(...)` at the start of a line,
//! each taking everything it needs as arguments (the key, the request's now and cost, the
//! configuration) and naming nothing outside them but Lua's and Redis's libraries and the
//! other files' functions. No file sets a variable another reads. A script is then:
//!
//! ```lua
//! local <the functions of the files built on every call>
//! local function exact()             -- built only when a decision near now falls back
//!     local <the exact files' functions>
//!     <time.lua, windows.lua, each algorithm's exact file>
//!     return {<each algorithm's exact decision, by name>}
//! end
//! <request.lua, windows_common.lua, each algorithm's *_near.lua>
//! local decide = gcra_near           -- a single limiter's: the decision keys.lua calls
//! <keys.lua or policy.lua>
//! ```
//!
//! The files come in that order only for the reader: each `function name` assigns the
//! local declared at the top of its level, and a function finds another through that
//! local when it is called, so any order of the files in a level works (the exact files
//! also see the functions of the level above, `windows_common.lua`'s). The exact decisions
//! are `exact()`'s because Redis runs a script's body on every call, building each
//! function it defines again (more instructions than a decision's arithmetic): the common
//! call builds only the decisions near now (each algorithm's `*_near.lua`, in plain
//! numbers), which call `exact()` for the rest. `scripts/redis_script_cost.py` counts
//! what that saves (docs/bench/redis-scripts.txt).

use std::sync::OnceLock;

/// A file of functions: its name (for the tests) and its source.
type Piece = (&'static str, &'static str);

macro_rules! piece {
    ($name:literal) => {
        ($name, include_str!(concat!("lua/", $name, ".lua")))
    };
}

const TIME: Piece = piece!("time");
const WINDOWS: Piece = piece!("windows");
const GCRA: Piece = piece!("gcra");
const FIXED_WINDOW: Piece = piece!("fixed_window");
const SLIDING_WINDOW: Piece = piece!("sliding_window");
const SLIDING_LOG: Piece = piece!("sliding_log");
const REQUEST: Piece = piece!("request");
const WINDOWS_COMMON: Piece = piece!("windows_common");
const WINDOWS_NEAR: Piece = piece!("windows_near");
const GCRA_NEAR: Piece = piece!("gcra_near");
const FIXED_WINDOW_NEAR: Piece = piece!("fixed_window_near");
const SLIDING_WINDOW_NEAR: Piece = piece!("sliding_window_near");
const SLIDING_LOG_NEAR: Piece = piece!("sliding_log_near");

/// The exact decisions, which `exact()` returns, by the name each near decision calls.
const EXACT_DECISIONS: [&str; 4] = ["gcra", "fixed_window", "sliding_window", "sliding_log"];

/// The entry bodies: a single limiter's loop over its keys, and a policy's rules.
const KEYS: &str = include_str!("lua/keys.lua");
const POLICY: &str = include_str!("lua/policy.lua");

/// One script's parts: what it decides, the files `exact()` builds, the files built on
/// every call, the function a single limiter's keys are decided with (none for a
/// policy), and the entry.
struct Parts {
    name: &'static str,
    exact: &'static [Piece],
    near: &'static [Piece],
    decide: Option<&'static str>,
    entry: &'static str,
}

/// The script deciding one algorithm, or a policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Gcra,
    FixedWindow,
    SlidingWindow,
    SlidingLog,
    Policy,
}

const KINDS: [Kind; 5] = [
    Kind::Gcra,
    Kind::FixedWindow,
    Kind::SlidingWindow,
    Kind::SlidingLog,
    Kind::Policy,
];

impl Kind {
    fn parts(self) -> Parts {
        let single = |name, exact, near, decide| Parts {
            name,
            exact,
            near,
            decide: Some(decide),
            entry: KEYS,
        };
        match self {
            Kind::Gcra => single("GCRA", &[TIME, GCRA], &[REQUEST, GCRA_NEAR], "gcra_near"),
            Kind::FixedWindow => single(
                "fixed window",
                &[TIME, WINDOWS, FIXED_WINDOW],
                &[REQUEST, WINDOWS_COMMON, WINDOWS_NEAR, FIXED_WINDOW_NEAR],
                "fixed_window_near",
            ),
            Kind::SlidingWindow => single(
                "sliding window",
                &[TIME, WINDOWS, SLIDING_WINDOW],
                &[REQUEST, WINDOWS_COMMON, WINDOWS_NEAR, SLIDING_WINDOW_NEAR],
                "sliding_window_near",
            ),
            Kind::SlidingLog => single(
                "sliding log",
                &[TIME, SLIDING_LOG],
                &[REQUEST, SLIDING_LOG_NEAR],
                "sliding_log_near",
            ),
            Kind::Policy => Parts {
                name: "policy",
                exact: &[
                    TIME,
                    WINDOWS,
                    GCRA,
                    FIXED_WINDOW,
                    SLIDING_WINDOW,
                    SLIDING_LOG,
                ],
                near: &[
                    REQUEST,
                    WINDOWS_COMMON,
                    WINDOWS_NEAR,
                    GCRA_NEAR,
                    FIXED_WINDOW_NEAR,
                    SLIDING_WINDOW_NEAR,
                    SLIDING_LOG_NEAR,
                ],
                decide: None,
                entry: POLICY,
            },
        }
    }

    /// The script's source, NUL-terminated (for C).
    pub(crate) fn source_with_nul(self) -> &'static str {
        static SOURCES: OnceLock<Vec<String>> = OnceLock::new();
        let sources =
            SOURCES.get_or_init(|| KINDS.iter().map(|kind| assemble(&kind.parts())).collect());
        &sources[self as usize]
    }
}

/// The names of the functions `pieces` define.
fn functions(pieces: &[Piece]) -> Vec<&'static str> {
    pieces
        .iter()
        .flat_map(|(_, source)| source.lines())
        .filter_map(|line| line.strip_prefix("function "))
        .filter_map(|rest| rest.split('(').next())
        .collect()
}

/// The script of `parts`, as the module's comment lays it out, NUL-terminated.
fn assemble(parts: &Parts) -> String {
    let mut script = format!(
        "-- librate's Redis scripts: the {} script, put together by src/redis/scripts.rs \
         from the files of src/redis/lua/.\n",
        parts.name
    );
    let near = functions(parts.near);
    let exact = functions(parts.exact);
    script.push_str(&format!("local {}\n", near.join(", ")));
    script.push_str("local function exact()\n");
    script.push_str(&format!("local {}\n", exact.join(", ")));
    for (_, source) in parts.exact {
        script.push_str(source);
    }
    let decisions: Vec<String> = EXACT_DECISIONS
        .iter()
        .filter(|name| exact.contains(name))
        .map(|name| format!("{name} = {name}"))
        .collect();
    script.push_str(&format!("return {{{}}}\nend\n", decisions.join(", ")));
    for (_, source) in parts.near {
        script.push_str(source);
    }
    if let Some(decide) = parts.decide {
        script.push_str(&format!("local decide = {decide}\n"));
    }
    script.push_str(parts.entry);
    script.push('\0');
    script
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every piece of every script.
    fn pieces() -> Vec<Piece> {
        let mut all: Vec<Piece> = Vec::new();
        for kind in KINDS {
            let parts = kind.parts();
            for piece in parts.exact.iter().chain(parts.near) {
                if !all.contains(piece) {
                    all.push(*piece);
                }
            }
        }
        all
    }

    /// A piece is function definitions alone: outside them (lines not indented) only
    /// comments, blank lines, `function name(...)` and `end`, so it sets nothing that
    /// another piece reads, and its place in a script does not matter.
    #[test]
    fn pieces_only_define_functions() {
        for (name, source) in pieces() {
            for line in source.lines() {
                let top = line.is_empty()
                    || line.starts_with(' ')
                    || line.starts_with("--")
                    || line == "end"
                    || line.starts_with("function ");
                assert!(top, "{name}.lua: {line}");
            }
        }
    }

    /// No function is defined twice in one script (a second would replace the first).
    #[test]
    fn each_function_once_a_script() {
        for kind in KINDS {
            let parts = kind.parts();
            let mut names = functions(parts.near);
            names.extend(functions(parts.exact));
            let count = names.len();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), count, "{kind:?}");
        }
    }

    #[test]
    fn a_script_declares_its_functions_first() {
        let gcra = Kind::Gcra.source_with_nul();
        let (header, rest) = gcra.split_once('\n').unwrap();
        assert_eq!(
            header,
            "-- librate's Redis scripts: the GCRA script, put together by \
             src/redis/scripts.rs from the files of src/redis/lua/."
        );
        let declared = "local request, gcra_near\nlocal function exact()\nlocal instant, less,";
        assert!(rest.starts_with(declared));
        assert!(gcra.contains("return {gcra = gcra}\nend\n"));
        assert!(gcra.contains("local decide = gcra_near\n"));
        assert!(gcra.ends_with("return decisions\n\0"));
        let policy = Kind::Policy.source_with_nul();
        assert!(policy.contains(
            "return {gcra = gcra, fixed_window = fixed_window, \
             sliding_window = sliding_window, sliding_log = sliding_log}\nend\n"
        ));
        assert!(!policy.contains("local decide ="));
    }
}
