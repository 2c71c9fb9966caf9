//! The worker images: the Dockerfiles in `docker/` (embedded, so an installed
//! `agent-runner` can build them anywhere), their tags, and the `docker build` commands of
//! `agent-runner image build KIND`. The original named images it never shipped (AR-M22);
//! here each worker kind's default image is one this module builds.
//!
//! A kind's image is its CLI, pinned by the `ARG CLI_VERSION=` line of its Dockerfile (the
//! one place the version is written; the tag is read from it), on a shared base with git
//! and the common toolchains (`docker/base/Dockerfile`, tagged by a hash of its text, so a
//! changed base is a new tag).

use sha2::Digest as _;

use super::worker::{WorkerConfig, WorkerKind};

const BASE_DOCKERFILE: &str = include_str!("../../docker/base/Dockerfile");

/// One worker kind's image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerImage {
    pub kind: WorkerKind,
    /// The short name used on the command line and in the tag: `codex`, `claude`, ...
    pub name: &'static str,
    pub dockerfile: &'static str,
}

/// Every kind that has an image of its own (a `command` worker names its image).
const IMAGES: &[WorkerImage] = &[
    WorkerImage {
        kind: WorkerKind::CodexCli,
        name: "codex",
        dockerfile: include_str!("../../docker/codex/Dockerfile"),
    },
    WorkerImage {
        kind: WorkerKind::ClaudeCode,
        name: "claude",
        dockerfile: include_str!("../../docker/claude/Dockerfile"),
    },
    WorkerImage {
        kind: WorkerKind::GeminiCli,
        name: "gemini",
        dockerfile: include_str!("../../docker/gemini/Dockerfile"),
    },
];

/// The images `image build` knows.
pub fn all() -> &'static [WorkerImage] {
    IMAGES
}

/// The image of a worker kind, if it has one.
pub fn for_kind(kind: WorkerKind) -> Option<&'static WorkerImage> {
    IMAGES.iter().find(|i| i.kind == kind)
}

/// `codex`, or the kind's name as in task files (`codex-cli`).
pub fn by_name(name: &str) -> Option<&'static WorkerImage> {
    IMAGES
        .iter()
        .find(|i| i.name == name || i.kind.name() == name)
}

/// The image a kind's worker runs in when the task names none: the tag `image build`
/// gives it; for Cursor's CLI, which has no Dockerfile here yet (it installs with its own
/// script, not a pinned npm package), the same naming with `latest`; for a `command`
/// worker a plain Debian (it names its own image in practice).
pub fn default_image(kind: WorkerKind) -> String {
    match for_kind(kind) {
        Some(image) => image.tag(),
        None if kind == WorkerKind::CursorCli => "agent-runner-cursor:latest".to_string(),
        None => "debian:bookworm-slim".to_string(),
    }
}

/// The image a worker runs in: the task's `docker_image`, or its kind's default.
pub fn image_of(config: &WorkerConfig) -> String {
    config
        .docker_image
        .clone()
        .unwrap_or_else(|| default_image(config.kind))
}

/// The base image's tag: `agent-runner-base:<12 hex digits of its Dockerfile's hash>`.
pub fn base_tag() -> String {
    let digest = sha2::Sha256::digest(BASE_DOCKERFILE.as_bytes());
    let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("agent-runner-base:{hex}")
}

impl WorkerImage {
    /// The pinned CLI version: the `ARG CLI_VERSION=` default of the Dockerfile.
    pub fn cli_version(&self) -> &'static str {
        self.dockerfile
            .lines()
            .find_map(|l| l.trim().strip_prefix("ARG CLI_VERSION="))
            .map_or("unpinned", str::trim)
    }

    /// `agent-runner-codex:0.169.0`.
    pub fn tag(&self) -> String {
        format!("agent-runner-{}:{}", self.name, self.cli_version())
    }
}

/// What `image build` was asked for beyond the kind.
/// A `--ca-cert` file larger than this is refused unread (a CA bundle is some hundred KiB).
pub const MAX_CA_CERT_BYTES: u64 = 4 * 1024 * 1024;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuildOptions {
    /// The tag of the worker image instead of [`WorkerImage::tag`].
    pub tag: Option<String>,
    /// `NODE_IMAGE` of the base: another image with Node.js 20 or later (a mirror).
    pub base_image: Option<String>,
    /// `KEY=VALUE` build arguments for the base (`EXTRA_PACKAGES=...`).
    pub build_args: Vec<String>,
    /// PEM certificates the base trusts besides the system's (`--ca-cert FILE`).
    pub ca_certs: Vec<String>,
    pub no_cache: bool,
}

/// One `docker build`, reading its Dockerfile on stdin (there is no build context: the
/// Dockerfiles copy nothing in).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildStep {
    pub tag: String,
    /// The arguments after the docker program.
    pub args: Vec<String>,
    pub dockerfile: &'static str,
}

/// A `--build-arg` that is not `KEY=VALUE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadBuildArg(pub String);

impl std::fmt::Display for BadBuildArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "--build-arg {:?} is not KEY=VALUE", self.0)
    }
}

