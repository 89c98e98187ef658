//! The worktree hand-over on a real file system (needs root to chown).

use std::os::unix::fs::{MetadataExt, symlink};
use std::path::Path;
use tracelab_sandbox_docker::ownership::Walker;

const SANDBOX: (u32, u32) = (10001, 10001);

fn owner(path: &Path) -> (u32, u32) {
    let meta = std::fs::symlink_metadata(path).unwrap();
    (meta.uid(), meta.gid())
}

#[test]
fn hands_over_everything_but_git_and_never_follows_symlinks() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    if owner(root).0 != 0 {
        eprintln!("skipping: chown needs root");
        return;
    }
    std::fs::create_dir_all(root.join("src/pkg")).unwrap();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::write(root.join("src/pkg/mod.py"), "x = 1\n").unwrap();
    let outside = tempfile::NamedTempFile::new().unwrap();
    symlink(outside.path(), root.join("src/link")).unwrap();

    let mut walker = Walker::default();
    assert_eq!(walker.hand_over(root, SANDBOX.0, SANDBOX.1).unwrap(), 5); // root, src, pkg, mod.py, link
    for path in ["", "src", "src/pkg", "src/pkg/mod.py", "src/link"] {
        assert_eq!(owner(&root.join(path)), SANDBOX, "{path}");
    }
    assert_eq!(owner(&root.join(".git")), (0, 0));
    assert_eq!(owner(&root.join(".git/hooks")), (0, 0));
    assert_eq!(
        owner(outside.path()).0,
        0,
        "the symlink's target must not change owner"
    );

    // Nothing new: nothing to do.
    assert_eq!(walker.hand_over(root, SANDBOX.0, SANDBOX.1).unwrap(), 0);
    // The engine (root) writes a file and a directory between commands.
    std::fs::write(root.join("src/pkg/new.py"), "y = 2\n").unwrap();
    std::fs::create_dir(root.join("generated")).unwrap();
    std::fs::write(root.join("generated/data.txt"), "z\n").unwrap();
    assert_eq!(walker.hand_over(root, SANDBOX.0, SANDBOX.1).unwrap(), 3);
    assert_eq!(owner(&root.join("src/pkg/new.py")), SANDBOX);
    assert_eq!(owner(&root.join("generated/data.txt")), SANDBOX);
}
