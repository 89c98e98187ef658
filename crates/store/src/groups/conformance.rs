//! The behaviour every [`GroupStore`] must have, as one suite run against
//! `InMemoryGroupStore`, [`SqliteGroupStore`](super::SqliteGroupStore) and
//! [`PgGroupStore`](super::PgGroupStore) (`tests/groups.rs`). Every stored
//! group is compared with the pure model ([`FailureGroup::new`] +
//! [`FailureGroup::observe`] ...) fed the same occurrences, so a store can
//! neither lose a field nor change the model's meaning. Each check uses its
//! own keys, so the suite can share one store; panics name the broken rule.

use super::{MergingGroupStore, Undo};
use std::collections::BTreeSet;
use std::sync::Arc;
use tracelab_evidence::similar::{FrameToken, SimilarityConfig, StackProfile};
use tracelab_evidence::{
    Decision, ErrorKind, FailureGroup, FailureKind, GroupKey, GroupQuery, GroupState, GroupStatus,
    GroupStore, Language, MAX_TRACKED, Observation, Occurrence, Policy, Reason, SkipReason,
    Trigger, triage,
};

/// Runs every check against `store`. Concurrency checks spawn tasks, so call
/// it from a multi-threaded tokio runtime.
pub async fn run<S: GroupStore + 'static>(store: Arc<S>) {
    let tag = format!("{:x}", std::process::id());
    lifecycle(&*store, &tag).await;
    resolve_and_regress(&*store, &tag).await;
    investigation_marks(&*store, &tag).await;
    missing_groups(&*store, &tag).await;
    tracked_sets_are_capped(&*store, &tag).await;
    text_round_trips(&*store, &tag).await;
    triage_marks_once(&*store, &tag).await;
    concurrent_records_all_count(store.clone(), &tag).await;
    pages_follow_the_model(&*store, &tag).await;
    // Last: its groups are the newest, so the ordering check sees only them.
    list_is_newest_first(&*store, &tag).await;
}

/// An occurrence of group `key` at `at`.
pub fn occurrence(key: &str, at: i64, commit: Option<&str>, branch: Option<&str>) -> Occurrence {
    Occurrence::new(
        GroupKey(key.to_owned()),
        at,
        FailureKind::Exception,
        Language::Python,
        "ValueError: bad config",
    )
    .on(commit, branch)
}

/// Applies `occs` to the pure model.
fn model(occs: &[Occurrence]) -> FailureGroup {
    let mut g = FailureGroup::new(&occs[0]);
    for o in &occs[1..] {
        g.observe(o);
    }
    g
}

async fn stored(store: &dyn GroupStore, key: &GroupKey) -> FailureGroup {
    store
        .get(key)
        .await
        .expect("get")
        .unwrap_or_else(|| panic!("group {key} was recorded but get finds nothing"))
}

async fn lifecycle(store: &dyn GroupStore, tag: &str) {
    let key = format!("stack:{tag}:lifecycle");
    let mut first = occurrence(&key, 1_000, Some("c1"), Some("main"));
    first.test_id = Some("tests/test_a.py::test_x".into());
    first.kind = FailureKind::TestFailure;
    let occs = [
        first,
        occurrence(&key, 2_000, Some("c2"), Some("feature/x")),
        // Older than the last sighting: counted, first_seen moves, last_seen does not.
        occurrence(&key, 500, Some("c0"), None),
        occurrence(&key, 2_000, Some("c2"), Some("feature/x")),
    ];
    let (g, obs) = store.record(&occs[0]).await.expect("record a new group");
    assert_eq!(obs, Observation::New, "first sighting is New");
    assert_eq!(g, model(&occs[..1]), "record returns the new group");
    assert_eq!(
        stored(store, &g.key).await,
        g,
        "get returns what record returned"
    );
    for (i, o) in occs.iter().enumerate().skip(1) {
        let (g, obs) = store.record(o).await.expect("record again");
        assert_eq!(
            obs,
            Observation::Recurrence,
            "sighting {i} of an open group"
        );
        assert_eq!(
            g,
            model(&occs[..=i]),
            "group after sighting {i} matches the model"
        );
        assert_eq!(
            stored(store, &g.key).await,
            g,
            "stored group after sighting {i}"
        );
    }
    let g = stored(store, &GroupKey(key)).await;
    assert_eq!(
        (g.count, g.first_seen, g.last_seen, g.version),
        (4, 500, 2_000, 4)
    );
    assert_eq!(g.commits.len(), 3, "distinct commits: {:?}", g.commits);
    assert_eq!(
        g.kind,
        FailureKind::TestFailure,
        "kind comes from the first sighting"
    );
}

