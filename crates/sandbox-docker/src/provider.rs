//! Opens sandboxes: one locked-down container per worktree, from a pinned image.

use crate::config::{DockerConfig, Ownership, WORKDIR};
use crate::error::{docker as docker_error, force_remove, is_not_found};
use crate::ownership;
use crate::recipe;
use crate::sandbox::DockerSandbox;
use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig, Mount, MountType, ResourcesUlimits};
use bollard::query_parameters::{BuildImageOptions, CreateContainerOptions, ListContainersOptions};
use futures_util::StreamExt;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tracelab_domain::ports::{Sandbox, SandboxProvider};
use tracelab_domain::{Error, ErrorKind, Result};

/// Label on everything this crate creates.
pub const LABEL_MANAGED: &str = "tracelab.managed";
/// The `label` given to `open` (ties a container to its investigation).
pub const LABEL_LABEL: &str = "tracelab.label";
/// Pid of the process that created the container, for [`Reap::Orphans`].
pub const LABEL_OWNER_PID: &str = "tracelab.owner_pid";
/// `<boot id>/<pid namespace>` of the creating process: whose pids
/// [`LABEL_OWNER_PID`] can be checked against (see [`Reap::Orphans`]).
pub const LABEL_OWNER_NS: &str = "tracelab.owner_ns";
/// Image id the container was created from.
pub const LABEL_IMAGE: &str = "tracelab.image";

/// Which leftover containers [`DockerSandboxProvider::reap`] removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reap {
    /// Managed containers whose owner process is gone (what a crashed
    /// verifier leaves): same boot and pid namespace as this process and the
    /// owner pid no longer exists, or created before the last boot.
    /// Containers of verifiers in other pid namespaces (other pods sharing
    /// the daemon) are left alone. Run it at start-up.
    Orphans,
    /// Managed containers whose label starts with the prefix, whoever owns them.
    LabelPrefix(String),
    /// Every managed container.
    All,
}

/// A container this crate manages, as Docker lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagedContainer {
    pub id: String,
    pub label: String,
    pub owner_pid: Option<u32>,
    /// [`LABEL_OWNER_NS`], when set.
    pub owner_ns: Option<String>,
    /// Docker's state: `running`, `exited`, `created`...
    pub state: String,
}

/// Opens [`DockerSandbox`]es. Built once per process with
/// [`DockerSandboxProvider::connect`]; cheap to clone.
#[derive(Clone)]
pub struct DockerSandboxProvider {
    docker: Docker,
    config: Arc<DockerConfig>,
    image_id: String,
}

impl std::fmt::Debug for DockerSandboxProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerSandboxProvider")
            .field("config", &self.config)
            .field("image_id", &self.image_id)
            .finish()
    }
}

fn clamp_i32(v: i64) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

async fn runtimes(docker: &Docker) -> Result<Vec<String>> {
    let info = docker.info().await.map_err(|e| docker_error("info", e))?;
    let mut names: Vec<String> = info.runtimes.unwrap_or_default().into_keys().collect();
    names.sort();
    Ok(names)
}

/// `no-new-privileges`, and the seccomp profile when one is configured
/// (Docker takes the profile's JSON text, not a path).
fn security_options(config: &DockerConfig) -> Vec<String> {
    let mut options = vec!["no-new-privileges:true".to_string()];
    if let Some(profile) = &config.seccomp_profile {
        options.push(format!("seccomp={profile}"));
    }
    options
}

impl DockerSandboxProvider {
    /// Validates the config, checks that the daemon answers (negotiating the
    /// API version down to the daemon's), and pins the image to its id.
    /// `Unavailable` when no daemon answers; `NotFound` when the image is missing.
    pub async fn connect(config: DockerConfig) -> Result<Self> {
        config.validate()?;
        let docker = config
            .client()?
            .negotiate_version()
            .await
            .map_err(|e| docker_error("version", e))?;
        let image_id = image_id(&docker, &config.image).await?;
        if let Some(runtime) = &config.runtime {
            let known = runtimes(&docker).await?;
            if !known.contains(runtime) {
                return Err(Error::invalid(format!(
                    "sandbox runtime {runtime:?} is not registered with the Docker engine (it has: {}); \
                     register it in the engine's daemon.json (gVisor: `runsc install`) or unset sandbox.runtime",
                    known.join(", ")
                )));
            }
        }
        tracing::info!(image = %config.image, %image_id, runtime = config.runtime.as_deref().unwrap_or("default"), "docker sandboxes ready");
        Ok(Self {
            docker,
            config: Arc::new(config),
            image_id,
        })
    }

    pub fn config(&self) -> &DockerConfig {
        &self.config
    }

