//! The OTLP logs gRPC receiver (`opentelemetry.proto.collector.logs.v1.LogsService/Export`),
//! gzip accepted. tonic refuses a message over the body limit (after
//! decompression) before it reaches us; refusals map to RESOURCE_EXHAUSTED
//! or INVALID_ARGUMENT with the reason ([`Rejection::grpc_status`]). The
//! source is the bearer token's name (metadata `authorization`), or
//! `x-tracelab-source`, or the peer address.

use crate::auth::{Auth, SOURCE_HEADER};
use crate::evidence;
use crate::rejection::Rejection;
use crate::submission::Ingest;
use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::{
    LogsService, LogsServiceServer,
};
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use prost::Message as _;
use std::sync::Arc;
use tokio::net::TcpListener;
use tonic::codec::CompressionEncoding;
use tonic::{Request, Response, Status};
use tracelab_domain::Error;
use tracelab_service::Shutdown;
use tracing::Instrument;

struct Receiver {
    ingest: Arc<Ingest>,
    auth: Auth,
}

#[tonic::async_trait]
impl LogsService for Receiver {
    async fn export(
        &self,
        request: Request<ExportLogsServiceRequest>,
    ) -> Result<Response<ExportLogsServiceResponse>, Status> {
        let span = tracing::info_span!("grpc", method = "LogsService/Export");
        tracelab_service::grpc::continue_trace(&span, &request);
        self.export_logs(request).instrument(span).await
    }
}

impl Receiver {
    async fn export_logs(
        &self,
        request: Request<ExportLogsServiceRequest>,
    ) -> Result<Response<ExportLogsServiceResponse>, Status> {
        let meta = |name: &str| {
            request
                .metadata()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let source = self
            .auth
            .source(
                meta("authorization").as_deref(),
                meta(SOURCE_HEADER).as_deref(),
                request.remote_addr().map(|a| a.ip()),
            )
            .map_err(Status::unauthenticated)?;
        let request = request.into_inner();
        let encoded = request.encode_to_vec();
        let digest = evidence::content_digest(&encoded);
        let logs = tracelab_evidence::otlp::records(request, self.ingest.max_records());
        let summary = self
            .ingest
            .otlp_logs(&source, "grpc", digest, logs, encoded.len())
            .await
            .map_err(|r: Rejection| r.grpc_status())?;
        tracing::debug!(
            failures = summary.failures,
            stored = summary.stored,
            "OTLP export"
        );
        Ok(Response::new(ExportLogsServiceResponse {
            partial_success: None,
        }))
    }
}

pub async fn serve(
    listener: TcpListener,
    ingest: Arc<Ingest>,
    auth: Auth,
    max_message_bytes: usize,
    shutdown: Shutdown,
) -> tracelab_domain::Result<()> {
    tracing::info!(addr = ?listener.local_addr().ok(), "serving OTLP logs gRPC");
    let service = LogsServiceServer::new(Receiver { ingest, auth })
        .accept_compressed(CompressionEncoding::Gzip)
        .max_decoding_message_size(max_message_bytes);
    tonic::transport::Server::builder()
        .add_service(service)
        .serve_with_incoming_shutdown(
            tracelab_service::grpc::incoming_nodelay(listener),
            async move { shutdown.requested().await },
        )
        .await
        .map_err(|e| Error::internal(format!("OTLP gRPC server failed: {e}")))
}