async fn resolve_and_regress(store: &dyn GroupStore, tag: &str) {
    let key = GroupKey(format!("stack:{tag}:regress"));
    let a = occurrence(&key.0, 1_000, Some("c1"), Some("main"));
    store.record(&a).await.unwrap();
    store
        .mark_investigation(&key, 1_001, Reason::Regression)
        .await
        .unwrap();
    let resolved = store
        .resolve(&key, 1_500, Some("fix1".into()))
        .await
        .expect("resolve");
    let mut expected = model(std::slice::from_ref(&a));
    expected.mark_investigation(1_001, Reason::Regression);
    expected.resolve(1_500, Some("fix1".into()));
    assert_eq!(resolved, expected, "resolve returns the model's group");
    assert_eq!(
        resolved.investigation, None,
        "resolving clears the investigation mark"
    );
    assert_eq!(stored(store, &key).await, expected, "resolution is stored");

    // A late report of an older run does not reopen it.
    let late = occurrence(&key.0, 1_200, Some("c1"), Some("main"));
    let (g, obs) = store.record(&late).await.unwrap();
    assert_eq!(
        obs,
        Observation::Recurrence,
        "older than the fix: not a regression"
    );
    assert!(
        matches!(g.status, GroupStatus::Resolved { at: 1_500, .. }),
        "{:?}",
        g.status
    );
    expected.observe(&late);

    let again = occurrence(&key.0, 2_000, Some("c3"), Some("main"));
    let (g, obs) = store.record(&again).await.unwrap();
    assert_eq!(
        obs,
        Observation::Regression {
            resolved_at: 1_500,
            resolved_in: Some("fix1".into())
        },
        "seen after its fix: a regression"
    );
    expected.observe(&again);
    assert_eq!(g, expected);
    assert_eq!((g.status.clone(), g.regressions), (GroupStatus::Open, 1));
    assert_eq!(stored(store, &key).await, expected);
    // Resolved without a commit round-trips too.
    let g = store.resolve(&key, 3_000, None).await.unwrap();
    assert_eq!(stored(store, &key).await, g);
    assert_eq!(
        g.status,
        GroupStatus::Resolved {
            at: 3_000,
            commit: None
        }
    );
}

async fn investigation_marks(store: &dyn GroupStore, tag: &str) {
    let key = GroupKey(format!("error:{tag}@marks"));
    store
        .record(&occurrence(&key.0, 10, None, None))
        .await
        .unwrap();
    for reason in [
        Reason::Recurrence {
            count: 3,
            commits: 2,
        },
        Reason::NewOnProtectedBranch {
            branch: "release/1.2".into(),
        },
        Reason::Manual {
            requested_by: "ann".into(),
        },
    ] {
        let g = store
            .mark_investigation(&key, 20, reason.clone())
            .await
            .expect("mark");
        assert_eq!(g.investigation.as_ref().map(|m| &m.reason), Some(&reason));
        assert_eq!(stored(store, &key).await, g, "mark {reason:?} is stored");
    }
    assert_eq!(
        stored(store, &key).await.version,
        4,
        "every change bumps the version"
    );
}