    /// The container runtimes the engine has registered (`runc`, `runsc`, …).
    pub async fn runtimes(&self) -> Result<Vec<String>> {
        runtimes(&self.docker).await
    }

    /// The pinned image id (`sha256:...`) new sandboxes run.
    pub fn image_id(&self) -> &str {
        &self.image_id
    }

    /// Builds the repository's recipe (`dockerfile`, relative to `context`)
    /// on top of this provider's image, or reuses it when an image with the
    /// same content hash exists, and returns a provider that opens sandboxes
    /// from it. The build runs without network; `FROM` must name this
    /// provider's image (tag or id) or an earlier stage.
    pub async fn with_recipe(&self, context: &Path, dockerfile: &str) -> Result<Self> {
        recipe::check_dockerfile_path(dockerfile)?;
        let text = std::fs::read_to_string(context.join(dockerfile))
            .map_err(|e| Error::invalid(format!("cannot read recipe {dockerfile:?}: {e}")))?;
        recipe::check_from(&text, &[self.config.image.as_str(), self.image_id.as_str()])?;
        let root = context.to_path_buf();
        let packed = tokio::task::spawn_blocking(move || recipe::pack(&root))
            .await
            .map_err(|e| Error::internal(format!("packing the recipe context failed: {e}")))?
            .map_err(|e| {
                Error::invalid(format!(
                    "cannot pack recipe context {}: {e}",
                    context.display()
                ))
            })?;
        let tag = recipe::tag(&packed, dockerfile, &self.image_id);
        let image_id = match self.docker.inspect_image(&tag).await {
            Ok(found) => found
                .id
                .ok_or_else(|| Error::internal("docker returned an image without id"))?,
            Err(error) if is_not_found(&error) => self.build(&tag, dockerfile, packed.tar).await?,
            Err(error) => return Err(docker_error("inspect image", error)),
        };
        let config = DockerConfig {
            image: tag,
            ..(*self.config).clone()
        };
        Ok(Self {
            docker: self.docker.clone(),
            config: Arc::new(config),
            image_id,
        })
    }

    async fn build(&self, tag: &str, dockerfile: &str, tar: Vec<u8>) -> Result<String> {
        tracing::info!(%tag, %dockerfile, "building sandbox recipe");
        let options = BuildImageOptions {
            dockerfile: dockerfile.to_string(),
            t: Some(tag.to_string()),
            rm: true,
            forcerm: true,
            pull: None,
            networkmode: Some("none".to_string()),
            // The build's containers get the sandbox's limits: a recipe is
            // the repository's code too. (The API takes 32-bit byte counts.)
            memory: Some(clamp_i32(self.config.memory_bytes())),
            memswap: Some(clamp_i32(self.config.memory_bytes())),
            cpuperiod: Some(100_000),
            cpuquota: Some(clamp_i32((self.config.cpus * 100_000.0).round() as i64)),
            labels: Some(HashMap::from([(
                LABEL_MANAGED.to_string(),
                "true".to_string(),
            )])),
            ..Default::default()
        };
        let mut stream =
            self.docker
                .build_image(options, None, Some(bollard::body_full(tar.into())));
        let mut log: Vec<String> = Vec::new();
        while let Some(item) = stream.next().await {
            let info = item.map_err(|e| match e {
                bollard::errors::Error::DockerStreamError { error } => {
                    Error::invalid(format!("recipe build failed: {error}"))
                }
                other => docker_error("build image", other),
            })?;
            if let Some(detail) = info.error_detail {
                let tail = log
                    .iter()
                    .rev()
                    .take(20)
                    .rev()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("");
                return Err(Error::invalid(format!(
                    "recipe build failed: {}\n{tail}",
                    detail.message.unwrap_or_default()
                )));
            }
            if let Some(line) = info.stream {
                log.push(line);
            }
        }
        let built = self
            .docker
            .inspect_image(tag)
            .await
            .map_err(|e| docker_error("inspect built image", e))?;
        built
            .id
            .ok_or_else(|| Error::internal("docker returned an image without id"))
    }

