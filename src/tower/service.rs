//! The service a [`RateLimitLayer`](super::RateLimitLayer) wraps around another.

use super::gate::{Answer, Fields, Gate, Verdict};
use super::limit::RequestLimit;
use http::{Request, Response};
use pin_project_lite::pin_project;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower_service::Service;

/// `inner` behind a rate limit: made by a [`RateLimitLayer`](super::RateLimitLayer),
/// whose documentation says what it answers. Cloning it is cheap and shares the limit.
pub struct RateLimit<S, L> {
    inner: S,
    gate: Arc<Gate<L>>,
}

impl<S, L> RateLimit<S, L> {
    pub(super) fn new(inner: S, gate: Arc<Gate<L>>) -> Self {
        Self { inner, gate }
    }
}

impl<S: Clone, L> Clone for RateLimit<S, L> {
    fn clone(&self) -> Self {
        Self::new(self.inner.clone(), Arc::clone(&self.gate))
    }
}

impl<S: fmt::Debug, L> fmt::Debug for RateLimit<S, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimit")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl<S, L, ReqBody, ResBody> Service<Request<ReqBody>> for RateLimit<S, L>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    L: RequestLimit,
    ResBody: From<&'static str>,
{
    type Response = Response<ResBody>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future, ResBody>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        // The key reads the head alone; taking it apart and back moves, never copies.
        let (parts, body) = request.into_parts();
        let verdict = self.gate.check(&parts);
        let request = Request::from_parts(parts, body);
        let fields = match verdict {
            Verdict::Pass => None,
            Verdict::Admitted(fields) => Some(fields),
            Verdict::Answered(answer) => {
                return ResponseFuture::answered(answered(answer));
            }
        };
        ResponseFuture::served(self.inner.call(request), fields)
    }
}

/// The response the layer gives in the service's place.
fn answered<B: From<&'static str>>(answer: Answer) -> Response<B> {
    let mut response = Response::new(B::from(answer.body()));
    *response.status_mut() = answer.status;
    let headers = response.headers_mut();
    let (name, value) = Answer::CONTENT_TYPE;
    headers.insert(name, value);
    for (name, value) in answer.fields {
        headers.insert(name, value);
    }
    response
}

pin_project! {
    /// The response future of [`RateLimit`]: the inner service's, whose response gains
    /// the RateLimit fields, or the layer's own answer (429, 503).
    pub struct ResponseFuture<F, B> {
        #[pin]
        state: State<F, B>,
    }
}

pin_project! {
    #[project = Projected]
    enum State<F, B> {
        // The inner service serves the request.
        Served {
            #[pin]
            future: F,
            fields: Option<Fields>,
        },
        // The layer answered; `None` once taken.
        Answered {
            response: Option<Response<B>>,
        },
    }
}

impl<F, B> ResponseFuture<F, B> {
    fn served(future: F, fields: Option<Fields>) -> Self {
        Self {
            state: State::Served { future, fields },
        }
    }

    fn answered(response: Response<B>) -> Self {
        Self {
            state: State::Answered {
                response: Some(response),
            },
        }
    }
}

impl<F, B, E> Future for ResponseFuture<F, B>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<B>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            Projected::Served { future, fields } => {
                let mut response = match future.poll(cx) {
                    Poll::Ready(Ok(response)) => response,
                    other => return other,
                };
                if let Some(fields) = fields.take() {
                    fields.insert_into(response.headers_mut());
                }
                Poll::Ready(Ok(response))
            }
            // Polled again after it was ready, which the Future contract rules out: it
            // stays pending rather than panic.
            Projected::Answered { response } => match response.take() {
                Some(response) => Poll::Ready(Ok(response)),
                None => Poll::Pending,
            },
        }
    }
}