async fn missing_groups(store: &dyn GroupStore, tag: &str) {
    let key = GroupKey(format!("stack:{tag}:missing"));
    assert_eq!(store.get(&key).await.unwrap(), None, "unknown key: None");
    let err = store.resolve(&key, 1, None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "resolve unknown: {err}");
    let err = store
        .mark_investigation(&key, 1, Reason::Regression)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "mark unknown: {err}");
    assert_eq!(
        store.get(&key).await.unwrap(),
        None,
        "a failed update creates nothing"
    );
}

async fn tracked_sets_are_capped(store: &dyn GroupStore, tag: &str) {
    let key = format!("stack:{tag}:cap");
    let occs: Vec<Occurrence> = (0..MAX_TRACKED + 5)
        .map(|i| {
            let mut o = occurrence(
                &key,
                i as i64,
                Some(&format!("c{i:04}")),
                Some(&format!("b{i:04}")),
            );
            o.test_id = Some(format!("t{i:04}"));
            o
        })
        .collect();
    for o in &occs {
        store.record(o).await.unwrap();
    }
    let g = stored(store, &GroupKey(key)).await;
    assert_eq!(g, model(&occs), "capped sets match the model");
    assert_eq!(
        (g.commits.len(), g.branches.len(), g.test_ids.len()),
        (MAX_TRACKED, MAX_TRACKED, MAX_TRACKED)
    );
    assert_eq!(
        g.count as usize,
        MAX_TRACKED + 5,
        "every sighting counts past the cap"
    );
}

async fn text_round_trips(store: &dyn GroupStore, tag: &str) {
    let key = format!("error:{tag}@text 'quoted' \"double\" ünïcødé 🚀");
    let mut o = occurrence(&key, -5, Some("c'1"), Some("feat/ü ß"));
    o.title = "KeyError: 'Robert\"); DROP TABLE failure_groups;--' ✓".into();
    o.kind = FailureKind::BuildError;
    o.language = Language::Unknown;
    o.test_id = Some("tests/ü.py::test[é-\\n]".into());
    let (g, _) = store.record(&o).await.unwrap();
    assert_eq!(g, model(std::slice::from_ref(&o)));
    assert_eq!(
        stored(store, &g.key).await,
        g,
        "odd text and negative times round-trip"
    );
}

async fn triage_marks_once(store: &dyn GroupStore, tag: &str) {
    let policy = Policy::default();
    let key = format!("stack:{tag}:triage");
    let (_, obs, d) = triage(
        store,
        &policy,
        &occurrence(&key, 100, Some("c1"), Some("main")),
        &Trigger::Automatic,
        100,
    )
    .await
    .unwrap();
    assert_eq!(obs, Observation::New);
    assert!(d.should_investigate(), "new on main: {d:?}");
    let (g, _, d) = triage(
        store,
        &policy,
        &occurrence(&key, 200, Some("c2"), Some("main")),
        &Trigger::Automatic,
        200,
    )
    .await
    .unwrap();
    assert_eq!(
        d,
        Decision::Skip {
            reason: SkipReason::AlreadyRequested { at: 100 }
        },
        "the stored mark stops a second investigation"
    );
    assert_eq!(g.count, 2);
}

