//! The refusals a request can meet, as the models and the library give them alike: the
//! integration tests' and the fuzz targets' (which take this file by path).

/// What a request's error says, whichever operation's type carries it: the models'
/// answers and the library's compared alike (`librate::Error`, the one type every error
/// converts into, holds an `io::Error` and so is not `Eq`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    InsufficientCapacity,
    Unsupported,
    TableFull,
}

/// The refusal `error` is; panics on an error no request of a model can give.
pub fn refused(error: impl Into<librate::Error>) -> Refused {
    match error.into() {
        librate::Error::InsufficientCapacity => Refused::InsufficientCapacity,
        librate::Error::Unsupported => Refused::Unsupported,
        librate::Error::TableFull => Refused::TableFull,
        other => panic!("not a request's refusal: {other}"),
    }
}
