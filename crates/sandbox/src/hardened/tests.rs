//! The hardened lines, limits and settings, without running anything.

use super::tools::Tools;
use super::*;
use std::ffi::OsString;

/// `OsStr` bytes, for tests.
fn strings(line: &[OsString]) -> Vec<String> {
    line.iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect()
}

fn hardening(variant: Variant, root: bool) -> Hardening {
    let bin = |n: &str| Some(PathBuf::from(format!("/usr/bin/{n}")));
    Hardening {
        config: HardenedConfig {
            hidden_paths: vec!["/etc/tracelab".into()],
            ..HardenedConfig::default()
        },
        tools: Tools {
            bwrap: bin("bwrap"),
            unshare: bin("unshare"),
            setpriv: bin("setpriv"),
            prlimit: bin("prlimit"),
            sh: bin("sh"),
            mount: bin("mount"),
            ip: Some(PathBuf::from("/usr/sbin/ip")),
            env: bin("env"),
            truth: bin("true"),
        },
        variant,
        root,
        hidden: vec!["/etc/tracelab".into(), "/root".into()],
        system: vec![
            SystemEntry::Bind("/usr".into()),
            SystemEntry::Symlink {
                target: "usr/bin".into(),
                at: "/bin".into(),
            },
            SystemEntry::Bind("/etc".into()),
        ],
        guarantees: Guarantees::none(),
    }
}

const ARGV: [&str; 3] = ["python3", "-m", "pytest"];

fn line(h: &Hardening) -> String {
    let argv: Vec<String> = ARGV.iter().map(|s| s.to_string()).collect();
    strings(&h.line(Path::new("/w/t"), Path::new("/h"), &argv, &[])).join(" ")
}

#[test]
fn the_specs_variables_reach_only_the_command() {
    let h = hardening(Variant::BwrapRoot, true);
    let argv: Vec<String> = ARGV.iter().map(|s| s.to_string()).collect();
    let env = [("LD_PRELOAD".to_string(), "./evil.so".to_string())];
    let l = strings(&h.line(Path::new("/w/t"), Path::new("/h"), &argv, &env)).join(" ");
    assert!(
        l.ends_with("--core=0 -- /usr/bin/env -- LD_PRELOAD=./evil.so python3 -m pytest"),
        "{l}"
    );
}

const INNER_ROOT: &str = "/usr/bin/setpriv --reuid=10001 --regid=10001 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs \
    /usr/bin/prlimit --cpu=600 --as=4294967296 --nproc=256 --nofile=1024 --fsize=1073741824 --core=0 -- python3 -m pytest";

#[test]
fn bare_line_switches_uid_and_limits() {
    assert_eq!(line(&hardening(Variant::Bare, true)), INNER_ROOT);
    assert_eq!(
        line(&hardening(Variant::Bare, false)),
        "/usr/bin/setpriv --no-new-privs /usr/bin/prlimit --cpu=600 --as=4294967296 --nproc=256 --nofile=1024 --fsize=1073741824 --core=0 -- python3 -m pytest"
    );
}

#[test]
fn bwrap_line_binds_system_folders_worktree_and_git_read_only() {
    let l = line(&hardening(Variant::BwrapRoot, true));
    assert!(
        l.starts_with(
            "/usr/bin/bwrap --unshare-ipc --unshare-pid --unshare-net --unshare-uts --unshare-cgroup-try \
             --die-with-parent --new-session --hostname tracelab-sandbox \
             --ro-bind /usr /usr --symlink usr/bin /bin --ro-bind /etc /etc \
             --proc /proc --dev /dev --tmpfs /tmp"
        ),
        "{l}"
    );
    assert!(
        l.ends_with(&format!(
            "--bind /w/t /w/t --bind /h /h --chdir /w/t -- {INNER_ROOT}"
        )),
        "{l}"
    );
    let user = line(&hardening(
        Variant::BwrapUser {
            disable_userns: true,
        },
        false,
    ));
    assert!(
        user.starts_with("/usr/bin/bwrap --unshare-user --disable-userns --unshare-ipc"),
        "{user}"
    );
}

#[test]
fn unshare_line_passes_paths_as_arguments_not_script_text() {
    let l = line(&hardening(Variant::UnshareRoot, true));
    assert!(
        l.starts_with(
            "/usr/bin/unshare --net --pid --ipc --uts --mount-proc --kill-child -- /usr/bin/sh -c set -eu"
        ),
        "{l}"
    );
    assert!(
        l.ends_with(&format!(
            "sh /usr/bin/mount /usr/sbin/ip /w/t /h /etc/tracelab /root -- {INNER_ROOT}"
        )),
        "{l}"
    );
    let user = line(&hardening(Variant::UnshareUser, false));
    assert!(
        user.starts_with("/usr/bin/unshare --map-root-user --net"),
        "{user}"
    );
    assert!(
        user.contains("-- /usr/bin/unshare --user --mount --map-user="),
        "{user}"
    );
}

#[test]
fn limits_can_be_left_unset_and_are_validated() {
    let limits = Limits {
        cpu_seconds: None,
        address_space_bytes: None,
        ..Limits::default()
    };
    assert_eq!(
        limits.prlimit_args(),
        [
            "--nproc=256",
            "--nofile=1024",
            "--fsize=1073741824",
            "--core=0"
        ]
    );
    assert_eq!(
        Limits::default().summary(),
        "cpu 600 s, address space 4 GiB, processes 256, open files 1024, file size 1 GiB, no core dumps"
    );
    let root_user = HardenedConfig {
        user: (0, 0),
        ..HardenedConfig::default()
    };
    assert!(root_user.validate().is_err());
    let relative = HardenedConfig {
        hidden_paths: vec!["etc/x".into()],
        ..HardenedConfig::default()
    };
    assert!(relative.validate().is_err());
    let tiny = HardenedConfig {
        limits: Limits {
            processes: Some(1),
            ..Limits::default()
        },
        ..HardenedConfig::default()
    };
    assert!(tiny.validate().is_err());
    assert!(HardenedConfig::default().validate().is_ok());
}
