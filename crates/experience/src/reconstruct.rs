//! The whole reconstruction of one history, and the notes that say what
//! could not be organised. A history that is not a linear sequence, has no
//! CI observations or a diff that does not parse yields notes and no
//! attribution at all; a binary change drops only the problems it could
//! have repaired.

use crate::development::{self, DevelopmentView};
use crate::endpoint::{self, EndpointView};
use crate::hunks::{self, NetHunk};
use crate::model::History;
use crate::problems::{self, Problem};
use crate::reconcile::{self, Prerequisite, ProblemAttribution, Views};
use crate::records::{self, ExperienceRecord};
use crate::relations::Relations;
use serde::{Deserialize, Serialize};
use tracelab_domain::patch::{self, FilePatch};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoteKind {
    /// Fewer than two revisions.
    TooShort,
    /// A revision's parent is not the previous revision (force-push, merge).
    NotLinear,
    NoObservations,
    UnparseableDiff,
    /// The first revision shows no failure.
    NotFailingAtStart,
    /// A binary file changed: it cannot be attributed.
    Binary,
    /// A problem was still failing (or unobserved) at the end.
    Unresolved,
    /// A problem passed, then failed again.
    Flapped,
    /// CI did not observe a problem between several commits.
    WideWindow,
    /// A problem disappeared with no surviving change (flaky, environment).
    NoSurvivingChange,
    /// A CI report or the workflow could not be used (what it said is left
    /// out, never attributed by a guess).
    CiInput,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    pub kind: NoteKind,
    pub message: String,
}