async fn concurrent_records_all_count<S: GroupStore + 'static>(store: Arc<S>, tag: &str) {
    const TASKS: usize = 8;
    const EACH: usize = 6;
    let key = format!("stack:{tag}:concurrent");
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let store = store.clone();
            let key = key.clone();
            tokio::spawn(async move {
                let mut seen = Vec::new();
                for i in 0..EACH {
                    let at = 10_000 + (t * EACH + i) as i64;
                    let commit = format!("c{}", (t + i) % 5);
                    let (_, obs) = store
                        .record(&occurrence(&key, at, Some(&commit), Some("main")))
                        .await
                        .expect("concurrent record");
                    seen.push(obs);
                }
                seen
            })
        })
        .collect();
    let mut observations = Vec::new();
    for t in tasks {
        observations.extend(t.await.expect("task"));
    }
    let news = observations
        .iter()
        .filter(|o| **o == Observation::New)
        .count();
    assert_eq!(news, 1, "exactly one concurrent writer creates the group");
    let g = stored(&*store, &GroupKey(key.clone())).await;
    let n = (TASKS * EACH) as u64;
    assert_eq!(g.count, n, "every concurrent sighting is counted");
    assert_eq!(g.version, n, "one version per sighting");
    assert_eq!((g.first_seen, g.last_seen), (10_000, 10_000 + n as i64 - 1));
    let commits: BTreeSet<String> = (0..5).map(|c| format!("c{c}")).collect();
    assert_eq!(g.commits, commits);

    // Different keys in parallel do not interfere.
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let store = store.clone();
            let key = format!("{key}:{t}");
            tokio::spawn(async move {
                for i in 0..3 {
                    store
                        .record(&occurrence(&key, i, None, None))
                        .await
                        .expect("record");
                }
                store.get(&GroupKey(key)).await.unwrap().unwrap().count
            })
        })
        .collect();
    for t in tasks {
        assert_eq!(
            t.await.unwrap(),
            3,
            "a group recorded beside others counts alone"
        );
    }
}

async fn list_is_newest_first(store: &dyn GroupStore, tag: &str) {
    let far = 4_000_000_000;
    let keys = [
        (format!("stack:{tag}:list-b"), far + 2),
        (format!("stack:{tag}:list-a"), far + 2),
        (format!("stack:{tag}:list-c"), far + 3),
        (format!("stack:{tag}:list-d"), far + 1),
    ];
    for (k, at) in &keys {
        store.record(&occurrence(k, *at, None, None)).await.unwrap();
    }
    let listed: Vec<String> = store
        .list(3)
        .await
        .unwrap()
        .into_iter()
        .map(|g| g.key.0)
        .collect();
    assert_eq!(
        listed,
        [keys[2].0.clone(), keys[1].0.clone(), keys[0].0.clone()],
        "newest first, ties by key, at most `limit`"
    );
    assert!(
        store.list(0).await.unwrap().is_empty(),
        "limit 0 lists nothing"
    );
}

