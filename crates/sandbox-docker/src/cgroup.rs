//! Reading a container's cgroup files from the host, when the host shares
//! its view with the daemon (a local engine): counting the container's
//! processes and its OOM kills costs a file read instead of an exec.
//! When the files are not visible (e.g. the verifier itself runs in a
//! container), the sandbox falls back to asking inside the container.

use std::path::{Path, PathBuf};

/// Processes the container keeps when idle: the init and `sleep infinity`.
pub(crate) const KEEPER_PROCESSES: u64 = 2;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Cgroup {
    /// `pids.current` of the container's pids cgroup.
    pub(crate) pids_current: Option<PathBuf>,
    /// v1 `memory.oom_control` or v2 `memory.events` (both have `oom_kill N`).
    pub(crate) oom_counter: Option<PathBuf>,
}

impl Cgroup {
    /// Finds the files of the process `host_pid` (the container's init, as
    /// the daemon reports it) under `sys_root` (normally `/sys/fs/cgroup`).
    pub(crate) fn discover(proc_root: &Path, sys_root: &Path, host_pid: i64) -> Self {
        let Ok(text) = std::fs::read_to_string(proc_root.join(format!("{host_pid}/cgroup"))) else {
            return Self::default();
        };
        let found = Self::candidates(&text, sys_root);
        Self {
            pids_current: found.pids_current.filter(|p| p.is_file()),
            oom_counter: found.oom_counter.filter(|p| p.is_file()),
        }
    }

    /// Where the files would be, from the text of `/proc/<pid>/cgroup`: the
    /// v1 controllers' hierarchies first, else the unified (v2) one.
    fn candidates(text: &str, sys_root: &Path) -> Self {
        let mut found = Self::default();
        let mut v2: Option<PathBuf> = None;
        for line in text.lines() {
            let mut parts = line.splitn(3, ':');
            let (Some(hierarchy), Some(controllers), Some(path)) =
                (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let relative = path.trim_start_matches('/');
            if hierarchy == "0" && controllers.is_empty() {
                v2 = Some(sys_root.join(relative));
                continue;
            }
            for controller in controllers.split(',') {
                match controller {
                    "pids" => {
                        found.pids_current =
                            Some(sys_root.join("pids").join(relative).join("pids.current"))
                    }
                    "memory" => {
                        found.oom_counter = Some(
                            sys_root
                                .join("memory")
                                .join(relative)
                                .join("memory.oom_control"),
                        )
                    }
                    _ => {}
                }
            }
        }
        if let Some(dir) = v2 {
            if found.pids_current.is_none() {
                found.pids_current = Some(dir.join("pids.current"));
            }
            if found.oom_counter.is_none() {
                found.oom_counter = Some(dir.join("memory.events"));
            }
        }
        found
    }

    /// Processes (and threads) in the container now, when readable.
    pub(crate) fn pids(&self) -> Option<u64> {
        let path = self.pids_current.as_ref()?;
        std::fs::read_to_string(path).ok()?.trim().parse().ok()
    }

    /// The `oom_kill` counter, when readable.
    pub(crate) fn oom_kills(&self) -> Option<u64> {
        let path = self.oom_counter.as_ref()?;
        parse_oom_kills(&std::fs::read_to_string(path).ok()?)
    }
}

/// Parses `oom_kill N` out of cgroup v2 `memory.events` or v1 `memory.oom_control`.
pub(crate) fn parse_oom_kills(text: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        line.strip_prefix("oom_kill ")
            .and_then(|n| n.trim().parse().ok())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, pids: Option<&str>, oom: Option<&str>) {
        let found = Cgroup::candidates(text, Path::new("/sys/fs/cgroup"));
        assert_eq!(found.pids_current, pids.map(PathBuf::from), "{text}");
        assert_eq!(found.oom_counter, oom.map(PathBuf::from), "{text}");
    }

    #[test]
    fn finds_v1_files_before_the_unified_hierarchy() {
        check(
            "8:pids:/docker/abc\n4:memory:/docker/abc\n1:cpu,cpuacct:/docker/abc\n0::/docker/abc\n",
            Some("/sys/fs/cgroup/pids/docker/abc/pids.current"),
            Some("/sys/fs/cgroup/memory/docker/abc/memory.oom_control"),
        );
        check(
            "0::/system.slice/docker-abc.scope\n",
            Some("/sys/fs/cgroup/system.slice/docker-abc.scope/pids.current"),
            Some("/sys/fs/cgroup/system.slice/docker-abc.scope/memory.events"),
        );
        check("garbage\n", None, None);
    }

    #[test]
    fn reads_oom_counters_of_both_cgroup_versions() {
        assert_eq!(
            parse_oom_kills("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n"),
            Some(1)
        );
        assert_eq!(
            parse_oom_kills("oom_kill_disable 0\nunder_oom 0\noom_kill 4\n"),
            Some(4)
        );
        assert_eq!(
            parse_oom_kills("cat: nope: No such file or directory\n"),
            None
        );
    }
}
