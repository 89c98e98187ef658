//! A repository's own sandbox recipe: a Dockerfile built on the local base
//! image, tagged by the hash of everything that goes into it so that every
//! hypothesis of a repository reuses the same image.

use sha2::{Digest, Sha256};
use std::io;
use std::path::{Component, Path};
use tracelab_domain::{Error, Result};

/// Repository name of recipe images; the tag is a content hash.
pub const RECIPE_REPOSITORY: &str = "tracelab-sandbox-recipe";

/// A build context packed as a deterministic tar (sorted paths, zeroed owners
/// and times, `.git` left out) and its content hash.
#[derive(Debug)]
pub(crate) struct Context {
    pub(crate) tar: Vec<u8>,
    pub(crate) sha256: String,
}

/// Checks that `dockerfile` is a relative path inside the context.
pub(crate) fn check_dockerfile_path(dockerfile: &str) -> Result<()> {
    let path = Path::new(dockerfile);
    if dockerfile.is_empty()
        || !path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(Error::invalid(format!(
            "recipe Dockerfile {dockerfile:?} must be a relative path inside the context"
        )));
    }
    Ok(())
}

/// Packs `root` for the Docker build API.
pub(crate) fn pack(root: &Path) -> io::Result<Context> {
    let mut paths = Vec::new();
    collect(root, Path::new(""), &mut paths)?;
    paths.sort();
    let mut builder = tar::Builder::new(Vec::new());
    builder.mode(tar::HeaderMode::Deterministic);
    builder.follow_symlinks(false);
    for relative in &paths {
        builder.append_path_with_name(root.join(relative), relative)?;
    }
    let tar = builder.into_inner()?;
    let sha256 = hex(&Sha256::digest(&tar));
    Ok(Context { tar, sha256 })
}

fn collect(root: &Path, relative: &Path, out: &mut Vec<std::path::PathBuf>) -> io::Result<()> {
    for entry in std::fs::read_dir(root.join(relative))? {
        let entry = entry?;
        if entry.file_name() == ".git" {
            continue;
        }
        let path = relative.join(entry.file_name());
        let kind = entry.file_type()?;
        out.push(path.clone());
        if kind.is_dir() {
            collect(root, &path, out)?;
        }
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The tag of a recipe image: context, Dockerfile name and base image id
/// all count, so a rebuilt base yields a new tag.
pub(crate) fn tag(context: &Context, dockerfile: &str, base_image_id: &str) -> String {
    let mut hasher = Sha256::new();
    for part in [context.sha256.as_str(), dockerfile, base_image_id] {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    format!("{RECIPE_REPOSITORY}:{}", &hex(&hasher.finalize())[..16])
}

/// Refuses a Dockerfile whose stages start from anything but the local base
/// image (by reference or id), an earlier stage or `scratch`: nothing can be
/// pulled, and a recipe must not smuggle in another image.
pub(crate) fn check_from(dockerfile: &str, allowed: &[&str]) -> Result<()> {
    let mut stages: Vec<String> = Vec::new();
    let mut froms = 0;
    for line in logical_lines(dockerfile) {
        let mut words = line.split_whitespace();
        if !words.next().is_some_and(|w| w.eq_ignore_ascii_case("FROM")) {
            continue;
        }
        froms += 1;
        let mut words = words.skip_while(|w| w.starts_with("--"));
        let image = words
            .next()
            .ok_or_else(|| Error::invalid("recipe has a FROM without an image"))?;
        let known = allowed.contains(&image)
            || image.eq_ignore_ascii_case("scratch")
            || stages.iter().any(|s| s.eq_ignore_ascii_case(image));
        if image.contains('$') || !known {
            return Err(Error::invalid(format!(
                "recipe FROM {image:?} refused: a recipe must build on the local base image ({}); images cannot be pulled",
                allowed.first().copied().unwrap_or_default()
            )));
        }
        if words.next().is_some_and(|w| w.eq_ignore_ascii_case("AS"))
            && let Some(name) = words.next()
        {
            stages.push(name.to_string());
        }
    }
    if froms == 0 {
        return Err(Error::invalid("recipe Dockerfile has no FROM line"));
    }
    Ok(())
}

/// Joins `\`-continued lines and drops comments.
fn logical_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = String::new();
    for raw in text.lines() {
        let trimmed = raw.trim();
        if current.is_empty() && trimmed.starts_with('#') {
            continue;
        }
        if let Some(body) = trimmed.strip_suffix('\\') {
            current.push_str(body);
            current.push(' ');
        } else {
            current.push_str(trimmed);
            lines.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        lines.push(current);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: [&str; 2] = ["tracelab-sandbox-base:bookworm", "sha256:abc"];

    #[test]
    fn accepts_the_base_image_and_earlier_stages() {
        check_from("FROM tracelab-sandbox-base:bookworm\nRUN true\n", &BASE).unwrap();
        check_from("# c\nfrom --platform=linux/amd64 sha256:abc AS build\nFROM build\nCOPY --from=build /x /y\n", &BASE)
            .unwrap();
        check_from("FROM scratch\n", &BASE).unwrap();
    }

    #[test]
    fn refuses_other_images() {
        let refused = |text: &str| check_from(text, &BASE).unwrap_err().message;
        assert!(refused("FROM python:3.12\n").contains("refused"));
        assert!(refused("ARG B=x\nFROM $B\n").contains("refused"));
        assert!(
            refused("FROM tracelab-sandbox-base:bookworm AS a\nFROM \\\n  debian\n")
                .contains("\"debian\"")
        );
        assert!(refused("RUN true\n").contains("no FROM"));
        assert!(check_dockerfile_path("../Dockerfile").is_err());
        assert!(check_dockerfile_path("/etc/Dockerfile").is_err());
        check_dockerfile_path("ci/sandbox.Dockerfile").unwrap();
    }

    #[test]
    fn tags_change_with_every_input() {
        let context = Context {
            tar: Vec::new(),
            sha256: "00".into(),
        };
        let a = tag(&context, "Dockerfile", "sha256:abc");
        assert!(
            a.starts_with("tracelab-sandbox-recipe:") && a.len() == RECIPE_REPOSITORY.len() + 17
        );
        assert_ne!(a, tag(&context, "Dockerfile", "sha256:abd"));
        assert_ne!(a, tag(&context, "other", "sha256:abc"));
    }
}