/// `page` returns exactly what the pure rule ([`GroupQuery::apply`]) gives
/// over the same groups, for every filter, and its cursor walks every
/// matching group once, in order, across pages.
async fn pages_follow_the_model(store: &dyn GroupStore, tag: &str) {
    let repo = format!("acme-{tag}/api");
    let other = format!("acme-{tag}/web");
    let mut model: Vec<FailureGroup> = Vec::new();
    for i in 0..9i64 {
        let key = format!("stack:{tag}:page-{i}");
        // Ties on last_seen (i / 2) exercise the key tie-break across pages.
        let mut o = occurrence(&key, 5_000 + i / 2, Some("c1"), Some("main"));
        o.repository = Some(if i % 3 == 2 { &other } else { &repo }.clone());
        o.language = if i % 2 == 0 {
            Language::Python
        } else {
            Language::Go
        };
        let (g, _) = store.record(&o).await.expect("record");
        let mut expected = FailureGroup::new(&o);
        if i % 4 == 0 {
            // Seen in the other repository too: listed under both.
            let mut again = o.clone();
            again.repository = Some(other.clone());
            store.record(&again).await.expect("record again");
            expected.observe(&again);
        }
        if i == 5 {
            store.resolve(&g.key, 6_000, None).await.expect("resolve");
            expected.resolve(6_000, None);
        }
        assert_eq!(
            stored(store, &g.key).await,
            expected,
            "group {i} with its repositories"
        );
        model.push(expected);
    }
    let queries = [
        GroupQuery {
            repository: Some(repo.clone()),
            limit: 3,
            ..GroupQuery::default()
        },
        GroupQuery {
            repository: Some(other.clone()),
            limit: 2,
            ..GroupQuery::default()
        },
        GroupQuery {
            repository: Some(repo.clone()),
            state: Some(GroupState::Open),
            language: Some(Language::Go),
            limit: 1,
            ..GroupQuery::default()
        },
        GroupQuery {
            repository: Some(repo.clone()),
            state: Some(GroupState::Resolved),
            limit: 10,
            ..GroupQuery::default()
        },
        GroupQuery {
            repository: Some(repo.clone()),
            since: Some(5_003),
            limit: 2,
            ..GroupQuery::default()
        },
        GroupQuery {
            repository: Some(format!("{repo}-none")),
            limit: 5,
            ..GroupQuery::default()
        },
    ];
    for q0 in queries {
        let everything = GroupQuery {
            limit: usize::MAX,
            after: None,
            ..q0.clone()
        }
        .apply(&model);
        let mut q = q0.clone();
        let mut walked = Vec::new();
        for round in 0.. {
            assert!(round <= model.len(), "{q0:?}: the cursor never ends");
            let page = store.page(&q).await.expect("page");
            assert_eq!(
                page,
                q.apply(&model),
                "{q:?}: the store's page is the model's"
            );
            walked.extend(page.groups);
            match page.next {
                Some(next) => q.after = Some(next.to_string().parse().expect("cursor")),
                None => break,
            }
        }
        assert_eq!(
            walked, everything.groups,
            "{q0:?}: pages walk every match once, in order"
        );
    }
}

