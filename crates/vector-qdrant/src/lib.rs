//! TraceLab's fleet vector store: the code index's
//! [`VectorIndex`](tracelab_code_index::vector::VectorIndex) port on a Qdrant
//! collection over gRPC. The embedded mode uses the in-process
//! `ExactCosineIndex`; both run `tracelab_code_index::vector::conformance::run`,
//! so they cannot drift.
//!
//! A call travels: the synchronous port method → [`bridge`] (the adapter's
//! own tokio runtime, waited on through a channel) → qdrant-client → the
//! server. One collection per index, cosine distance, the record's `u64` id
//! as the point id, and a payload of `path` (keyword index with prefix
//! matching, so path-prefix filters run on the server), `language` and
//! `kind`. Dimension checks happen here before anything is sent, so a bad
//! batch writes nothing.

mod bridge;
mod mapping;

use bridge::Bridge;
use qdrant_client::qdrant::{
    CountPointsBuilder, CreateCollectionBuilder, CreateFieldIndexCollectionBuilder,
    DeletePointsBuilder, Distance, FieldType, GetPointsBuilder, KeywordIndexParamsBuilder, PointId,
    PointStruct, PointsIdsList, QueryPointsBuilder, SearchParamsBuilder, UpsertPointsBuilder,
    VectorParamsBuilder, vectors_config,
};
use qdrant_client::{Qdrant, QdrantError};
use std::sync::Arc;
use std::time::Duration;
use tracelab_domain::vectors::{Filter, Hit, Record, VectorIndex};
use tracelab_domain::{Error, ErrorKind, Result};

/// Where the collection lives and how to talk to it.
#[derive(Debug, Clone)]
pub struct QdrantConfig {
    /// The gRPC endpoint, e.g. `http://127.0.0.1:6334`.
    pub url: String,
    pub collection: String,
    pub api_key: Option<String>,
    /// Per-request limit.
    pub timeout: Duration,
    /// Exact (full-scan) search instead of HNSW: the port promises the k
    /// most similar, which HNSW only approximates on large collections.
    pub exact: bool,
}

impl QdrantConfig {
    pub fn new(url: impl Into<String>, collection: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            collection: collection.into(),
            api_key: None,
            timeout: Duration::from_secs(10),
            exact: false,
        }
    }
}

/// A Qdrant collection behind the `VectorIndex` port.
pub struct QdrantIndex {
    client: Arc<Qdrant>,
    bridge: Bridge,
    config: QdrantConfig,
    dimension: usize,
}

impl std::fmt::Debug for QdrantIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QdrantIndex")
            .field("url", &self.config.url)
            .field("collection", &self.config.collection)
            .field("dimension", &self.dimension)
            .finish_non_exhaustive()
    }
}

/// The first page asks for this many more than `k`, so ties at the cut
/// rarely need a second round trip.
const TIE_SLACK: usize = 16;

impl QdrantIndex {
    /// Connects and makes sure the collection exists with `dimension` and
    /// cosine distance (created with its payload indexes when missing).
    /// An existing collection of another dimension is a `Conflict`.
    pub fn connect(config: QdrantConfig, dimension: usize) -> Result<Self> {
        if dimension == 0 {
            return Err(Error::invalid("vector dimension 0"));
        }
        let mut builder = Qdrant::from_url(&config.url)
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            // The version probe only logs a warning when it fails; the
            // collection check below is the real reachability test.
            .skip_compatibility_check();
        if let Some(key) = &config.api_key {
            builder = builder.api_key(key.clone());
        }
        let client = Arc::new(
            builder
                .build()
                .map_err(|e| mapping::error(&format!("client for {}", config.url), e))?,
        );
        let index = Self {
            client,
            bridge: Bridge::new()?,
            config,
            dimension,
        };
        index.ensure_collection()?;
        Ok(index)
    }

    pub fn collection(&self) -> &str {
        &self.config.collection
    }

    /// Deletes the whole collection (tests, re-indexing from scratch).
    pub fn drop_collection(&self) -> Result<()> {
        let name = self.config.collection.clone();
        self.call("delete collection", move |c| async move {
            c.delete_collection(name).await.map(drop)
        })
    }

    /// Runs one client call on the bridge and maps its error.
    fn call<T, F, Fut>(&self, what: &str, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Qdrant>) -> Fut,
        Fut: std::future::Future<Output = std::result::Result<T, QdrantError>> + Send + 'static,
    {
        let fut = f(self.client.clone());
        self.bridge.run(fut)?.map_err(|e| {
            mapping::error(
                &format!("{what} on {} ({})", self.config.collection, self.config.url),
                e,
            )
        })
    }

