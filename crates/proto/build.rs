//! Compiles every `.proto` under the workspace's `proto/` folder with protox
//! (pure Rust, no protoc) and generates prost messages and tonic services.

use std::path::{Path, PathBuf};

fn proto_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            proto_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "proto") {
            out.push(path);
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Read at run time, not baked in with env!: cargo gives one package the
    // same build-script binary in every checkout sharing a target directory
    // (its hashes do not include the path), and a baked path would make it
    // compile the other checkout's .proto files.
    let manifest_dir =
        std::env::var_os("CARGO_MANIFEST_DIR").ok_or("CARGO_MANIFEST_DIR is not set")?;
    let manifest = Path::new(&manifest_dir);
    let root = manifest.join("../../proto");
    let mut files = Vec::new();
    proto_files(&root, &mut files)?;
    files.sort();
    // Relative paths: cargo resolves them against the package being built.
    // Absolute ones would make two checkouts sharing a target directory (a
    // CI clone and a working tree) watch each other's files and reuse stale
    // generated code.
    println!("cargo:rerun-if-changed=../../proto");
    for f in &files {
        let relative = f.strip_prefix(manifest).unwrap_or(f);
        println!("cargo:rerun-if-changed={}", relative.display());
    }
    let descriptors = protox::compile(&files, [&root])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}
