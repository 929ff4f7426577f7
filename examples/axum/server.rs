//! A per-IP limit in front of an axum app: each client may make 100 requests a minute,
//! and a burst of 10 at once. Run it, then ask it more than 10 times:
//!
//! ```text
//! cargo run -p librate-tower-tests --example axum
//! for i in $(seq 12); do curl -si localhost:3000 | grep -i -e ^http -e ^ratelimit; done
//! ```

use axum::extract::ConnectInfo;
use axum::routing::get;
use axum::Router;
use librate::tower::{PeerIp, RateLimitLayer};
use librate::{Config, KeyedLimiter};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// The app: `GET /` answers "hello", each client IP within `per_ip`'s limit.
pub(crate) fn app(per_ip: Arc<KeyedLimiter>) -> Router {
    // axum gives the peer address as a `ConnectInfo<SocketAddr>` request extension.
    let key = PeerIp::from_extension(|info: &ConnectInfo<SocketAddr>| info.0);
    let limit = RateLimitLayer::builder(per_ip).key(key).build();
    let limit = limit.expect("the default names and costs fit any limiter");
    Router::new()
        .route("/", get(|| async { "hello\n" }))
        .layer(limit)
}

/// 100 requests a minute per client IP, 10 at once, for up to 100,000 clients at once.
pub(crate) fn per_ip() -> Arc<KeyedLimiter> {
    let config = Config::gcra(100, Duration::from_secs(60)).with_burst(10);
    Arc::new(KeyedLimiter::new(&config, 100_000).expect("a valid configuration"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    println!("listening on http://{}", listener.local_addr()?);
    // The connect info is what puts each request's peer address in its extensions.
    let service = app(per_ip()).into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, service).await
}
