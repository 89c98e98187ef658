//! Tracing for a service: human-readable logs on stderr (`RUST_LOG`), spans
//! exported over OTLP/gRPC when an endpoint is configured, and W3C trace
//! context carried across processes in a `traceparent` string (NATS header,
//! gRPC metadata, HTTP header), so one investigation is one trace across the
//! fleet. Without an endpoint spans still get real trace ids — they are
//! propagated, just not exported.

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::collections::HashMap;
use tracelab_domain::{Error, Result};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Registry};

/// Keeps the exporter alive; flushes pending spans when dropped.
pub struct Telemetry {
    provider: SdkTracerProvider,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        let _ = self.provider.shutdown();
    }
}

/// Installs the global subscriber for `service`. `otlp_endpoint` (for example
/// `http://127.0.0.1:4317`) turns on export; `OTEL_EXPORTER_OTLP_ENDPOINT`
/// is honoured when the argument is `None`.
pub fn init(service: &str, otlp_endpoint: Option<&str>) -> Result<Telemetry> {
    let endpoint = otlp_endpoint
        .map(str::to_string)
        .or_else(|| std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").ok())
        .filter(|e| !e.is_empty());
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(service.to_string())
        .build();
    let mut builder = SdkTracerProvider::builder().with_resource(resource);
    if let Some(endpoint) = &endpoint {
        use opentelemetry_otlp::WithExportConfig;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint.clone())
            .build()
            .map_err(|e| Error::invalid(format!("OTLP exporter for {endpoint}: {e}")))?;
        builder = builder.with_batch_exporter(exporter);
    }
    let provider = builder.build();
    let tracer = provider.tracer(service.to_string());
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let otel = tracing_opentelemetry::layer::<Registry>().with_tracer(tracer);
    tracing_subscriber::registry()
        .with(otel)
        .with(filter)
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())),
        )
        .try_init()
        .map_err(|e| Error::internal(format!("tracing already initialised: {e}")))?;
    if let Some(endpoint) = endpoint {
        tracing::info!(%endpoint, "exporting spans over OTLP");
    }
    Ok(Telemetry { provider })
}

/// The W3C `traceparent` of `span`, to put in an outgoing message.
pub fn traceparent(span: &tracing::Span) -> Option<String> {
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&span.context(), &mut carrier);
    carrier.remove("traceparent")
}

/// Makes `span` a child of the remote span named by `traceparent`.
pub fn continue_trace(span: &tracing::Span, traceparent: Option<&str>) {
    let Some(value) = traceparent else { return };
    let carrier = HashMap::from([("traceparent".to_string(), value.to_string())]);
    let parent = TraceContextPropagator::new().extract(&carrier);
    let _ = span.set_parent(parent);
}