    /// Opens a sandbox and returns the concrete type (for [`crate::run_parallel`]
    /// or diagnostics); [`SandboxProvider::open`] boxes it.
    pub async fn open_docker(&self, worktree: &Path, label: &str) -> Result<DockerSandbox> {
        let worktree = worktree.canonicalize().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::not_found(format!("worktree {} does not exist", worktree.display()))
            } else {
                Error::invalid(format!(
                    "worktree {} is not usable: {e}",
                    worktree.display()
                ))
            }
        })?;
        if !worktree.is_dir() {
            return Err(Error::invalid(format!(
                "worktree {} is not a directory",
                worktree.display()
            )));
        }
        let mut walker = ownership::Walker::default();
        if self.config.ownership != Ownership::Leave {
            walker = crate::environment::hand_over(walker, &worktree, self.config.user).await?;
        }
        let body = self.container_body(&worktree, label);
        let name = container_name(label);
        let created = self
            .docker
            .create_container(
                Some(CreateContainerOptions {
                    name: Some(name),
                    platform: String::new(),
                }),
                body,
            )
            .await
            .map_err(|e| docker_error("create container", e))?;
        tracing::debug!(container = %created.id, %label, worktree = %worktree.display(), "sandbox container created");
        DockerSandbox::start(
            self.docker.clone(),
            self.config.clone(),
            created.id,
            self.image_id.clone(),
            worktree,
            label.to_string(),
            walker,
        )
        .await
    }

    fn container_body(&self, worktree: &Path, label: &str) -> ContainerCreateBody {
        let config = &self.config;
        let mut mounts = vec![Mount {
            target: Some(WORKDIR.to_string()),
            source: Some(worktree.display().to_string()),
            typ: Some(MountType::BIND),
            read_only: Some(false),
            ..Default::default()
        }];
        // `.git` (a directory, or the file of a linked worktree) is read-only
        // and, being a mount point, cannot be renamed or replaced either.
        let git = worktree.join(".git");
        if git.symlink_metadata().is_ok() {
            mounts.push(Mount {
                target: Some(format!("{WORKDIR}/.git")),
                source: Some(git.display().to_string()),
                typ: Some(MountType::BIND),
                read_only: Some(true),
                ..Default::default()
            });
        }
        let labels = HashMap::from([
            (LABEL_MANAGED.to_string(), "true".to_string()),
            (LABEL_LABEL.to_string(), label.to_string()),
            (LABEL_OWNER_PID.to_string(), std::process::id().to_string()),
            (LABEL_OWNER_NS.to_string(), owner_ns()),
            (LABEL_IMAGE.to_string(), self.image_id.clone()),
        ]);
        let tmpfs = HashMap::from([(
            "/tmp".to_string(),
            format!("rw,nosuid,nodev,size={}m,mode=1777", config.tmpfs_mib),
        )]);
        let host_config = HostConfig {
            mounts: Some(mounts),
            tmpfs: Some(tmpfs),
            network_mode: Some("none".to_string()),
            cap_drop: Some(vec!["ALL".to_string()]),
            security_opt: Some(security_options(config)),
            runtime: config.runtime.clone(),
            storage_opt: config
                .storage_size_mib
                .map(|mib| HashMap::from([("size".to_string(), format!("{mib}M"))])),
            readonly_rootfs: Some(true),
            init: Some(true),
            ipc_mode: Some("private".to_string()),
            nano_cpus: Some(config.nano_cpus()),
            memory: Some(config.memory_bytes()),
            memory_swap: Some(config.memory_bytes()),
            pids_limit: Some(config.pids_limit),
            ulimits: Some(vec![
                ResourcesUlimits {
                    name: Some("core".to_string()),
                    soft: Some(0),
                    hard: Some(0),
                },
                ResourcesUlimits {
                    name: Some("nofile".to_string()),
                    soft: Some(config.open_files as i64),
                    hard: Some(config.open_files as i64),
                },
            ]),
            ..Default::default()
        };
        let (keeper_uid, keeper_gid) = config.keeper_user;
        ContainerCreateBody {
            image: Some(self.image_id.clone()),
            user: Some(format!("{keeper_uid}:{keeper_gid}")),
            working_dir: Some(WORKDIR.to_string()),
            entrypoint: Some(vec!["sleep".to_string()]),
            cmd: Some(vec!["infinity".to_string()]),
            env: Some(crate::environment::environment(&[])),
            labels: Some(labels),
            network_disabled: Some(true),
            host_config: Some(host_config),
            ..Default::default()
        }
    }

    /// Managed containers, optionally only those whose label starts with `prefix`.
    pub async fn managed_containers(&self, prefix: Option<&str>) -> Result<Vec<ManagedContainer>> {
        let filters = HashMap::from([("label".to_string(), vec![format!("{LABEL_MANAGED}=true")])]);
        let options = ListContainersOptions {
            all: true,
            filters: Some(filters),
            ..Default::default()
        };
        let listed = self
            .docker
            .list_containers(Some(options))
            .await
            .map_err(|e| docker_error("list containers", e))?;
        Ok(listed
            .into_iter()
            .filter_map(|c| {
                let labels = c.labels.unwrap_or_default();
                let label = labels.get(LABEL_LABEL).cloned().unwrap_or_default();
                if prefix.is_some_and(|p| !label.starts_with(p)) {
                    return None;
                }
                Some(ManagedContainer {
                    id: c.id?,
                    owner_pid: labels.get(LABEL_OWNER_PID).and_then(|p| p.parse().ok()),
                    owner_ns: labels.get(LABEL_OWNER_NS).cloned(),
                    label,
                    state: c.state.map(|s| s.to_string()).unwrap_or_default(),
                })
            })
            .collect())
    }

    /// Removes leftover managed containers; returns how many went.
    pub async fn reap(&self, scope: Reap) -> Result<usize> {
        let prefix = match &scope {
            Reap::LabelPrefix(prefix) => Some(prefix.as_str()),
            _ => None,
        };
        let mut removed = 0;
        for container in self.managed_containers(prefix).await? {
            if scope == Reap::Orphans && !is_orphan(&container, &owner_ns()) {
                continue;
            }
            if force_remove(&self.docker, &container.id)
                .await
                .map_err(|e| docker_error("remove container", e))?
            {
                removed += 1;
            }
            tracing::info!(container = %container.id, label = %container.label, "reaped sandbox container");
        }
        Ok(removed)
    }
}

