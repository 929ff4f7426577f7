//! What the tests share: a request's trip through a layer, in process.

use http::{Request, Response};
use librate::tower::{RateLimitLayer, RequestLimit};
use std::convert::Infallible;
use tower::{service_fn, Layer, ServiceExt};

/// The response `layer` gives `request`, in front of a service that answers 200 with an
/// `x-served` field (so a test sees whether the request reached it).
pub(crate) fn respond<L: RequestLimit>(
    layer: &RateLimitLayer<L>,
    request: Request<()>,
) -> Response<String> {
    let service = service_fn(|_: Request<()>| async {
        let mut response = Response::new(String::new());
        response
            .headers_mut()
            .insert("x-served", "yes".parse().unwrap());
        Ok::<_, Infallible>(response)
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime
        .block_on(layer.layer(service).oneshot(request))
        .unwrap()
}

/// The value of field `name` in `response`, if any.
pub(crate) fn field(response: &Response<String>, name: &str) -> Option<String> {
    let value = response.headers().get(name)?;
    Some(value.to_str().unwrap().to_owned())
}
