//! A small W3C WebDriver client over `ureq` for the browser tests (`multiverse_ide`):
//! Debian's `chromedriver` started on a free loopback port, one headless Chromium session
//! per [`Browser`], and the commands those tests use (navigate, find by CSS, click, type,
//! text, attributes, scripts sync and async, window size, screenshots as PNG files, the
//! browser's console). Waits have a deadline and fail saying what was waited for, the
//! page's URL, its console and a DOM excerpt, with a screenshot beside it. Dropping the
//! browser deletes the session and kills the driver.
//!
//! Needs `chromium` and `chromium-driver` (Debian's; `.ci/run` installs them with the
//! fonts the screenshots need). Run as root with them missing, the suite installs them
//! with `apt-get` itself, as `runner_docker` does for Docker; otherwise it fails and says
//! what to run. Nothing is downloaded from anywhere else.
//!
//! The self-test at the end drives a page served by a loopback `TcpListener` in the test,
//! so the harness is checked without the IDE.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::Reaped;

/// The key a WebDriver element reference is sent and received under.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// How long [`Browser::wait_until`] and its kin wait by default.
pub(crate) const WAIT: Duration = Duration::from_secs(20);

/// The Debian packages these tests need (and `.ci/run` installs).
const PACKAGES: &[&str] = &[
    "chromium",
    "chromium-driver",
    "fonts-ipafont-gothic",
    "fonts-liberation",
];

/// A browser session's settings.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) width: u32,
    pub(crate) height: u32,
    /// Chromium's UI language and `navigator.language` (`--lang`).
    pub(crate) lang: String,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            width: 1280,
            height: 800,
            lang: "en-US".to_string(),
        }
    }
}

/// What a WebDriver command answered when it failed: the W3C `error` code and message.
#[derive(Debug, Clone)]
pub(crate) struct WdError {
    pub(crate) error: String,
    pub(crate) message: String,
}

impl std::fmt::Display for WdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let first = self.message.lines().next().unwrap_or_default();
        write!(f, "{}: {first}", self.error)
    }
}

/// The paths of `chromedriver` and `chromium`, once found (or installed).
struct Tools {
    driver: PathBuf,
    chromium: PathBuf,
}

fn tools() -> &'static Tools {
    static TOOLS: OnceLock<Result<Tools, String>> = OnceLock::new();
    match TOOLS.get_or_init(find_or_install) {
        Ok(tools) => tools,
        Err(e) => panic!("the browser tests need Chromium and its WebDriver: {e}"),
    }
}

fn which(program: &str) -> Option<PathBuf> {
    let out = crate::sealed::command("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !path.is_empty()).then(|| PathBuf::from(path))
}

fn find() -> Option<Tools> {
    Some(Tools {
        driver: which("chromedriver")?,
        chromium: which("chromium")?,
    })
}

/// The tools on PATH; as root with `apt-get`, Debian's packages installed first when
/// missing (an update of the lists when the install alone fails), as `.ci/run` does.
fn find_or_install() -> Result<Tools, String> {
    if let Some(tools) = find() {
        return Ok(tools);
    }
    let advice = format!(
        "`chromedriver` or `chromium` is not on PATH; `.ci/run` installs them \
         (`apt-get install --no-install-recommends {}`)",
        PACKAGES.join(" ")
    );
    if !nix::unistd::geteuid().is_root() || which("apt-get").is_none() {
        return Err(advice);
    }
    let install = || {
        crate::sealed::command("apt-get")
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .args(PACKAGES)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("apt-get: {e}"))
    };
    let mut out = install()?;
    if !out.status.success() {
        let _ = crate::sealed::command("apt-get")
            .args(["update", "-q"])
            .stdin(Stdio::null())
            .output();
        out = install()?;
    }
    if !out.status.success() {
        return Err(format!(
            "{advice}; installing them failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    find().ok_or(advice)
}

/// Where the tests' screenshots go: `target/ide-screenshots/` (under `CARGO_TARGET_DIR`
/// when it is set).
pub(crate) fn screenshot_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).join("ide-screenshots")
}

/// A running `chromedriver` and one Chromium session in it.
pub(crate) struct Browser {
    agent: ureq::Agent,
    /// `http://127.0.0.1:PORT/session/ID`.
    session: String,
    /// The driver's log, for a session that would not start.
    log: PathBuf,
    driver: Option<Reaped>,
}

/// A reference to an element of the page.
pub(crate) struct Element<'a> {
    browser: &'a Browser,
    id: String,
    /// How it was found, for failure messages.
    css: String,
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .new_agent()
}