/// Whether a process with that pid exists in this pid namespace (`/proc`).
fn process_alive(pid: u32) -> bool {
    pid == std::process::id() || PathBuf::from(format!("/proc/{pid}")).exists()
}

/// `<boot id>/<pid namespace inode>` of this process (`?` parts when unknown).
fn owner_ns() -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let pidns = std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let pidns = pidns.trim_start_matches("pid:[").trim_end_matches(']');
    let part = |s: &str| {
        if s.is_empty() {
            "?".to_string()
        } else {
            s.to_string()
        }
    };
    format!("{}/{}", part(boot.trim()), part(pidns))
}

/// See [`Reap::Orphans`]. `ours` is [`owner_ns`] of this process.
fn is_orphan(container: &ManagedContainer, ours: &str) -> bool {
    let alive = || container.owner_pid.is_some_and(process_alive);
    let Some(theirs) = container.owner_ns.as_deref() else {
        return !alive();
    };
    if theirs == ours {
        return !alive();
    }
    let boot = |ns: &str| ns.split('/').next().unwrap_or_default().to_string();
    // Another boot: its owner cannot be running. Same boot, another pid
    // namespace: not ours to judge.
    boot(theirs) != boot(ours) && boot(theirs) != "?"
}

async fn image_id(docker: &Docker, image: &str) -> Result<String> {
    match docker.inspect_image(image).await {
        Ok(found) => found
            .id
            .ok_or_else(|| Error::internal(format!("docker returned image {image} without id"))),
        Err(error) if is_not_found(&error) => Err(Error::new(
            ErrorKind::NotFound,
            format!(
                "sandbox image {image} is missing; build it with deploy/sandbox/build-base-image.sh (images cannot be pulled)"
            ),
        )),
        Err(error) => Err(docker_error("inspect image", error)),
    }
}

/// `tracelab-<label>-<nanos>`: readable in `docker ps`, unique enough, valid.
fn container_name(label: &str) -> String {
    let clean: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("tracelab-{clean}-{:x}-{nanos:x}", std::process::id())
}

#[async_trait::async_trait]
impl SandboxProvider for DockerSandboxProvider {
    fn name(&self) -> &str {
        "docker"
    }

    async fn open(&self, worktree: &Path, label: &str) -> Result<Box<dyn Sandbox>> {
        Ok(Box::new(self.open_docker(worktree, label).await?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orphans_are_judged_only_in_our_own_namespace() {
        let ours = "boot-a/4026531836";
        let container = |pid: u32, ns: Option<&str>| ManagedContainer {
            id: "c".into(),
            label: "l".into(),
            owner_pid: Some(pid),
            owner_ns: ns.map(String::from),
            state: "running".into(),
        };
        let me = std::process::id();
        // Same namespace: alive owner keeps it, a dead one (pid beyond pid_max) does not.
        assert!(!is_orphan(&container(me, Some(ours)), ours));
        assert!(is_orphan(&container(u32::MAX, Some(ours)), ours));
        // Another pod on the same boot: never ours to reap.
        assert!(!is_orphan(
            &container(u32::MAX, Some("boot-a/4026532000")),
            ours
        ));
        // Created before a reboot: its owner is gone.
        assert!(is_orphan(&container(me, Some("boot-b/4026531836")), ours));
        // Unlabelled (older) containers: judged by pid.
        assert!(is_orphan(&container(u32::MAX, None), ours));
    }

    #[test]
    fn container_names_are_valid() {
        let name = container_name("inv 42/h1");
        assert!(name.starts_with("tracelab-inv-42-h1-"));
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        );
    }
}
