//! The controller's HTTP endpoints: `/metrics` (Prometheus), `/healthz`
//! (the process serves requests) and `/readyz` (plait's CRDs are installed
//! and the controllers can run, whether or not this replica leads).

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::vocabulary::metrics::{CONTENT_TYPE, metrics};

/// Readiness shared by the controller and the `/readyz` endpoint.
#[derive(Debug, Default)]
pub struct Health {
    ready: AtomicBool,
}

impl Health {
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }
}

/// Serves the endpoints on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    health: Arc<Health>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            _ = &mut shutdown => return Ok(()),
            accepted = listener.accept() => accepted?,
        };
        let health = health.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let health = health.clone();
                async move { Ok::<_, Infallible>(respond(&request, &health)) }
            });
            if let Err(error) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(%error, "probe connection ended with an error");
            }
        });
    }
}

fn respond(request: &Request<Incoming>, health: &Health) -> Response<Full<Bytes>> {
    let text = |status: StatusCode, content_type: &str, body: String| {
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        if let Ok(value) = content_type.parse() {
            response
                .headers_mut()
                .insert(hyper::header::CONTENT_TYPE, value);
        }
        response
    };
    let plain = "text/plain; charset=utf-8";
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return text(StatusCode::METHOD_NOT_ALLOWED, plain, "only GET\n".into());
    }
    match request.uri().path() {
        "/metrics" => text(StatusCode::OK, CONTENT_TYPE, metrics().encode()),
        "/healthz" => text(StatusCode::OK, plain, "ok\n".into()),
        "/readyz" if health.is_ready() => text(StatusCode::OK, plain, "ok\n".into()),
        "/readyz" => text(
            StatusCode::SERVICE_UNAVAILABLE,
            plain,
            "not ready: installing plait's CRDs\n".into(),
        ),
        path if path.starts_with(crate::controllers::runs::PATH) => {
            crate::controllers::runs::answer(path).map_or_else(
                || text(StatusCode::NOT_FOUND, plain, "no run recorded\n".into()),
                |json| text(StatusCode::OK, "application/json", json),
            )
        }
        _ => text(
            StatusCode::NOT_FOUND,
            plain,
            "not found: try /metrics, /healthz or /readyz\n".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    async fn get(address: std::net::SocketAddr, path: &str) -> (u16, String) {
        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        let request = format!("GET {path} HTTP/1.1\r\nHost: plait\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        let status = response
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap();
        let body = response
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap();
        (status, body)
    }

    #[tokio::test]
    async fn endpoints_answer_by_path_and_readiness() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let health = Arc::new(Health::default());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, health.clone(), async {
            let _ = stopped.await;
        }));
        let before_ready = [
            ("/healthz", 200, "ok"),
            ("/readyz", 503, "not ready"),
            ("/metrics", 200, "# EOF"),
            ("/elsewhere", 404, "not found"),
        ];
        for (path, status, body) in before_ready {
            let (got_status, got_body) = get(address, path).await;
            assert_eq!(got_status, status, "{path}");
            assert!(got_body.contains(body), "{path}: {got_body}");
        }
        health.set_ready(true);
        assert_eq!(get(address, "/readyz").await.0, 200);
        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
    }
}