impl std::error::Error for BadBuildArg {}

/// The builds that make `image`: the base, then the worker image on it.
pub fn build_plan(
    image: &WorkerImage,
    options: &BuildOptions,
) -> Result<Vec<BuildStep>, BadBuildArg> {
    let base = base_tag();
    // `--force-rm`: a failed step leaves no intermediate container behind.
    let mut base_args = vec![
        "build".to_string(),
        "--force-rm".into(),
        "--tag".into(),
        base.clone(),
    ];
    if options.no_cache {
        base_args.push("--no-cache".into());
    }
    if let Some(node) = &options.base_image {
        base_args.extend(["--build-arg".into(), format!("NODE_IMAGE={node}")]);
    }
    for arg in &options.build_args {
        let key_ok = arg.split_once('=').is_some_and(|(k, _)| {
            !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        if !key_ok {
            return Err(BadBuildArg(arg.clone()));
        }
        base_args.extend(["--build-arg".into(), arg.clone()]);
    }
    if !options.ca_certs.is_empty() {
        let pem: Vec<&str> = options.ca_certs.iter().map(|c| c.trim()).collect();
        base_args.extend([
            "--build-arg".into(),
            format!("EXTRA_CA_CERTS={}", pem.join("\n")),
        ]);
    }
    base_args.push("-".into());
    let tag = options.tag.clone().unwrap_or_else(|| image.tag());
    let mut worker_args = vec![
        "build".to_string(),
        "--force-rm".into(),
        "--tag".into(),
        tag.clone(),
        "--build-arg".into(),
        format!("BASE={base}"),
    ];
    if options.no_cache {
        worker_args.push("--no-cache".into());
    }
    worker_args.push("-".into());
    Ok(vec![
        BuildStep {
            tag: base,
            args: base_args,
            dockerfile: BASE_DOCKERFILE,
        },
        BuildStep {
            tag,
            args: worker_args,
            dockerfile: image.dockerfile,
        },
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_image_pins_its_cli_and_has_a_kind_of_its_own() {
        for image in all() {
            let version = image.cli_version();
            assert!(
                version.chars().next().is_some_and(|c| c.is_ascii_digit()),
                "{}: {version}",
                image.name
            );
            assert_eq!(
                image.tag(),
                format!("agent-runner-{}:{version}", image.name)
            );
            assert!(
                image.dockerfile.contains("ARG BASE\nFROM ${BASE}"),
                "{}",
                image.name
            );
            assert!(
                image.dockerfile.contains(image.kind.program()),
                "{}",
                image.name
            );
            assert_eq!(by_name(image.name), Some(image));
            assert_eq!(by_name(image.kind.name()), Some(image));
            assert_eq!(default_image(image.kind), image.tag());
            assert_eq!(
                default_image(WorkerKind::CursorCli),
                "agent-runner-cursor:latest"
            );
        }
        assert_eq!(by_name("cobol"), None);
        let mut config = WorkerConfig::default();
        assert_eq!(
            image_of(&config),
            "agent-runner-codex:0.169.0"
                .replace("0.169.0", by_name("codex").unwrap().cli_version())
        );
        config.docker_image = Some("mine:1".into());
        assert_eq!(image_of(&config), "mine:1");
        assert!(base_tag().starts_with("agent-runner-base:"));
    }

    #[test]
    fn the_plan_builds_the_base_then_the_worker_on_it() {
        let codex = by_name("codex").unwrap();
        let options = BuildOptions {
            tag: Some("my/codex:1".into()),
            base_image: Some("mirror/node:22".into()),
            build_args: vec!["EXTRA_PACKAGES=openjdk-17-jdk maven".into()],
            ca_certs: vec!["-----BEGIN CERTIFICATE-----\nAA\n-----END CERTIFICATE-----\n".into()],
            no_cache: true,
        };
        let plan = build_plan(codex, &options).unwrap();
        assert_eq!(plan.len(), 2);
        let base = base_tag();
        assert_eq!(
            plan[0].args,
            [
                "build",
                "--force-rm",
                "--tag",
                &base,
                "--no-cache",
                "--build-arg",
                "NODE_IMAGE=mirror/node:22",
                "--build-arg",
                "EXTRA_PACKAGES=openjdk-17-jdk maven",
                "--build-arg",
                "EXTRA_CA_CERTS=-----BEGIN CERTIFICATE-----\nAA\n-----END CERTIFICATE-----",
                "-"
            ]
        );
        assert_eq!(
            plan[1].args,
            [
                "build",
                "--force-rm",
                "--tag",
                "my/codex:1",
                "--build-arg",
                &format!("BASE={base}"),
                "--no-cache",
                "-"
            ]
        );
        assert_eq!(plan[1].dockerfile, codex.dockerfile);
        let bad = BuildOptions {
            build_args: vec!["no-equals".into()],
            ..BuildOptions::default()
        };
        assert_eq!(
            build_plan(codex, &bad),
            Err(BadBuildArg("no-equals".into()))
        );
    }
}