/// A loopback port that was free a moment ago.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

impl Browser {
    /// Starts `chromedriver` and a headless Chromium session with `options`; fails the
    /// test with the driver's log when either does not come up.
    pub(crate) fn start(options: &Options) -> Browser {
        let tools = tools();
        let log = std::env::temp_dir().join(format!(
            "mv-chromedriver-{}-{}.log",
            std::process::id(),
            free_port()
        ));
        let mut last = String::new();
        // The port is free when picked but another process may take it first: try again.
        for _ in 0..3 {
            let port = free_port();
            let child = crate::sealed::command(&tools.driver)
                .arg(format!("--port={port}"))
                .arg(format!("--log-path={}", log.display()))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("{}: {e}", tools.driver.display()));
            let driver = Reaped(child);
            let base = format!("http://127.0.0.1:{port}");
            match wait_ready(&base, &log) {
                Ok(()) => return Browser::session(driver, &base, log, tools, options),
                Err(e) => last = e,
            }
        }
        panic!("chromedriver did not start: {last}");
    }

    fn session(
        driver: Reaped,
        base: &str,
        log: PathBuf,
        tools: &Tools,
        options: &Options,
    ) -> Browser {
        let args = [
            "--headless=new".to_string(),
            "--no-sandbox".to_string(),
            "--disable-gpu".to_string(),
            "--disable-dev-shm-usage".to_string(),
            "--hide-scrollbars".to_string(),
            format!("--window-size={},{}", options.width, options.height),
            format!("--lang={}", options.lang),
        ];
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "pageLoadStrategy": "normal",
            "goog:chromeOptions": {"binary": tools.chromium, "args": args,
                                   "prefs": {"intl.accept_languages": options.lang}},
            "goog:loggingPrefs": {"browser": "ALL"},
        }}});
        let agent = agent();
        let reply = request(
            &agent,
            "POST",
            &format!("{base}/session"),
            Some(&capabilities),
        );
        let value = reply.unwrap_or_else(|e| {
            panic!(
                "chromedriver could not start Chromium ({}): {e}\n{}",
                tools.chromium.display(),
                tail(&log)
            )
        });
        let id = value["sessionId"].as_str().unwrap_or_default().to_string();
        assert!(!id.is_empty(), "no session id in {value}");
        let browser = Browser {
            agent,
            session: format!("{base}/session/{id}"),
            log,
            driver: Some(driver),
        };
        browser.command(
            "POST",
            "/timeouts",
            Some(json!({"script": 60_000, "pageLoad": 60_000, "implicit": 0})),
        );
        browser.set_viewport(options.width, options.height);
        browser
    }

    /// A WebDriver command of this session (`path` after `/session/ID`), its `value`.
    pub(crate) fn try_command(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, WdError> {
        let url = format!("{}{path}", self.session);
        request(&self.agent, method, &url, body.as_ref())
    }

    /// As [`Browser::try_command`], failing the test with the error and the page's URL.
    pub(crate) fn command(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.try_command(method, path, body.clone())
            .unwrap_or_else(|e| {
                panic!(
                    "WebDriver {method} {path} {} failed: {e}\n  url: {}",
                    body.map(|b| excerpt(&b.to_string(), 300))
                        .unwrap_or_default(),
                    self.current_url()
                )
            })
    }

    pub(crate) fn goto(&self, url: &str) {
        self.command("POST", "/url", Some(json!({ "url": url })));
    }

    pub(crate) fn refresh(&self) {
        self.command("POST", "/refresh", Some(json!({})));
    }

    /// The page's URL, or what went wrong asking for it (for failure messages).
    pub(crate) fn current_url(&self) -> String {
        match self.try_command("GET", "/url", None) {
            Ok(v) => v.as_str().unwrap_or_default().to_string(),
            Err(e) => format!("(unknown: {e})"),
        }
    }

    /// `script` (a function body; `arguments` are `args`) run in the page, its return
    /// value.
    pub(crate) fn execute(&self, script: &str, args: Vec<Value>) -> Value {
        self.command(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
    }

    /// As [`Browser::execute`], for a script that ends by calling its last argument with
    /// the result.
    pub(crate) fn execute_async(&self, script: &str, args: Vec<Value>) -> Value {
        self.command(
            "POST",
            "/execute/async",
            Some(json!({"script": script, "args": args})),
        )
    }

    /// Every element matching `css`, in document order.
    pub(crate) fn find_all(&self, css: &str) -> Vec<Element<'_>> {
        self.find_all_in("", css)
    }

    fn find_all_in(&self, scope: &str, css: &str) -> Vec<Element<'_>> {
        let found = self.command(
            "POST",
            &format!("{scope}/elements"),
            Some(json!({"using": "css selector", "value": css})),
        );
        found
            .as_array()
            .map(|all| {
                all.iter()
                    .filter_map(|e| e[ELEMENT_KEY].as_str())
                    .map(|id| Element {
                        browser: self,
                        id: id.to_string(),
                        css: css.to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The first element matching `css`, if any.
    pub(crate) fn find(&self, css: &str) -> Option<Element<'_>> {
        self.find_all(css).into_iter().next()
    }

    /// How many elements match `css` now.
    pub(crate) fn count(&self, css: &str) -> usize {
        self.execute(
            "return document.querySelectorAll(arguments[0]).length",
            vec![json!(css)],
        )
        .as_u64()
        .unwrap_or(0) as usize
    }

    /// Polls `check` every 100 ms until it gives a value or `timeout` passes; then fails
    /// the test with `what`, the last error `check` gave, the page's URL, its console and
    /// a DOM excerpt, and saves a screenshot beside the others.
    pub(crate) fn wait_until<T>(
        &self,
        what: &str,
        timeout: Duration,
        mut check: impl FnMut(&Browser) -> Result<Option<T>, String>,
    ) -> T {
        let start = Instant::now();
        let mut last = String::new();
        loop {
            match check(self) {
                Ok(Some(value)) => return value,
                Ok(None) => {}
                Err(e) => last = e,
            }
            if start.elapsed() > timeout {
                panic!("{}", self.failure(what, timeout, &last));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits (at most [`WAIT`]) for an element matching `css`, and returns it.
    pub(crate) fn wait_for(&self, css: &str) -> Element<'_> {
        self.wait_until(&format!("an element `{css}`"), WAIT, |_| Ok(self.find(css)))
    }

    /// Waits (at most [`WAIT`]) until `script` (a function body) returns something
    /// truthy, and returns that.
    pub(crate) fn wait_js(&self, what: &str, script: &str, args: Vec<Value>) -> Value {
        self.wait_until(what, WAIT, |b| {
            match b.try_command(
                "POST",
                "/execute/sync",
                Some(json!({"script": script, "args": args})),
            ) {
                Ok(v) if truthy(&v) => Ok(Some(v)),
                Ok(v) => Err(format!(
                    "the script returned {}",
                    excerpt(&v.to_string(), 300)
                )),
                Err(e) => Err(e.to_string()),
            }
        })
    }

    /// Waits for an element matching `css` that can be clicked (displayed, enabled, not
    /// covered), then clicks it.
    pub(crate) fn click(&self, css: &str) {
        self.wait_until(&format!("`{css}` to take a click"), WAIT, |b| {
            let Some(element) = b.find(css) else {
                return Err("no such element".to_string());
            };
            if !element.enabled() {
                return Err("disabled".to_string());
            }
            element.try_click().map(Some).map_err(|e| e.to_string())
        })
    }

    /// Waits for an element matching `css` and types `text` into it (found again if the
    /// page redrew it meanwhile).
    pub(crate) fn type_into(&self, css: &str, text: &str) {
        self.wait_until(&format!("`{css}` to take keys"), WAIT, |b| {
            let Some(element) = b.find(css) else {
                return Err("no such element".to_string());
            };
            b.try_command(
                "POST",
                &element.path("/value"),
                Some(json!({ "text": text })),
            )
            .map(|_| Some(()))
            .map_err(|e| e.to_string())
        })
    }

    /// The rendered text (`innerText`; `textContent` for SVG) of the first element
    /// matching `css`, waited for.
    /// Read in the page, so a redraw between finding and reading does not matter.
    pub(crate) fn text_of(&self, css: &str) -> String {
        let script = "const e = document.querySelector(arguments[0]); return e ? (e.innerText ?? e.textContent) : null";
        let text = self.wait_js(&format!("an element `{css}`"), script, vec![json!(css)]);
        text.as_str().unwrap_or_default().to_string()
    }

    /// An attribute of the first element matching `css` now (`None`: no element or no
    /// such attribute).
    pub(crate) fn attr_of(&self, css: &str, name: &str) -> Option<String> {
        let value = self.execute(
            "const e = document.querySelector(arguments[0]); return e ? e.getAttribute(arguments[1]) : null",
            vec![json!(css), json!(name)],
        );
        value.as_str().map(str::to_string)
    }

    /// An attribute of every element matching `css`, in document order.
    pub(crate) fn attrs_of(&self, css: &str, name: &str) -> Vec<Option<String>> {
        let value = self.execute(
            "return [...document.querySelectorAll(arguments[0])].map(e => e.getAttribute(arguments[1]))",
            vec![json!(css), json!(name)],
        );
        value
            .as_array()
            .map(|all| all.iter().map(|v| v.as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    }

    /// Presses and releases `key` (a character or a [`keys`] code) wherever the focus is,
    /// as a person at the keyboard would (WebDriver's actions).
    pub(crate) fn press(&self, key: &str) {
        let actions = json!({"actions": [{"type": "key", "id": "keyboard", "actions": [
            {"type": "keyDown", "value": key}, {"type": "keyUp", "value": key}]}]});
        self.command("POST", "/actions", Some(actions));
    }

    /// Waits for a user prompt (`alert`, `confirm`) and returns its text.
    pub(crate) fn wait_alert(&self) -> String {
        self.wait_until("a dialog (alert or confirm)", WAIT, |b| {
            match b.try_command("GET", "/alert/text", None) {
                Ok(text) => Ok(Some(text.as_str().unwrap_or_default().to_string())),
                Err(e) => Err(e.to_string()),
            }
        })
    }

    /// Accepts the open user prompt (OK on a `confirm`).
    pub(crate) fn accept_alert(&self) {
        self.command("POST", "/alert/accept", Some(json!({})));
    }

    /// The failure message of a wait that timed out.
    fn failure(&self, what: &str, timeout: Duration, last: &str) -> String {
        let dom = self
            .try_command(
                "POST",
                "/execute/sync",
                Some(json!({"script": "return document.documentElement ? document.documentElement.outerHTML : ''", "args": []})),
            )
            .map(|v| v.as_str().unwrap_or_default().to_string())
            .unwrap_or_else(|e| format!("(no DOM: {e})"));
        let shot = screenshot_dir().join(format!(
            "failed-{}-{}.png",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or(0)
        ));
        let saved = match self.try_screenshot(&shot) {
            Ok(()) => shot.display().to_string(),
            Err(e) => format!("(none: {e})"),
        };
        let console: Vec<String> = self
            .console_log()
            .iter()
            .map(|entry| format!("    {} {}", entry["level"], entry["message"]))
            .collect();
        format!(
            "timed out after {:.1} s waiting for {what}\n  last: {last}\n  url: {}\n  screenshot: {saved}\n  console:\n{}\n  DOM (first 6000 characters):\n{}",
            timeout.as_secs_f64(),
            self.current_url(),
            console.join("\n"),
            excerpt(&dom, 6000)
        )
    }

    /// The browser's console since the last call (Chromium's `goog:loggingPrefs`): each
    /// `{level, message, timestamp}`; empty when the driver does not keep it.
    pub(crate) fn console_log(&self) -> Vec<Value> {
        self.try_command("POST", "/se/log", Some(json!({"type": "browser"})))
            .ok()
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
    }

    /// Makes the page's viewport `width` × `height` CSS pixels at a device scale of 1:
    /// the window is resized and the size pinned with Chromium's device metrics
    /// (`Emulation.setDeviceMetricsOverride` through chromedriver), because a headless
    /// window's inner size follows a resize only later and not always exactly.
    pub(crate) fn set_viewport(&self, width: u32, height: u32) {
        self.command(
            "POST",
            "/window/rect",
            Some(json!({"width": width, "height": height})),
        );
        self.command(
            "POST",
            "/goog/cdp/execute",
            Some(
                json!({"cmd": "Emulation.setDeviceMetricsOverride", "params": {
                "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}}),
            ),
        );
        let what = format!("a viewport of {width}x{height}");
        self.wait_until(&what, Duration::from_secs(5), |b| {
            let inner = b.execute(
                "return [window.innerWidth, window.innerHeight, window.devicePixelRatio]",
                Vec::new(),
            );
            match inner == json!([width, height, 1]) {
                true => Ok(Some(())),
                false => Err(format!(
                    "[innerWidth, innerHeight, devicePixelRatio] {inner}"
                )),
            }
        });
    }

    /// A PNG of the viewport written to `path` (its directory created).
    pub(crate) fn screenshot(&self, path: &Path) {
        self.try_screenshot(path)
            .unwrap_or_else(|e| panic!("screenshot {}: {e}", path.display()));
    }

    fn try_screenshot(&self, path: &Path) -> Result<(), String> {
        let data = self
            .try_command("GET", "/screenshot", None)
            .map_err(|e| e.to_string())?;
        let png = base64_decode(data.as_str().unwrap_or_default())?;
        if !png.starts_with(b"\x89PNG\r\n\x1a\n") {
            return Err("the screenshot is not a PNG".to_string());
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        std::fs::write(path, png).map_err(|e| e.to_string())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = request(&self.agent, "DELETE", &self.session, None);
        drop(self.driver.take());
        let _ = std::fs::remove_file(&self.log);
    }
}

impl Element<'_> {
    fn path(&self, rest: &str) -> String {
        format!("/element/{}{rest}", self.id)
    }

    fn command(&self, method: &str, rest: &str, body: Option<Value>) -> Value {
        self.browser
            .try_command(method, &self.path(rest), body)
            .unwrap_or_else(|e| panic!("WebDriver {method} {rest} on `{}`: {e}", self.css))
    }

    pub(crate) fn try_click(&self) -> Result<(), WdError> {
        self.browser
            .try_command("POST", &self.path("/click"), Some(json!({})))
            .map(|_| ())
    }

    pub(crate) fn click(&self) {
        self.command("POST", "/click", Some(json!({})));
    }

    /// Types `text` into the element (WebDriver key codes such as [`keys::ENTER`] work).
    pub(crate) fn send_keys(&self, text: &str) {
        self.command("POST", "/value", Some(json!({ "text": text })));
    }

    pub(crate) fn clear(&self) {
        self.command("POST", "/clear", Some(json!({})));
    }

    /// Its rendered text.
    pub(crate) fn text(&self) -> String {
        self.command("GET", "/text", None)
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// An attribute's value (`None` when absent).
    pub(crate) fn attribute(&self, name: &str) -> Option<String> {
        self.command("GET", &format!("/attribute/{name}"), None)
            .as_str()
            .map(str::to_string)
    }

    /// A property's value (`value` of an input, `checked` of a checkbox).
    pub(crate) fn property(&self, name: &str) -> Value {
        self.command("GET", &format!("/property/{name}"), None)
    }

    pub(crate) fn enabled(&self) -> bool {
        self.browser
            .try_command("GET", &self.path("/enabled"), None)
            .is_ok_and(|v| v == json!(true))
    }

    /// The elements matching `css` inside this one.
    pub(crate) fn find_all(&self, css: &str) -> Vec<Element<'_>> {
        self.browser.find_all_in(&self.path(""), css)
    }

    /// This element as a script argument.
    pub(crate) fn arg(&self) -> Value {
        json!({ ELEMENT_KEY: self.id })
    }
}

/// WebDriver's codes for special keys in [`Element::send_keys`].
pub(crate) mod keys {
    pub(crate) const NULL: &str = "\u{E000}";
    pub(crate) const ENTER: &str = "\u{E007}";
    pub(crate) const CONTROL: &str = "\u{E009}";
    pub(crate) const ESCAPE: &str = "\u{E00C}";
    pub(crate) const TAB: &str = "\u{E004}";
}

/// Waits until `base/status` says the driver is ready, or its process is gone.
fn wait_ready(base: &str, log: &Path) -> Result<(), String> {
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(2)))
        .build()
        .new_agent();
    let until = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until {
        if let Ok(value) = request(&agent, "GET", &format!("{base}/status"), None)
            && value["ready"] == json!(true)
        {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!("{base}/status not ready in 20 s\n{}", tail(log)))
}

/// One WebDriver HTTP request: its `value`, or the W3C error it answered with.
fn request(
    agent: &ureq::Agent,
    method: &str,
    url: &str,
    body: Option<&Value>,
) -> Result<Value, WdError> {
    let transport = |e: ureq::Error| WdError {
        error: "transport".to_string(),
        message: format!("{method} {url}: {e}"),
    };
    let mut reply = match method {
        "GET" => agent.get(url).call(),
        "DELETE" => agent.delete(url).call(),
        _ => agent
            .post(url)
            .header("Content-Type", "application/json")
            .send(serde_json::to_vec(body.unwrap_or(&json!({}))).unwrap_or_default()),
    }
    .map_err(transport)?;
    let ok = reply.status().is_success();
    let text = reply
        .body_mut()
        .with_config()
        .limit(256 * 1024 * 1024)
        .read_to_string()
        .map_err(transport)?;
    let parsed: Value = serde_json::from_str(&text).map_err(|e| WdError {
        error: "bad reply".to_string(),
        message: format!("{method} {url}: {e}: {}", excerpt(&text, 300)),
    })?;
    let value = parsed.get("value").cloned().unwrap_or(Value::Null);
    if ok {
        return Ok(value);
    }
    Err(WdError {
        error: value["error"]
            .as_str()
            .unwrap_or("unknown error")
            .to_string(),
        message: value["message"].as_str().unwrap_or_default().to_string(),
    })
}

fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// The first `limit` characters of `text`, and how many were left out.
pub(crate) fn excerpt(text: &str, limit: usize) -> String {
    let count = text.chars().count();
    if count <= limit {
        return text.to_string();
    }
    let head: String = text.chars().take(limit).collect();
    format!("{head}… ({} more characters)", count - limit)
}

/// The last lines of the driver's log, for a failure message.
fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(30);
    format!(
        "chromedriver log ({}):\n{}",
        log.display(),
        lines[from..].join("\n")
    )
}

/// Standard base64 (with padding), as WebDriver sends screenshots.
fn base64_decode(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut buffer = 0u32;
    let mut bits = 0;
    for (i, c) in text.bytes().enumerate() {
        let value = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            b'\r' | b'\n' => continue,
            _ => return Err(format!("not base64 at {i}: {:?}", c as char)),
        };
        buffer = (buffer << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    Ok(out)
}

/// A PNG's width and height, from its IHDR chunk.
pub(crate) fn png_size(png: &[u8]) -> Option<(u32, u32)> {
    let be = |at: usize| Some(u32::from_be_bytes(png.get(at..at + 4)?.try_into().ok()?));
    (png.get(12..16)? == b"IHDR").then_some(())?;
    Some((be(16)?, be(20)?))
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::TcpListener;

    use super::*;
    use crate::support::{TempDir, read_request};

    /// A page with a button, an input, a delayed element and a console line; no CSP, so
    /// inline script is fine here.
    const PAGE: &str = r#"<!doctype html><html lang="en"><head><title>harness</title></head>
<body><button id="go" disabled>Go</button><input id="name"><p id="out" data-n="0"></p>
<script>
const out = document.getElementById('out');
const go = document.getElementById('go');
go.addEventListener('click', () => {
  out.dataset.n = String(Number(out.dataset.n) + 1);
  out.textContent = 'clicked ' + out.dataset.n + ' ' + document.getElementById('name').value;
});
document.getElementById('name').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && e.ctrlKey) out.textContent = 'ctrl-enter';
});
console.warn('harness console line');
setTimeout(() => { go.disabled = false; const d = document.createElement('div');
  d.id = 'late'; d.textContent = 'arrived late'; document.body.append(d); }, 400);
</script></body></html>"#;

    /// Serves [`PAGE`] for every request until the test ends.
    fn serve() -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/page", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                // A GET has no Content-Length: read_request gives up on it, the head is read.
                let _ = read_request(Duration::from_millis(200), &stream);
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    PAGE.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(PAGE.as_bytes());
            }
        });
        url
    }

    #[test]
    fn the_harness_drives_a_page_of_its_own() {
        let url = serve();
        let browser = Browser::start(&Options {
            width: 900,
            height: 600,
            ..Options::default()
        });
        browser.goto(&url);
        assert_eq!(browser.current_url(), url);
        assert!(
            browser.find("#late").is_none(),
            "the late element came at once"
        );
        // A click waits for the button to be enabled (0.4 s after load).
        browser.wait_for("#name").send_keys("Ada");
        browser.click("#go");
        assert_eq!(browser.wait_for("#late").text(), "arrived late");
        browser.wait_js(
            "the click's effect",
            "return document.getElementById('out').textContent === 'clicked 1 Ada'",
            Vec::new(),
        );
        let out = browser.find("#out").unwrap();
        assert_eq!(out.attribute("data-n").as_deref(), Some("1"));
        assert_eq!(out.attribute("data-missing"), None);
        assert_eq!(browser.attr_of("#out", "data-n").as_deref(), Some("1"));
        assert_eq!(browser.attr_of("#nothing", "data-n"), None);
        assert_eq!(
            browser.attrs_of("button, p", "id"),
            [Some("go".into()), Some("out".into())]
        );
        assert_eq!(browser.text_of("#late"), "arrived late");
        let name = browser.find("#name").unwrap();
        assert_eq!(name.property("value"), json!("Ada"));
        name.send_keys(&format!("{}{}{}", keys::CONTROL, keys::ENTER, keys::NULL));
        assert_eq!(out.text(), "ctrl-enter");
        assert_eq!(browser.count("button, input"), 2);
        assert_eq!(browser.find_all("body > *").len(), 5);
        let body = browser.find("body").unwrap();
        assert_eq!(body.find_all("#late").len(), 1);
        name.clear();
        browser.type_into("#name", &format!("Bo{}", keys::ESCAPE));
        browser.find("#go").unwrap().click();
        assert_eq!(out.text(), "clicked 2 Bo");

        let sum = browser.execute(
            "return arguments[0] + arguments[1]",
            vec![json!(2), json!(3)],
        );
        assert_eq!(sum, json!(5));
        let tag = browser.execute("return arguments[0].tagName", vec![out.arg()]);
        assert_eq!(tag, json!("P"));
        let later = browser.execute_async(
            "const done = arguments[arguments.length - 1]; setTimeout(() => done(arguments[0] * 2), 50)",
            vec![json!(21)],
        );
        assert_eq!(later, json!(42));
        browser.execute(
            "setTimeout(() => { window.answer = confirm('Forget it?'); }, 100)",
            Vec::new(),
        );
        assert_eq!(browser.wait_alert(), "Forget it?");
        browser.accept_alert();
        assert_eq!(
            browser.execute("return window.answer", Vec::new()),
            json!(true)
        );
        browser.execute("document.getElementById('go').focus()", Vec::new());
        browser.press(keys::TAB);
        let focused = "return document.activeElement.id";
        assert_eq!(browser.execute(focused, Vec::new()), json!("name"));
        let console = browser.console_log();
        assert!(
            console.iter().any(|e| e["message"]
                .as_str()
                .unwrap_or("")
                .contains("harness console line")),
            "{console:?}"
        );

        // A reload starts the page again: the late element has yet to come
        // (the elements found before are gone with it).
        browser.refresh();
        assert!(browser.find("#late").is_none(), "the reload kept the page");
        assert_eq!(browser.wait_for("#late").text(), "arrived late");

        // The screenshot is a PNG of the viewport, at its size, also after a resize.
        let dir = TempDir::new("webdriver-shots");
        let shot = dir.join("page.png");
        browser.screenshot(&shot);
        assert_eq!(png_size(&std::fs::read(&shot).unwrap()), Some((900, 600)));
        browser.set_viewport(1280, 800);
        browser.screenshot(&shot);
        assert_eq!(png_size(&std::fs::read(&shot).unwrap()), Some((1280, 800)));

        // A wait that times out says what it waited for, where, and shows the page.
        let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            browser.wait_until("a green moon", Duration::from_millis(300), |_| {
                Err::<Option<()>, _>("no moon yet".to_string())
            })
        }));
        let message = *failed.unwrap_err().downcast::<String>().unwrap();
        for part in [
            "timed out after 0.3 s waiting for a green moon",
            "last: no moon yet",
            &format!("url: {url}"),
            "arrived late",
            "screenshot: ",
        ] {
            assert!(message.contains(part), "{part:?} missing from:\n{message}");
        }
        let saved = message
            .split("screenshot: ")
            .nth(1)
            .unwrap()
            .lines()
            .next()
            .unwrap();
        assert!(Path::new(saved).is_file(), "{message}");
        let _ = std::fs::remove_file(saved);
    }

    #[test]
    fn base64_and_png_sizes_decode() {
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("aGVsbG8h").unwrap(), b"hello!");
        assert_eq!(base64_decode("aGk=").unwrap(), b"hi");
        assert!(base64_decode("a*b").is_err());
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend_from_slice(&1280u32.to_be_bytes());
        png.extend_from_slice(&800u32.to_be_bytes());
        assert_eq!(png_size(&png), Some((1280, 800)));
        assert_eq!(png_size(b"\x89PNG"), None);
    }
}
