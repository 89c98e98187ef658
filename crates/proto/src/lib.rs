//! Generated code for `proto/`: events carried on JetStream and the gRPC
//! services. The `.proto` files are the contract; see ARCHITECTURE.md for
//! subjects and streams.

#![allow(clippy::all, missing_docs)]

pub mod events {
    pub mod v1 {
        tonic::include_proto!("tracelab.events.v1");
    }
}

pub mod api {
    pub mod v1 {
        tonic::include_proto!("tracelab.api.v1");
    }
}

pub mod index {
    pub mod v1 {
        tonic::include_proto!("tracelab.index.v1");
    }
}

pub use prost::Message;