/// Similar-issue merging, the same on every [`MergingGroupStore`]
/// (configured with `merging(SimilarityConfig::default())`): a new exact key
/// joins the most similar group with its reason (score, matched frames);
/// later sightings follow the merge; undoing it sends the next sighting to
/// a group of its own for good; a trace unlike any group keeps its key; a
/// merged-into group keeps its profile however often it is written.
pub async fn merges<S: MergingGroupStore + GroupStore>(store: &S) {
    let tag = format!("{:x}", std::process::id());
    let profile = |frames: &[&str]| StackProfile {
        frames: frames
            .iter()
            .map(|k| FrameToken {
                key: (*k).into(),
                in_app: true,
            })
            .collect(),
        exception_type: Some("KeyError".into()),
        message_words: vec!["email".into()],
        missing: Vec::new(),
        raised_in: None,
    };
    // Innermost first: one bug reached from several entry points.
    let checkout = |entry: &str| profile(&["orders.py|checkout", "api.py|handle", entry]);
    let record = |key: String, at: i64, p: StackProfile| async move {
        let occ = occurrence(&key, at, Some(&format!("c{at}")), Some("feature/x"));
        store
            .record_similar(&occ, Some(&p))
            .await
            .expect("record with a profile")
    };
    let a = GroupKey(format!("stack:{tag}:merge-a"));
    let b = GroupKey(format!("stack:{tag}:merge-b"));
    let (g, obs, merged) = record(a.0.clone(), 1_000, checkout("main.py|main")).await;
    assert_eq!(
        (&g.key, obs, merged),
        (&a, Observation::New, None),
        "first trace: its own group"
    );

    let (g, obs, merged) = record(b.0.clone(), 2_000, checkout("worker.py|run_job")).await;
    assert_eq!(
        (&g.key, &obs),
        (&a, &Observation::Recurrence),
        "the same bug from another entry point joins a"
    );
    let merged = merged.expect("merged by similarity, with its reason");
    assert_eq!((&merged.exact_key, &merged.group_key), (&b, &a));
    assert!(
        merged.score >= SimilarityConfig::default().threshold,
        "{merged:?}"
    );
    assert_eq!(
        merged
            .matched
            .iter()
            .map(|m| m.key.as_str())
            .collect::<Vec<_>>(),
        ["orders.py|checkout", "api.py|handle"],
        "the matched frames are recorded"
    );
    assert_eq!(
        store.merges(&a).await.unwrap(),
        std::slice::from_ref(&merged)
    );
    assert!(
        store.get(&b).await.unwrap().is_none(),
        "a merged key has no group of its own"
    );

    let (g, _, again) = record(b.0.clone(), 3_000, checkout("worker.py|run_job")).await;
    assert_eq!(
        (&g.key, again),
        (&a, None),
        "later sightings follow the merge"
    );
    assert_eq!(stored(store, &a).await.count, 3);

    // a was written twice since its profile was kept: still a candidate.
    let d = GroupKey(format!("stack:{tag}:merge-d"));
    let (g, _, merged_d) = record(d.0.clone(), 3_500, checkout("cron.py|tick")).await;
    assert_eq!(g.key, a, "the group keeps its profile across writes");
    assert_eq!(merged_d.map(|m| m.exact_key), Some(d));

    assert_eq!(stored(store, &a).await.count, 4);
    let undo = Undo::new(4_000, "ana", "another entry point, another bug").unwrap();
    let undone = store
        .unmerge(&b, &undo)
        .await
        .unwrap()
        .expect("a merge can be undone");
    assert_eq!(
        (
            undone.merge.moved,
            undone.merge.undone_by.as_deref(),
            undone.merge.undo_reason.as_deref()
        ),
        (
            Some(2),
            Some("ana"),
            Some("another entry point, another bug")
        ),
        "who undid it, why, and how many sightings moved"
    );
    // b's two sightings (2,000 and 3,000) leave a: a keeps its own and d's.
    let after = stored(store, &a).await;
    assert_eq!(
        (after.count, after.first_seen, after.last_seen),
        (2, 1_000, 3_500)
    );
    assert_eq!(
        Vec::from_iter(after.commits.iter().map(String::as_str)),
        ["c1000", "c3500"],
        "b's commits leave with it"
    );
    assert_eq!(after, undone.from);
    let own = stored(store, &b).await;
    assert_eq!(
        (own.count, own.first_seen, own.last_seen),
        (2, 2_000, 3_000)
    );
    assert_eq!(Some(&own), undone.own.as_ref());
    assert!(
        store.unmerge(&b, &undo).await.unwrap().is_none(),
        "nothing left to undo"
    );
    let (g, obs, merged) = record(b.0.clone(), 5_000, checkout("worker.py|run_job")).await;
    assert_eq!(
        (&g.key, obs, merged, g.count),
        (&b, Observation::Recurrence, None, 3),
        "undone: counted in its own group"
    );
    let (g, _, merged) = record(b.0.clone(), 6_000, checkout("worker.py|run_job")).await;
    assert_eq!((&g.key, merged), (&b, None), "and never merged again");
    let history = store.merges(&a).await.unwrap();
    assert_eq!(history.len(), 2, "{history:?}");
    assert_eq!(
        (history[0].undone_at, history[0].undone_by.as_deref()),
        (Some(4_000), Some("ana")),
        "undone merges stay listed, with who undid them"
    );
    // Another key like b's own group now joins it: b's group kept b's profile.
    let e = GroupKey(format!("stack:{tag}:merge-e"));
    let (g, _, merged_e) = record(e.0.clone(), 6_500, checkout("worker.py|run_job")).await;
    assert_eq!(
        (&g.key, merged_e.map(|m| m.group_key)),
        (&b, Some(b.clone()))
    );

    let c = GroupKey(format!("stack:{tag}:merge-c"));
    let (g, obs, merged) = record(
        c.0.clone(),
        7_000,
        profile(&["billing.py|refund", "cli.py|go"]),
    )
    .await;
    assert_eq!(
        (&g.key, obs, merged),
        (&c, Observation::New, None),
        "unlike any group: its own"
    );
}
