//! Which key a request counts against: its client's IP address (the connection's peer,
//! or the client a number of trusted proxies name in `X-Forwarded-For`), a header, or a
//! function of the request (docs/tower.md, Keys).

use http::header::HeaderName;
use http::request::Parts;
use http::{Extensions, HeaderMap};
use std::fmt;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// The longest text of an IP address: an IPv6 address with an embedded IPv4 one,
/// `ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255`, 45 bytes.
const IP_TEXT_MAX: usize = 45;

/// The de facto field each proxy appends the address it received a request from to (the
/// `http` crate names no constant for it).
const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// Reads a connection's peer address from a request's extensions.
type PeerLookup = Arc<dyn Fn(&Extensions) -> Option<SocketAddr> + Send + Sync>;

/// A key of the request's own choosing, or `None` to let it through.
type KeyFn = Arc<dyn Fn(&Parts) -> Option<Vec<u8>> + Send + Sync>;

/// The client's IP address as a key, in text (`192.0.2.1`, `2001:db8::1`), as the Python
/// and Go middleware key requests, so a table shared through a file counts a client
/// alike in every language. An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, from a
/// dual-stack listener) is keyed as the IPv4 address it maps.
///
/// By default the address is the connection's peer, read from a [`SocketAddr`] request
/// extension; [`from_extension`](Self::from_extension) reads another type, such as
/// axum's `ConnectInfo<SocketAddr>`. No header is trusted unless
/// [`trusting_proxies`](Self::trusting_proxies) says how many proxies stand in front.
///
/// A request whose address cannot be found (no such extension) is keyed by the empty
/// key: every such request shares one limit, as in Python and Go; it is never let
/// through unlimited.
#[derive(Clone)]
pub struct PeerIp {
    peer: PeerLookup,
    trusted_hops: usize,
}

impl PeerIp {
    /// The peer address of a [`SocketAddr`] request extension.
    pub fn new() -> Self {
        Self::from_extension(|peer: &SocketAddr| *peer)
    }

    /// The peer address `peer` reads from a request extension of type `T`. For axum,
    /// whose `into_make_service_with_connect_info::<SocketAddr>()` inserts one:
    /// `PeerIp::from_extension(|info: &ConnectInfo<SocketAddr>| info.0)`.
    pub fn from_extension<T, F>(peer: F) -> Self
    where
        T: Send + Sync + 'static,
        F: Fn(&T) -> SocketAddr + Send + Sync + 'static,
    {
        Self {
            peer: Arc::new(move |extensions: &Extensions| extensions.get::<T>().map(&peer)),
            trusted_hops: 0,
        }
    }

    /// Behind `hops` proxies the operator runs, each appending the address it received
    /// the request from to `X-Forwarded-For`: the client is the entry `hops` from the
    /// right (1: the last entry). Entries left of it were written by the client and are
    /// never read. If the header (all its lines, in order, empty members ignored) has
    /// fewer entries, or the entry is not an IP address (`ip` or `ip:port`, IPv6 in
    /// brackets with a port; bytes outside ASCII are none), the key is the peer
    /// address: a request that did not come through every proxy counts against the
    /// address it came from. 0 (the default) trusts no header.
    pub fn trusting_proxies(mut self, hops: usize) -> Self {
        self.trusted_hops = hops;
        self
    }

    /// The client's address, if any.
    fn client(&self, parts: &Parts) -> Option<IpAddr> {
        forwarded_client(&parts.headers, self.trusted_hops)
            .or_else(|| (self.peer)(&parts.extensions).map(|peer| peer.ip()))
            .map(|ip| ip.to_canonical())
    }
}

impl Default for PeerIp {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for PeerIp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PeerIp")
            .field("trusted_hops", &self.trusted_hops)
            .finish_non_exhaustive()
    }
}

/// The entry `hops` from the right of `X-Forwarded-For`, if it is there and an address.
/// Lines are read from the last, as bytes, and only as far as that entry: what lies left
/// of it (in the same line too) is the client's to write, and is never looked at.
fn forwarded_client(headers: &HeaderMap, hops: usize) -> Option<IpAddr> {
    let lines = headers.get_all(X_FORWARDED_FOR).into_iter().rev();
    let entry = lines
        .flat_map(|line| line.as_bytes().rsplit(|&byte| byte == b','))
        .map(trim_whitespace)
        .filter(|entry| !entry.is_empty())
        .nth(hops.checked_sub(1)?)?;
    let entry = std::str::from_utf8(entry).ok()?;
    entry
        .parse::<IpAddr>()
        .or_else(|_| entry.parse::<SocketAddr>().map(|address| address.ip()))
        .ok()
}

