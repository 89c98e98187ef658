//! The conformance suite against a real JetStream server
//! (`TRACELAB_TEST_NATS`); each case gets its own streams.

mod common;

use tracelab_bus::{JetStreamBus, Topology, conformance_tests};

async fn bus() -> Option<JetStreamBus> {
    let url = common::backend("TRACELAB_TEST_NATS")?;
    let topology = Topology::with_prefix(&common::unique_prefix("t"))
        .with_stream_limit(tracelab_testkit::backends::TEST_STREAM_BYTES);
    Some(
        JetStreamBus::connect(&url, topology)
            .await
            .expect("connect to JetStream"),
    )
}

async fn teardown(bus: &JetStreamBus) {
    bus.delete_streams()
        .await
        .expect("delete the test's streams");
}

conformance_tests!(
    tokio::test(flavor = "multi_thread", worker_threads = 2),
    bus(),
    teardown
);
