//! Prometheus metrics. Code records with the `metrics` crate's macros
//! (`metrics::counter!("tracelab_…", "label" => value).increment(1)`); one
//! recorder per process collects them and `/metrics` on every service's
//! health listener renders the text format for a scrape. The metrics are
//! counts and durations only: no ids, paths, commands or other data.

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// The process's recorder, installed on first use. (Should another
/// recorder be installed already, this one still renders, empty.)
pub fn handle() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("a metrics recorder was installed already; /metrics stays empty");
        }
        handle
    })
}

/// The text exposition format of everything recorded so far.
pub fn render() -> String {
    handle().render()
}

#[cfg(test)]
mod tests {
    #[test]
    fn recorded_counters_are_rendered() {
        super::handle();
        metrics::counter!("tracelab_test_events_total", "kind" => "unit").increment(2);
        let text = super::render();
        assert!(
            text.contains("tracelab_test_events_total{kind=\"unit\"} 2"),
            "{text}"
        );
    }
}