/// `entry` without the spaces and tabs around it (RFC 9110 §5.6.3's OWS; `trim_ascii`
/// is newer than the crate's Rust 1.77).
fn trim_whitespace(mut entry: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = entry {
        entry = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = entry {
        entry = rest;
    }
    entry
}

/// How a [`RateLimitLayer`](super::RateLimitLayer) keys requests: by default the
/// client's IP address ([`PeerIp`]).
#[derive(Clone, Debug)]
pub struct Key(Kind);

#[derive(Clone)]
enum Kind {
    Peer(PeerIp),
    Header(HeaderName),
    Custom(KeyFn),
}

impl fmt::Debug for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Peer(peer) => peer.fmt(f),
            Self::Header(name) => f.debug_tuple("Header").field(name).finish(),
            Self::Custom(_) => f.write_str("Custom"),
        }
    }
}

impl Key {
    /// The value of header `name` (its first line), as bytes: keys need not be text. A
    /// request without the header is keyed by the empty key, one limit for every such
    /// request. Read a header only if your proxy sets it and strips it from what clients
    /// send: a client can write any value.
    pub fn header(name: HeaderName) -> Self {
        Self(Kind::Header(name))
    }

    /// The key `key` gives for a request's head (method, URI, headers, extensions). `None`
    /// lets the request through unlimited and without the RateLimit fields (as a Python
    /// `key` returning `None` does): return it only for requests you mean to exempt.
    pub fn from_fn<F>(key: F) -> Self
    where
        F: Fn(&Parts) -> Option<Vec<u8>> + Send + Sync + 'static,
    {
        Self(Kind::Custom(Arc::new(key)))
    }

    /// Calls `decide` with the key of the request whose head is `parts`, or `None`.
    pub(super) fn with<R>(&self, parts: &Parts, decide: impl FnOnce(Option<&[u8]>) -> R) -> R {
        match &self.0 {
            Kind::Peer(peer) => match peer.client(parts) {
                Some(ip) => {
                    let mut text = [0; IP_TEXT_MAX];
                    let mut cursor = &mut text[..];
                    // An address's text fits IP_TEXT_MAX bytes: the write cannot fail,
                    // and a failure would key the request by the empty key, not panic.
                    let written = match write!(cursor, "{ip}") {
                        Ok(()) => IP_TEXT_MAX - cursor.len(),
                        Err(_) => 0,
                    };
                    decide(Some(&text[..written]))
                }
                None => decide(Some(b"")),
            },
            Kind::Header(name) => decide(Some(
                parts
                    .headers
                    .get(name)
                    .map_or(&b""[..], |value| value.as_bytes()),
            )),
            Kind::Custom(key) => decide(key(parts).as_deref()),
        }
    }
}

impl Default for Key {
    fn default() -> Self {
        Self(Kind::Peer(PeerIp::new()))
    }
}