    fn ensure_collection(&self) -> Result<()> {
        let name = self.config.collection.clone();
        let exists = self.call("collection exists", move |c| async move {
            c.collection_exists(name).await
        })?;
        if exists {
            return self.check_dimension();
        }
        let dim = self.dimension as u64;
        let name = self.config.collection.clone();
        self.call("create collection", move |c| async move {
            c.create_collection(
                CreateCollectionBuilder::new(name)
                    .vectors_config(VectorParamsBuilder::new(dim, Distance::Cosine)),
            )
            .await
            .map(drop)
        })?;
        for (field, prefix) in [
            (mapping::PATH, true),
            (mapping::LANGUAGE, false),
            (mapping::KIND, false),
        ] {
            let name = self.config.collection.clone();
            self.call("create payload index", move |c| async move {
                c.create_field_index(
                    CreateFieldIndexCollectionBuilder::new(name, field, FieldType::Keyword)
                        .field_index_params(KeywordIndexParamsBuilder::default().prefix(prefix))
                        .wait(true),
                )
                .await
                .map(drop)
            })?;
        }
        Ok(())
    }

    fn check_dimension(&self) -> Result<()> {
        let name = self.config.collection.clone();
        let info = self.call("collection info", move |c| async move {
            c.collection_info(name).await
        })?;
        let size = info
            .result
            .and_then(|r| r.config)
            .and_then(|c| c.params)
            .and_then(|p| p.vectors_config)
            .and_then(|v| v.config)
            .and_then(|c| match c {
                vectors_config::Config::Params(p) => Some((p.size, p.distance)),
                vectors_config::Config::ParamsMap(_) => None,
            });
        match size {
            Some((size, distance))
                if size == self.dimension as u64 && distance == Distance::Cosine as i32 =>
            {
                Ok(())
            }
            other => Err(Error::new(
                ErrorKind::Conflict,
                format!(
                    "collection {} exists with vectors {other:?} (size, distance); this index needs {} cosine",
                    self.config.collection, self.dimension
                ),
            )),
        }
    }

    fn check_query(&self, v: &[f32]) -> Result<()> {
        if v.len() != self.dimension {
            return Err(Error::invalid(format!(
                "query has dimension {}, index has {}",
                v.len(),
                self.dimension
            )));
        }
        Ok(())
    }

    fn search_page(&self, query: &[f32], limit: usize, filter: &Filter) -> Result<Vec<Hit>> {
        let mut request = QueryPointsBuilder::new(self.config.collection.clone())
            .query(query.to_vec())
            .limit(limit as u64)
            .with_payload(false)
            .params(SearchParamsBuilder::default().exact(self.config.exact));
        if let Some(f) = mapping::filter(filter) {
            request = request.filter(f);
        }
        let response = self.call("search", move |c| async move { c.query(request).await })?;
        Ok(response.result.iter().filter_map(mapping::hit).collect())
    }
}

impl VectorIndex for QdrantIndex {
    fn dimension(&self) -> usize {
        self.dimension
    }

    fn upsert(&self, records: Vec<Record>) -> Result<()> {
        if let Some(bad) = records.iter().find(|r| r.vector.len() != self.dimension) {
            return Err(Error::invalid(format!(
                "vector {} has dimension {}, index has {}",
                bad.id,
                bad.vector.len(),
                self.dimension
            )));
        }
        if records.is_empty() {
            return Ok(());
        }
        let points: Vec<PointStruct> = records
            .into_iter()
            .map(|r| PointStruct::new(r.id, r.vector, mapping::payload(&r.payload)))
            .collect();
        let name = self.config.collection.clone();
        self.call("upsert", move |c| async move {
            c.upsert_points(UpsertPointsBuilder::new(name, points).wait(true))
                .await
                .map(drop)
        })
    }

    /// Counts the ids that exist first (Qdrant's delete does not say), then
    /// deletes; a concurrent writer can make the count stale, not wrong.
    fn delete(&self, ids: &[u64]) -> Result<usize> {
        if ids.is_empty() {
            return Ok(0);
        }
        let points: Vec<PointId> = ids.iter().map(|&id| id.into()).collect();
        let name = self.config.collection.clone();
        let lookup = points.clone();
        let existing = self.call("get", move |c| async move {
            c.get_points(
                GetPointsBuilder::new(name, lookup)
                    .with_payload(false)
                    .with_vectors(false),
            )
            .await
        })?;
        let name = self.config.collection.clone();
        self.call("delete", move |c| async move {
            c.delete_points(
                DeletePointsBuilder::new(name)
                    .points(PointsIdsList { ids: points })
                    .wait(true),
            )
            .await
            .map(drop)
        })?;
        Ok(existing.result.len())
    }

    fn search(&self, query: &[f32], k: usize, filter: &Filter) -> Result<Vec<Hit>> {
        self.check_query(query)?;
        if k == 0 {
            return Ok(Vec::new());
        }
        let mut page = k + TIE_SLACK;
        loop {
            let hits = self.search_page(query, page, filter)?;
            if let Some(ranked) = mapping::rank(hits, k, page) {
                return Ok(ranked);
            }
            page *= 4;
        }
    }

    fn count(&self) -> Result<usize> {
        let name = self.config.collection.clone();
        let response = self.call("count", move |c| async move {
            c.count(CountPointsBuilder::new(name).exact(true)).await
        })?;
        Ok(response.result.map_or(0, |r| r.count as usize))
    }
}
