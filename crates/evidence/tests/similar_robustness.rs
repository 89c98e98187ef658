//! Similar-issue merging never panics and stays bounded in time, whatever
//! the traces: 10,000-frame inputs, empty and odd frames, random tokens.

use proptest::prelude::*;
use std::time::{Duration, Instant};
use tracelab_evidence::similar::{
    FrameStats, GroupIndex, SimilarityConfig, StackProfile, similarity,
};
use tracelab_evidence::{Failure, FailureKind, Frame, Language, ParseOptions, parse};

fn failure(frames: Vec<Frame>, ty: &str, msg: &str) -> Failure {
    let mut f = Failure::new(FailureKind::Exception, Language::Python);
    f.exception_type = Some(ty.to_owned());
    f.message = msg.to_owned();
    f.frames = frames;
    f
}

fn frame() -> impl Strategy<Value = Frame> {
    (
        proptest::option::of("[a-z/._\\\\:]{0,24}"),
        proptest::option::of("[a-zA-Z_.<>${}]{0,16}"),
        any::<bool>(),
    )
        .prop_map(|(file, function, in_app)| Frame {
            file,
            function,
            line: Some(1),
            in_app,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn scores_are_in_range_and_symmetric(
        a in proptest::collection::vec(frame(), 0..40),
        b in proptest::collection::vec(frame(), 0..40),
        ta in "[A-Za-z.]{0,8}", tb in "[A-Za-z.]{0,8}",
        ma in ".{0,80}", mb in ".{0,80}",
    ) {
        let pa = StackProfile::from_failure(&failure(a, &ta, &ma));
        let pb = StackProfile::from_failure(&failure(b, &tb, &mb));
        let mut stats = FrameStats::new();
        stats.add(&pa);
        stats.add(&pb);
        let cfg = SimilarityConfig::default();
        let ab = similarity(&pa, &pb, &stats, &cfg);
        let ba = similarity(&pb, &pa, &stats, &cfg);
        prop_assert!((0.0..=1.0).contains(&ab.score), "{ab:?}");
        prop_assert!((ab.score - ba.score).abs() < 1e-9);
        prop_assert!(ab.matched.len() <= pa.frames.len().min(pb.frames.len()));
        let mut index = GroupIndex::new(cfg);
        index.insert(&failure(Vec::new(), &ta, &ma), "empty");
        index.insert_profile(tracelab_evidence::GroupKey("a".into()), pa, "a");
        index.insert_profile(tracelab_evidence::GroupKey("b".into()), pb, "b");
        prop_assert!(index.groups().iter().map(|g| g.members.len()).sum::<usize>() == 3);
    }
}

/// 10,000 frames, parsed from text and built directly: each comparison
/// reads at most 64 frames of each trace, so time does not grow with the input.
#[test]
fn ten_thousand_frames_are_bounded() {
    let mut text = String::from("Traceback (most recent call last):\n");
    for i in 0..10_000 {
        text.push_str(&format!(
            "  File \"/app/m{}.py\", line {i}, in f{}\n    x()\n",
            i % 97,
            i % 13
        ));
    }
    text.push_str("RecursionError: maximum recursion depth exceeded\n");
    let parsed = parse(text.as_bytes(), &ParseOptions::default());
    let f = &parsed.failures[0];
    let direct = failure(
        (0..10_000)
            .map(|i| Frame {
                file: Some(format!("src/f{}.rs", i % 101)),
                function: Some(format!("g{}", i % 7)),
                line: Some(i),
                in_app: i % 2 == 0,
            })
            .collect(),
        "panic",
        &"x ".repeat(10_000),
    );
    let started = Instant::now();
    let mut index = GroupIndex::new(SimilarityConfig::default());
    for i in 0..200 {
        index.insert(if i % 2 == 0 { f } else { &direct }, &format!("t{i}"));
    }
    let p = StackProfile::from_failure(&direct);
    assert!(p.frames.len() <= tracelab_evidence::similar::MAX_PROFILE_FRAMES);
    // 200 inserts of 10,000-frame traces; a generous bound on a busy machine.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}

fn key_strategy() -> impl Strategy<Value = String> {
    prop_oneof![Just("k1".to_owned()), Just("k2".to_owned()), "[a-z]{1,3}"]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Inserting and undoing merges in any order never panics, never loses
    /// or duplicates a member, and an undone key never stays merged.
    #[test]
    fn the_merge_and_its_undoing_keep_every_member(
        ops in proptest::collection::vec(
            (key_strategy(), proptest::collection::vec(frame(), 0..12), any::<bool>()),
            0..40,
        ),
    ) {
        let mut index = GroupIndex::new(SimilarityConfig::default());
        let mut inserted = 0usize;
        for (i, (key, frames, undo)) in ops.into_iter().enumerate() {
            let key = tracelab_evidence::GroupKey(key);
            if undo {
                index.unmerge(&key);
                for g in index.groups() {
                    for m in &g.members {
                        prop_assert!(m.key != key || g.id == key || m.merge.is_some() || g.members.iter().any(|o| o.key == g.id));
                    }
                }
            } else {
                let p = StackProfile::from_failure(&failure(frames, "KeyError", "'email'"));
                let a = index.insert_profile(key.clone(), p, &format!("t{i}"));
                prop_assert_eq!(&a.exact_key, &key);
                inserted += 1;
            }
            let members: usize = index.groups().iter().map(|g| g.members.len()).sum();
            prop_assert_eq!(members, inserted);
            prop_assert!(index.groups().iter().all(|g| !g.members.is_empty()));
        }
    }
}

/// A 100 MB message and 1 MB frame names (a hostile log record, not a
/// parsed trace: parsing caps lines) cost what a real trace costs: the
/// profile reads at most 2 KB of the message and 256 bytes of a name.
#[test]
fn a_hundred_megabyte_failure_is_compared_in_bounded_time() {
    let huge = "word ".repeat(20 * 1024 * 1024);
    let name = "f".repeat(1 << 20);
    let mut frames: Vec<Frame> = (0..10_000)
        .map(|i| Frame {
            file: Some(format!("app/m{}.py", i % 31)),
            function: Some(format!("g{}", i % 17)),
            line: Some(i),
            in_app: true,
        })
        .collect();
    frames.push(Frame {
        file: Some(format!("/{name}/x.py")),
        function: Some(name.clone()),
        line: None,
        in_app: true,
    });
    let big = failure(frames, "ImportError", &huge);
    let started = Instant::now();
    let p = StackProfile::from_failure(&big);
    assert!(p.frames.len() <= tracelab_evidence::similar::MAX_PROFILE_FRAMES);
    assert!(
        p.frames.iter().all(|t| t.key.len() <= 600),
        "a token is capped"
    );
    let mut index = GroupIndex::new(SimilarityConfig::default());
    for i in 0..20 {
        // Another exact key each time: every insert is compared by similarity.
        let key = tracelab_evidence::GroupKey(format!("k{i}"));
        index.insert_profile(key, StackProfile::from_failure(&big), &format!("t{i}"));
    }
    assert_eq!(index.groups().len(), 1, "identical profiles merge");
    // Linear in the members compared, not in the input: seconds in a debug
    // build on a busy machine, with a wide margin.
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}