pub fn note(kind: NoteKind, message: impl Into<String>) -> Note {
    Note {
        kind,
        message: message.into(),
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reconstruction {
    pub repository: String,
    pub workflow: String,
    pub revisions: Vec<String>,
    /// False when the history could not be organised at all (see notes).
    pub organised: bool,
    pub notes: Vec<Note>,
    pub problems: Vec<Problem>,
    pub hunks: Vec<NetHunk>,
    pub endpoint: EndpointView,
    pub development: DevelopmentView,
    pub attributions: Vec<ProblemAttribution>,
    pub prerequisites: Vec<Prerequisite>,
    pub records: Vec<ExperienceRecord>,
}

impl Reconstruction {
    fn refuse(mut self, kind: NoteKind, message: impl Into<String>) -> Self {
        self.notes.push(note(kind, message));
        self.organised = false;
        self
    }
}

/// Reconstructs the problem-level repairs of `history`.
pub fn reconstruct(history: &History, relations: &dyn Relations) -> Reconstruction {
    let out = Reconstruction {
        repository: history.repository.clone(),
        workflow: history.workflow.clone(),
        revisions: history.revisions.iter().map(|r| r.id.clone()).collect(),
        ..Default::default()
    };
    if history.revisions.len() < 2 {
        return out.refuse(
            NoteKind::TooShort,
            "a history needs a failing and a passing revision",
        );
    }
    for pair in history.revisions.windows(2) {
        if let Some(parent) = &pair[1].parent
            && *parent != pair[0].id
        {
            return out.refuse(
                NoteKind::NotLinear,
                format!(
                    "revision {} follows {} but its parent is {parent}: not a linear sequence (force-push or merge); nothing attributed",
                    short(&pair[1].id),
                    short(&pair[0].id)
                ),
            );
        }
    }
    if history.revisions.iter().all(|r| r.ci.is_none()) {
        return out.refuse(
            NoteKind::NoObservations,
            "no CI observation at any revision: nothing tells which change repaired what",
        );
    }
    let mut diffs: Vec<Vec<FilePatch>> = Vec::new();
    for (i, r) in history.revisions.iter().enumerate() {
        match patch::parse(&r.diff) {
            Ok(files) => diffs.push(files),
            Err(e) => {
                return out.refuse(
                    NoteKind::UnparseableDiff,
                    format!("the diff of revision {i} does not parse: {}", e.message),
                );
            }
        }
    }
    let split = match hunks::split(&history.net_diff) {
        Ok(s) => s,
        Err(e) => {
            return out.refuse(
                NoteKind::UnparseableDiff,
                format!("the net diff does not parse: {}", e.message),
            );
        }
    };
    organise(history, relations, out, diffs, split)
}

fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

fn organise(
    history: &History,
    relations: &dyn Relations,
    mut out: Reconstruction,
    diffs: Vec<Vec<FilePatch>>,
    split: hunks::Split,
) -> Reconstruction {
    out.organised = true;
    for path in &split.binary {
        out.notes.push(note(
            NoteKind::Binary,
            format!("{path} changed as a binary file and is not attributed"),
        ));
    }
    out.hunks = split.hunks;
    out.problems = problems::identify(history);
    let first_failing = history.revisions[0].ci.as_ref().is_some_and(|ci| {
        out.problems
            .iter()
            .any(|p| problems::status_at(Some(ci), p) == problems::Status::Failed)
    });
    if !first_failing {
        out.notes.push(note(
            NoteKind::NotFailingAtStart,
            "the first revision shows no failure",
        ));
    }
    for p in &out.problems {
        if p.disappeared_at.is_none() {
            out.notes.push(note(
                NoteKind::Unresolved,
                format!(
                    "{} is not seen passing after its last failure: no record",
                    p.key
                ),
            ));
        } else {
            let window = p.window();
            if window.clone().count() > 1 {
                out.notes.push(note(
                    NoteKind::WideWindow,
                    format!(
                        "{} disappeared somewhere in {} commits CI did not observe it between",
                        p.key,
                        window.count()
                    ),
                ));
            }
        }
        if p.flapped() {
            out.notes.push(note(
                NoteKind::Flapped,
                format!(
                    "{} passed and failed again; only its last repair counts",
                    p.key
                ),
            ));
        }
    }
    // Frames point at lines of the revision where the problem was first
    // seen; the endpoint view compares them with the failing revision.
    let frames: Vec<Vec<(String, u32)>> = out
        .problems
        .iter()
        .map(|p| {
            p.frames
                .iter()
                .map(|(path, line)| {
                    (1..=p.first_failed)
                        .rev()
                        .fold((path.clone(), *line), |(path, line), k| {
                            hunks::line_before(&diffs[k], &path, line)
                        })
                })
                .collect()
        })
        .collect();
    out.endpoint = endpoint::endpoint_view(&out.hunks, &out.problems, &frames, relations);
    let revisions: Vec<(String, String)> = history
        .revisions
        .iter()
        .map(|r| (r.id.clone(), r.diff.clone()))
        .collect();
    out.development = development::development_view(&revisions, &out.hunks, &out.problems);
    let views = Views {
        hunks: &out.hunks,
        problems: &out.problems,
        endpoint: &out.endpoint,
        development: &out.development,
        relations,
    };
    let mut attributions: Vec<ProblemAttribution> = (0..out.problems.len())
        .map(|p| reconcile::reconcile_problem(&views, p))
        .collect();
    // A binary change in a problem's window could be its repair: no record.
    for a in &mut attributions {
        let p = &out.problems[a.problem];
        if p.disappeared_at.is_none() {
            continue;
        }
        let binary: Vec<&String> = out
            .development
            .commits
            .iter()
            .filter(|c| p.window().contains(&c.revision))
            .flat_map(|c| c.binary.iter())
            .collect();
        if !binary.is_empty() {
            out.notes.push(note(
                NoteKind::Binary,
                format!(
                    "{} disappeared with a binary change ({}): not attributed",
                    p.key,
                    binary
                        .iter()
                        .map(|b| b.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
            a.kept.clear();
        } else if a.kept.is_empty() {
            out.notes.push(note(
                NoteKind::NoSurvivingChange,
                format!(
                    "{} disappeared without a change that survived: no record",
                    p.key
                ),
            ));
        }
    }
    out.prerequisites = reconcile::prerequisites(&views, &attributions);
    out.records = records::build(
        &records::Sources {
            repository: &history.repository,
            workflow: &history.workflow,
            revisions: &out.revisions,
            hunks: &out.hunks,
            problems: &out.problems,
            development: &out.development,
            prerequisites: &out.prerequisites,
        },
        &attributions,
    );
    out.attributions = attributions;
    out
}

#[cfg(test)]
mod tests;
