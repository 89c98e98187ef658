//! The experience records that fit this failure: the failure decomposed
//! into problems and the records retrieved for them under the scope rules
//! (`tracelab_experience::retrieve`). Read by the experience agent, which
//! re-applies them, and by the LLM repair, whose prompt shows them as past
//! fixes; a module below both so neither reaches into the other.

use crate::config::Experience;
use crate::context::Context;
use tracelab_experience::Failure;
use tracelab_experience::evidence::failures_from_output;
use tracelab_experience::retrieve::{self, Retrieved, Target};

/// The failure decomposed into problems and the records retrieved for them
/// under the scope rules.
pub fn retrieval<'e>(
    ctx: &Context,
    experience: &'e Experience,
    output: &str,
) -> (Vec<Failure>, Vec<Retrieved<'e>>) {
    let root = ctx.pool.workspace().root().display().to_string();
    let (failures, _) = failures_from_output(&ctx.test.argv, output, &root);
    let repository = experience
        .repository
        .clone()
        .unwrap_or_else(|| ctx.pool.workspace().git().path().display().to_string());
    let command = ctx.test.display();
    let target = Target {
        repository: &repository,
        workflow: experience.workflow.as_deref(),
        command: &command,
    };
    let retrieved = retrieve::retrieve(&experience.records, &failures, &target);
    (failures, retrieved)
}