impl From<PeerIp> for Key {
    fn from(peer: PeerIp) -> Self {
        Self(Kind::Peer(peer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Request;

    /// The key `key` gives a request from `peer` (none: no extension) with these
    /// `X-Forwarded-For` lines, as text.
    fn key_of(key: &Key, peer: Option<&str>, forwarded: &[&[u8]]) -> Option<String> {
        let mut request = Request::new(());
        if let Some(peer) = peer {
            request
                .extensions_mut()
                .insert(peer.parse::<SocketAddr>().unwrap());
        }
        for line in forwarded {
            let value = http::HeaderValue::from_bytes(line).unwrap();
            request.headers_mut().append(X_FORWARDED_FOR, value);
        }
        let (parts, ()) = request.into_parts();
        key.with(&parts, |key| {
            key.map(|key| String::from_utf8(key.to_vec()).unwrap())
        })
    }

    fn behind(hops: usize) -> Key {
        PeerIp::new().trusting_proxies(hops).into()
    }

    #[test]
    fn the_peer_address_without_port_or_brackets() {
        let key = Key::default();
        assert_eq!(
            key_of(&key, Some("192.0.2.1:1234"), &[]).unwrap(),
            "192.0.2.1"
        );
        assert_eq!(
            key_of(&key, Some("[2001:db8::1]:80"), &[]).unwrap(),
            "2001:db8::1"
        );
        assert_eq!(
            key_of(&key, Some("[::ffff:192.0.2.1]:80"), &[]).unwrap(),
            "192.0.2.1"
        );
        // No proxy trusted: the header is the client's to write, and ignored.
        assert_eq!(
            key_of(&key, Some("192.0.2.1:1"), &[b"203.0.113.9"]).unwrap(),
            "192.0.2.1"
        );
    }

    #[test]
    fn no_peer_address_is_the_empty_key() {
        assert_eq!(key_of(&Key::default(), None, &[]).unwrap(), "");
        assert_eq!(key_of(&behind(1), None, &[b"not an address"]).unwrap(), "");
    }

    #[test]
    fn trusted_hops_count_from_the_right() {
        // The client forged the first entry; proxy 1 appended 198.51.100.7, proxy 2
        // 10.0.0.1, and proxy 2's address is the peer.
        let lines: &[&[u8]] = &[b"203.0.113.9, 198.51.100.7", b"10.0.0.1"];
        let peer = Some("10.0.0.2:443");
        assert_eq!(key_of(&behind(1), peer, lines).unwrap(), "10.0.0.1");
        assert_eq!(key_of(&behind(2), peer, lines).unwrap(), "198.51.100.7");
        // Trusting 3 proxies where 2 run takes the client's own claim: trust no more
        // than run. With too few entries, the key is the peer's address.
        assert_eq!(key_of(&behind(3), peer, lines).unwrap(), "203.0.113.9");
        assert_eq!(key_of(&behind(4), peer, lines).unwrap(), "10.0.0.2");
    }

    #[test]
    fn a_malformed_forwarded_entry_is_the_peer_address() {
        let peer = Some("10.0.0.2:443");
        assert_eq!(key_of(&behind(1), peer, &[b"unknown"]).unwrap(), "10.0.0.2");
        assert_eq!(
            key_of(&behind(1), peer, &[b"1.2.3.4.5"]).unwrap(),
            "10.0.0.2"
        );
        assert_eq!(
            key_of(&behind(1), peer, &[b"\xff\xfe"]).unwrap(),
            "10.0.0.2"
        );
        // Only the entries up to the client's are read: what the client wrote is not.
        let lines: &[&[u8]] = &[b"\xff\xfe", b"192.0.2.1"];
        assert_eq!(key_of(&behind(1), peer, lines).unwrap(), "192.0.2.1");
        assert_eq!(
            key_of(&behind(1), peer, &[b"\xff, 192.0.2.1"]).unwrap(),
            "192.0.2.1"
        );
        // Empty members are no entries; ports and brackets are allowed.
        assert_eq!(
            key_of(&behind(1), peer, &[b"192.0.2.1:80, ,"]).unwrap(),
            "192.0.2.1"
        );
        assert_eq!(
            key_of(&behind(1), peer, &[b" [2001:db8::1]:80"]).unwrap(),
            "2001:db8::1"
        );
    }

    #[test]
    fn a_header_key_is_its_bytes_or_empty() {
        let key = Key::header(HeaderName::from_static("x-api-key"));
        let mut request = Request::new(());
        let value = http::HeaderValue::from_bytes(b"k\xffey").unwrap();
        request.headers_mut().insert("x-api-key", value);
        let (parts, ()) = request.into_parts();
        assert_eq!(
            key.with(&parts, |key| key.map(<[u8]>::to_vec)).unwrap(),
            b"k\xffey"
        );
        let (parts, ()) = Request::new(()).into_parts();
        assert_eq!(
            key.with(&parts, |key| key.map(<[u8]>::to_vec)).unwrap(),
            b""
        );
    }

    #[test]
    fn a_custom_key_may_exempt_a_request() {
        let key = Key::from_fn(|parts| (parts.uri.path() != "/health").then(|| b"all".to_vec()));
        let (parts, ()) = Request::get("/health").body(()).unwrap().into_parts();
        assert_eq!(key.with(&parts, |key| key.map(<[u8]>::to_vec)), None);
        let (parts, ()) = Request::get("/api").body(()).unwrap().into_parts();
        assert_eq!(
            key.with(&parts, |key| key.map(<[u8]>::to_vec)).unwrap(),
            b"all"
        );
    }
}
