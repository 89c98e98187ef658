//! One attempt to deliver an outgoing webhook, the record the dispatcher
//! writes (`tracelab-store`'s delivery log) and the investigation's page
//! lists (`tracelab-dashboard`): one type, so no host maps between two.

use time::OffsetDateTime;

/// One attempt to deliver one event to one URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookDelivery {
    pub investigation_id: String,
    /// `created`, `decided`, `approved`, `rejected`, `pull_request_opened`.
    pub event: String,
    /// The same for every attempt of one event to one URL (the receiver's
    /// deduplication key).
    pub delivery_id: String,
    pub url: String,
    /// 1 for the first attempt.
    pub attempt: u32,
    /// The receiver answered 2xx.
    pub delivered: bool,
    pub http_status: Option<u16>,
    /// Why it was not delivered.
    pub error: Option<String>,
    /// When it was recorded; set by the store.
    pub at: Option<OffsetDateTime>,
}
