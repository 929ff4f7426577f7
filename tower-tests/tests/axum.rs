//! The axum example (examples/axum/server.rs) served on 127.0.0.1, asked over plain TCP:
//! admitted requests carry the RateLimit fields, the one over the limit gets a 429.

#[allow(dead_code)] // its `main` and `per_ip` are the example's own
#[path = "../../examples/axum/server.rs"]
mod example;

use axum::body::Body;
use axum::extract::ConnectInfo;
use http::{Request, StatusCode};
use librate::{Config, KeyedLimiter};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;
use tower::ServiceExt;

const SECOND: u64 = 1_000_000_000;

/// 3 a minute per IP (GCRA: one every 20 s, a burst of 3).
fn three_a_minute() -> Arc<KeyedLimiter> {
    Arc::new(KeyedLimiter::new(&Config::gcra(3, Duration::from_nanos(60 * SECOND)), 1_000).unwrap())
}

/// Serves the example's app on 127.0.0.1, on a port of the system's choosing, from a
/// thread of its own for the rest of the test process.
fn serve(per_ip: Arc<KeyedLimiter>) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let service = example::app(per_ip).into_make_service_with_connect_info::<SocketAddr>();
            axum::serve(listener, service).await.unwrap();
        });
    });
    address
}

/// One `GET /` over a connection of its own: the status line and header lines as sent,
/// and the body.
fn get(address: SocketAddr) -> (Vec<String>, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    (
        head.split("\r\n").map(str::to_owned).collect(),
        body.to_owned(),
    )
}

/// The value of field `name` in a response head, if it has exactly one.
fn field<'a>(head: &'a [String], name: &str) -> Option<&'a str> {
    let mut values = head[1..].iter().filter_map(|line| {
        let (field, value) = line.split_once(": ")?;
        field.eq_ignore_ascii_case(name).then_some(value)
    });
    let value = values.next();
    assert!(values.next().is_none(), "{name} twice in {head:?}");
    value
}

#[test]
fn three_admitted_then_a_429_with_the_fields() {
    let address = serve(three_a_minute());
    const POLICY: &str = "\"default\";q=3;w=60";
    // Each request takes 20 s of the minute: the quota is whole again 20, 40, 60 s later
    // (less the few milliseconds between requests, which round up).
    for (remaining, reset) in [(2, 20), (1, 40), (0, 60)] {
        let (head, body) = get(address);
        assert_eq!(head[0], "HTTP/1.1 200 OK");
        assert_eq!(body, "hello\n");
        assert_eq!(field(&head, "RateLimit-Policy"), Some(POLICY));
        let ratelimit = format!("\"default\";r={remaining};t={reset}");
        assert_eq!(field(&head, "RateLimit"), Some(ratelimit.as_str()));
        assert_eq!(field(&head, "Retry-After"), None);
    }
    // The burst of 3 spent, the next unit comes 20 s after the first (less the
    // milliseconds since, rounded up): Retry-After and t both say 20.
    let (head, body) = get(address);
    assert_eq!(head[0], "HTTP/1.1 429 Too Many Requests");
    assert_eq!(body, "429 Too Many Requests\n");
    assert_eq!(field(&head, "Retry-After"), Some("20"));
    assert_eq!(field(&head, "RateLimit-Policy"), Some(POLICY));
    assert_eq!(field(&head, "RateLimit"), Some("\"default\";r=0;t=20"));
    assert_eq!(
        field(&head, "Content-Type"),
        Some("text/plain; charset=utf-8")
    );
}

/// The app's response to `GET /` from `peer` (none: served without connect info), in
/// process.
async fn status_from(app: &axum::Router, peer: Option<&str>) -> StatusCode {
    let mut request = Request::get("/").body(Body::empty()).unwrap();
    if let Some(peer) = peer {
        let peer = peer.parse::<SocketAddr>().unwrap();
        request.extensions_mut().insert(ConnectInfo(peer));
    }
    app.clone().oneshot(request).await.unwrap().status()
}

#[tokio::test(flavor = "current_thread")]
async fn each_ip_has_its_own_limit_whatever_its_port() {
    let app = example::app(three_a_minute());
    for port in 1..=3 {
        let peer = format!("192.0.2.1:{port}");
        assert_eq!(status_from(&app, Some(&peer)).await, StatusCode::OK);
    }
    let denied = status_from(&app, Some("192.0.2.1:4")).await;
    assert_eq!(denied, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        status_from(&app, Some("[2001:db8::1]:1")).await,
        StatusCode::OK
    );
    assert_eq!(status_from(&app, Some("192.0.2.2:1")).await, StatusCode::OK);
}

#[tokio::test(flavor = "current_thread")]
async fn without_connect_info_every_request_shares_one_limit() {
    // Served without `into_make_service_with_connect_info`: no peer address to read, so
    // the empty key, one limit for all such requests (never none, never a panic).
    let app = example::app(three_a_minute());
    for _ in 0..3 {
        assert_eq!(status_from(&app, None).await, StatusCode::OK);
    }
    assert_eq!(status_from(&app, None).await, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(status_from(&app, Some("192.0.2.1:1")).await, StatusCode::OK);
}
