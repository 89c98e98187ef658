//! Past fixes of the same failure for the prompt: what this organisation
//! already did when this problem failed before. The records are the
//! experience agent's (`agents::experience`), retrieved under the same
//! scope rules: an L1 record (same repository and workflow, same failing
//! test or the same error group) shows its repair as a diff, an L2 record
//! (same repository) its ordered actions, an L3 record (any repository)
//! only its abstracted approach, never another repository's code. The
//! experience agent re-applies L1 repairs itself; the model gets them as
//! examples, which helps when the code has moved too far for a merge or
//! the old repair fixed a sibling of this bug.

use super::budget::Bounded;
use crate::context::Context;
use tracelab_experience::records::Level;

/// Bytes of the section at most.
pub(super) const BYTES: usize = 4000;
/// Records shown at most.
const RECORDS: usize = 3;

/// The prompt section, empty without records for this failure.
pub(super) fn section(ctx: &Context, output: &str) -> String {
    let Some(experience) = ctx.config.experience.clone() else {
        return String::new();
    };
    let (failures, retrieved) = crate::retrieval::retrieval(ctx, &experience, output);
    let mut seen = std::collections::BTreeSet::new();
    let mut section = Bounded::new(BYTES);
    for r in retrieved
        .iter()
        .filter(|r| seen.insert(&r.record.id))
        .take(RECORDS)
    {
        let rec = r.record;
        let problem = failures
            .get(r.problem)
            .and_then(|f| f.test.clone())
            .unwrap_or_else(|| "this failure".into());
        let matched = r.reasons.join(", ");
        let id: String = rec.id.chars().take(12).collect();
        let text = match r.level {
            Level::Concrete => format!(
                "\n### Record {id}: how this repository fixed {problem} before (matched by {matched}; fixed at {})\n```diff\n{}\n```\n",
                rec.concrete.fixed_at.chars().take(12).collect::<String>(),
                rec.concrete.patch.trim_end()
            ),
            Level::Strategy => format!(
                "\n### Record {id}: this repository fixed {problem} before by these steps (matched by {matched}): {}\n",
                rec.pattern.approach.join(", then ")
            ),
            Level::Pattern => format!(
                "\n### Record {id}: a {} was fixed in another repository by: {}\n",
                rec.pattern.mechanism,
                rec.pattern.approach.join(", then ")
            ),
        };
        section.push(&text);
    }
    if section.is_empty() {
        return String::new();
    }
    format!(
        "\n## Past fixes of this failure (experience records; examples, not necessarily right here)\n{}",
        section.finish("past fixes")
    )
}
