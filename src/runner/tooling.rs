//! `runner.tooling`: the original's tooling selection (seed "Tooling Selection"). Profiles
//! hold categories (`meta`, `plan`, `task`, `execution`, `worker`), each a list of weighted
//! candidates; a [`Selector`] picks one per planner call (and once for the worker), skips
//! candidates that cannot run here (no API key, no CLI on PATH) or that are cooling down
//! after a rate limit, and honours a force mode. A worker run that was rate limited moves
//! the task's later runs to another worker candidate that runs in the same sandbox
//! ([`WorkerTooling`]). Randomness and time are injected, so a seed
//! (`AGENT_RUNNER_TOOLING_SEED`) makes every choice reproducible.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::model_name::check_model_name;
use super::provider::config::MetaKind;
use super::provider::prompt::mentions_rate_limit;
use super::worker::{WorkerConfig, WorkerConfigError, WorkerKind};
use super::worker_turn::{RunEnding, WorkerRun};

/// The environment variable that seeds the selector's random draws.
pub(crate) const SEED_ENV: &str = "AGENT_RUNNER_TOOLING_SEED";
/// A rate-limited candidate's cooldown when the category does not set one.
pub(crate) const DEFAULT_COOLDOWN_SEC: u64 = 60;

/// `runner.tooling` as written (the original's camelCase keys).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ToolingConfig {
    /// The profile in force; required when there is more than one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_profile: Option<String>,
    /// Named profiles, e.g. `balanced` and `fast`.
    pub profiles: BTreeMap<String, ToolingProfile>,
    /// Always take one candidate instead of drawing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<ForceSpec>,
}

/// One profile: the candidates of each category. A category left out falls back to
/// `meta` (and `plan` to `meta` as well).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ToolingProfile {
    /// A label for people; not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<CategoryConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<CategoryConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<CategoryConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<CategoryConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<CategoryConfig>,
}

/// How one category chooses.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CategoryConfig {
    /// `weighted` (the only strategy): a candidate is drawn with probability weight/total.
    #[serde(default)]
    pub strategy: Strategy,
    /// On a rate limit, cool the candidate down and try the next one (default true).
    #[serde(default = "default_true")]
    pub fallback_on_rate_limit: bool,
    /// How long a rate-limited candidate is skipped, in seconds (default 60).
    #[serde(default = "default_cooldown_sec")]
    #[schemars(range(max = 86400))]
    pub cooldown_sec: u64,
    #[schemars(length(min = 1))]
    pub candidates: Vec<Candidate>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    #[default]
    Weighted,
}

/// One tool and model a category may use.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Candidate {
    /// Planner categories: `openai-chat`, `codex-cli`, `claude-code` or `mock`; `worker`:
    /// `codex-cli`, `claude-code`, `gemini-cli` or `command`.
    pub tool: String,
    /// The model; the tool's default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Relative chance of being drawn; 0 takes the candidate out of the draw (it can still
    /// be forced). Default 1.
    #[serde(default = "default_weight")]
    #[schemars(range(max = 1_000_000))]
    pub weight: u32,
    /// Planner CLIs: the program to run instead of `codex` / `claude` on PATH.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cli_path: Option<String>,
    /// Worker only: more CLI flags (checked against the worker kind's allow-list).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    /// Worker only: more environment variables for the worker.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Planner candidates: any other `runner.meta` key for this candidate (`base_url`,
    /// `api_key_env`, `timeout_sec`, `max_retries`, `script`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_specific: BTreeMap<String, Value>,
    /// Planner candidates: added to the built-in system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
}

/// `force`: `enabled` alone takes each category's first candidate; with `tool` (and
/// `model`) the first candidate that matches.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ForceSpec {
    #[serde(default)]
    pub enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

fn default_true() -> bool {
    true
}

fn default_cooldown_sec() -> u64 {
    DEFAULT_COOLDOWN_SEC
}

fn default_weight() -> u32 {
    1
}

/// The categories of the seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    Meta,
    Plan,
    Task,
    Execution,
    Worker,
}

impl Category {
    pub fn name(self) -> &'static str {
        match self {
            Category::Meta => "meta",
            Category::Plan => "plan",
            Category::Task => "task",
            Category::Execution => "execution",
            Category::Worker => "worker",
        }
    }
}

impl ToolingProfile {
    fn get(&self, category: Category) -> Option<&CategoryConfig> {
        match category {
            Category::Meta => self.meta.as_ref(),
            Category::Plan => self.plan.as_ref(),
            Category::Task => self.task.as_ref(),
            Category::Execution => self.execution.as_ref(),
            Category::Worker => self.worker.as_ref(),
        }
    }

    /// The category's own block, or `meta`'s when it has none (the seed's fallback), with
    /// the category that actually answered.
    pub fn category(&self, category: Category) -> Option<(Category, &CategoryConfig)> {
        self.get(category)
            .map(|c| (category, c))
            .or_else(|| self.meta.as_ref().map(|c| (Category::Meta, c)))
    }

    fn categories(&self) -> impl Iterator<Item = (Category, &CategoryConfig)> {
        [
            Category::Meta,
            Category::Plan,
            Category::Task,
            Category::Execution,
            Category::Worker,
        ]
        .into_iter()
        .filter_map(|c| self.get(c).map(|config| (c, config)))
    }
}

/// A problem of a `runner.tooling` block, with the JSON pointer (below `/runner/tooling`)
/// of the value at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolingFinding {
    pub pointer: String,
    pub message: String,
    pub help: String,
}

impl ToolingConfig {
    /// The profile in force: `activeProfile`, or the only one.
    pub fn profile(&self) -> Option<(&str, &ToolingProfile)> {
        match &self.active_profile {
            Some(name) => self.profiles.get_key_value(name.as_str()),
            None if self.profiles.len() == 1 => self.profiles.iter().next(),
            None => None,
        }
        .map(|(name, profile)| (name.as_str(), profile))
    }

    /// The rules the schema cannot say: a known active profile, tools that exist for
    /// their category, a drawable candidate in every category, a force that matches, and
    /// worker candidates that make a valid `worker` (the task's `runner.worker`) when
    /// applied.
    pub fn check(&self, worker: &WorkerConfig) -> Vec<ToolingFinding> {
        let mut findings = Vec::new();
        if self.profiles.is_empty() {
            findings.push(ToolingFinding {
                pointer: "/profiles".into(),
                message: "`runner.tooling.profiles` is empty".into(),
                help: "define at least one profile, e.g. `balanced`".into(),
            });
            return findings;
        }
        if self.profile().is_none() {
            let names: Vec<&str> = self.profiles.keys().map(String::as_str).collect();
            let (pointer, message) = match &self.active_profile {
                Some(name) => (
                    "/activeProfile",
                    format!("`activeProfile` {name:?} is not a profile"),
                ),
                None => (
                    "/profiles",
                    "there are several profiles and no `activeProfile`".to_owned(),
                ),
            };
            findings.push(ToolingFinding {
                pointer: pointer.into(),
                message,
                help: format!("name one of: {}", names.join(", ")),
            });
        }
        for (name, profile) in &self.profiles {
            for (category, config) in profile.categories() {
                let at = format!("/profiles/{name}/{}", category.name());
                for (i, candidate) in config.candidates.iter().enumerate() {
                    if let Err(known) = tool_kind(category, &candidate.tool) {
                        findings.push(ToolingFinding {
                            pointer: format!("{at}/candidates/{i}/tool"),
                            message: format!(
                                "`{}` is not a tool of the `{}` category",
                                candidate.tool,
                                category.name()
                            ),
                            help: format!("use one of: {}", known.join(", ")),
                        });
                    }
                    let planner_only = !candidate.tool_specific.is_empty()
                        || candidate.system_prompt.is_some()
                        || candidate.cli_path.is_some();
                    let worker_only = !candidate.flags.is_empty() || !candidate.env.is_empty();
                    if category == Category::Worker && planner_only {
                        findings.push(ToolingFinding {
                            pointer: format!("{at}/candidates/{i}"),
                            message: "`cliPath`, `toolSpecific` and `systemPrompt` are for planner candidates".into(),
                            help: "set the worker's program with `runner.worker.command` (kind: command)".into(),
                        });
                    }
                    // Its model goes on a CLI's command line as `runner.meta.model` and
                    // `runner.worker.model` do, and is refused for the same reasons.
                    let model = candidate.model.as_deref().map(check_model_name);
                    if let Some(Err(e)) = &model {
                        findings.push(ToolingFinding {
                            pointer: format!("{at}/candidates/{i}/model"),
                            message: format!("`model`: {e} ({})", e.key()),
                            help: "give the model's name as its provider spells it: no leading `-`, no spaces".into(),
                        });
                    }
                    if category == Category::Worker
                        && tool_kind(category, &candidate.tool).is_ok()
                        && !matches!(model, Some(Err(_)))
                        && let Err(e) = apply_worker(worker, candidate)
                    {
                        findings.push(ToolingFinding {
                            pointer: format!("{at}/candidates/{i}"),
                            message: format!("this worker candidate makes an invalid `runner.worker`: {e}"),
                            help: "a `command` candidate needs `runner.worker.kind: command` and its `command`".into(),
                        });
                    }
                    if category != Category::Worker && worker_only {
                        findings.push(ToolingFinding {
                            pointer: format!("{at}/candidates/{i}"),
                            message: "`flags` and `env` are for worker candidates".into(),
                            help: "planner candidates take `cliPath`, `toolSpecific` and `systemPrompt`".into(),
                        });
                    }
                }
                let forced = self.force.as_ref().is_some_and(|f| f.enabled);
                if !forced && config.candidates.iter().all(|c| c.weight == 0) {
                    findings.push(ToolingFinding {
                        pointer: format!("{at}/candidates"),
                        message: format!(
                            "every candidate of `{}` has weight 0: none can be drawn",
                            category.name()
                        ),
                        help: "give at least one candidate a weight of 1 or more".into(),
                    });
                }
                if let Some(force) = self.force.as_ref().filter(|f| f.enabled)
                    && force.tool.is_some()
                    && !config.candidates.iter().any(|c| force.matches(c))
                {
                    findings.push(ToolingFinding {
                        pointer: "/force".into(),
                        message: format!(
                            "the forced tool matches no candidate of `{}` in profile `{name}`",
                            category.name()
                        ),
                        help: "name a `tool` (and `model`) that the category lists".into(),
                    });
                }
            }
        }
        findings
    }
}

impl ForceSpec {
    fn matches(&self, candidate: &Candidate) -> bool {
        self.tool.as_deref().is_none_or(|t| t == candidate.tool)
            && self
                .model
                .as_deref()
                .is_none_or(|m| candidate.model.as_deref() == Some(m))
    }
}

/// The tool names a category accepts, checked; `Err` lists them.
fn tool_kind(category: Category, tool: &str) -> Result<(), Vec<&'static str>> {
    let known: Vec<&'static str> = if category == Category::Worker {
        [
            WorkerKind::CodexCli,
            WorkerKind::ClaudeCode,
            WorkerKind::GeminiCli,
            WorkerKind::Command,
        ]
        .iter()
        .map(|k| k.name())
        .collect()
    } else {
        [
            MetaKind::OpenaiChat,
            MetaKind::CodexCli,
            MetaKind::ClaudeCode,
            MetaKind::Mock,
        ]
        .iter()
        .map(|k| k.name())
        .collect()
    };
    // serde decides (a worker kind added later is accepted without touching this list).
    let name = Value::String(tool.to_owned());
    let parses = if category == Category::Worker {
        serde_json::from_value::<WorkerKind>(name).is_ok()
    } else {
        serde_json::from_value::<MetaKind>(name).is_ok()
    };
    if parses { Ok(()) } else { Err(known) }
}

/// Why this candidate was taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Reason {
    /// Drawn by weight.
    Weighted,
    /// The force mode named it (or it is the first).
    Forced,
    /// Taken because `after` was rate limited.
    Fallback { after: String },
}

/// One choice, for the record (the planner exchange, the timeline).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Choice {
    /// The category asked for.
    pub category: Category,
    /// The category whose candidates answered (`meta` when the asked one is not defined).
    pub from: Category,
    /// The candidate's index in that category.
    pub index: usize,
    pub tool: String,
    pub model: Option<String>,
    pub reason: Reason,
}

impl Choice {
    /// `tool model`, or the tool alone.
    pub fn label(&self) -> String {
        match &self.model {
            Some(model) => format!("{} {model}", self.tool),
            None => self.tool.clone(),
        }
    }

    /// The label and why it was taken: `codex-cli gpt-5.2 (weighted)`.
    pub fn summary(&self) -> String {
        let why = match &self.reason {
            Reason::Weighted => "weighted".to_owned(),
            Reason::Forced => "forced".to_owned(),
            Reason::Fallback { after } => format!("fallback after {after} was rate limited"),
        };
        format!("{} ({why})", self.label())
    }
}

impl std::fmt::Display for Choice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.category.name(), self.summary())
    }
}

/// Why no candidate could be chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelectError {
    /// Neither the category nor `meta` is defined in the active profile.
    NoCategory { category: Category },
    /// Every candidate is unavailable, has weight 0 or is cooling down; each is named with
    /// why.
    NoneAvailable {
        category: Category,
        reasons: Vec<String>,
    },
}

impl std::fmt::Display for SelectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SelectError::NoCategory { category } => write!(
                f,
                "runner.tooling: the active profile defines neither `{}` nor `meta`",
                category.name()
            ),
            SelectError::NoneAvailable { category, reasons } => write!(
                f,
                "runner.tooling: no `{}` candidate can be used now: {}",
                category.name(),
                reasons.join("; ")
            ),
        }
    }
}

impl std::error::Error for SelectError {}

/// A small, good-enough generator (SplitMix64): no dependency, reproducible from a seed.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// Seeded from [`SEED_ENV`] when it holds a number, else from the OS.
    pub fn from_env(read: &dyn Fn(&str) -> Option<String>) -> SplitMix64 {
        if let Some(seed) = read(SEED_ENV).and_then(|s| s.trim().parse::<u64>().ok()) {
            return SplitMix64(seed);
        }
        let mut bytes = [0u8; 8];
        // Without OS randomness the draw is still weighted, only predictable: the time
        // stands in.
        if getrandom::fill(&mut bytes).is_err() {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            bytes = (nanos as u64).to_le_bytes();
        }
        SplitMix64(u64::from_le_bytes(bytes))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (`bound` > 0), without modulo bias worth the name.
    fn below(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }
}

/// Whether a candidate can run here at all.
pub type Availability = Box<dyn Fn(Category, &Candidate) -> Result<(), String> + Send>;
/// Reads an environment variable (tests pass their own).
pub(crate) type EnvReader = Box<dyn Fn(&str) -> Option<String> + Send>;
/// The selector's clock.
pub(crate) type Clock = Box<dyn Fn() -> Instant + Send>;

/// Cooled candidates by `tool model`, until when.
type Cooldowns = Arc<Mutex<HashMap<String, Instant>>>;

/// Whether a candidate fits where it would be used (for a worker fallback: the sandbox
/// already running); `Err` says why not.
pub(crate) type Fits<'a> = &'a dyn Fn(&Candidate) -> Result<(), String>;

/// Chooses candidates: weighted draws, force mode, availability, rate-limit cooldowns.
pub struct Selector {
    profile: ToolingProfile,
    force: Option<ForceSpec>,
    rng: SplitMix64,
    clock: Clock,
    available: Availability,
    /// Cooled candidates by `tool model` (a rate limit is the provider's and the model's,
    /// whichever category used it), until when; shared with the selector's
    /// [`Selector::sibling`] (the planner's and the worker's see the same cooldowns).
    cooldowns: Cooldowns,
}

impl std::fmt::Debug for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Selector")
            .field("profile", &self.profile)
            .field("force", &self.force)
            .field("cooldowns", &self.cooldowns)
            .finish_non_exhaustive()
    }
}

impl Selector {
    /// A selector over the active profile of `config` (checked when the task was read;
    /// an unresolvable profile is empty here, and every choice then says so).
    pub fn new(
        config: &ToolingConfig,
        rng: SplitMix64,
        clock: Clock,
        available: Availability,
    ) -> Selector {
        Selector {
            profile: config.profile().map(|(_, p)| p.clone()).unwrap_or_default(),
            force: config.force.clone().filter(|f| f.enabled),
            rng,
            clock,
            available,
            cooldowns: Arc::default(),
        }
    }

    /// A selector over the same profile and force that shares this one's cooldowns, with
    /// its own draws: the worker's fallback (in the host) and the planner's calls (in the
    /// planner) each hold one, and a rate limit either meets cools the candidate for both.
    pub(crate) fn sibling(
        &self,
        rng: SplitMix64,
        clock: Clock,
        available: Availability,
    ) -> Selector {
        Selector {
            profile: self.profile.clone(),
            force: self.force.clone(),
            rng,
            clock,
            available,
            cooldowns: Arc::clone(&self.cooldowns),
        }
    }

    /// Whether the force mode is on (every choice is the forced candidate).
    pub fn forced(&self) -> bool {
        self.force.is_some()
    }

    /// Whether the active profile has a block of its own for `category`.
    pub fn defines(&self, category: Category) -> bool {
        self.profile.get(category).is_some()
    }

    /// The category's settings, after the fallback to `meta`.
    pub fn category(&self, category: Category) -> Option<&CategoryConfig> {
        self.profile.category(category).map(|(_, c)| c)
    }

    /// A candidate for `category`; `after` names the rate-limited candidate this one
    /// replaces, if any.
    pub fn choose(
        &mut self,
        category: Category,
        after: Option<&str>,
    ) -> Result<(Choice, Candidate), SelectError> {
        self.choose_fitting(category, after, &|_| Ok(()))
    }

    /// [`Selector::choose`] among the candidates that `fits` accepts; the others are
    /// named in the error with its reason, like cooling and unavailable ones.
    pub(crate) fn choose_fitting(
        &mut self,
        category: Category,
        after: Option<&str>,
        fits: Fits<'_>,
    ) -> Result<(Choice, Candidate), SelectError> {
        let Some((from, config)) = self.profile.category(category) else {
            return Err(SelectError::NoCategory { category });
        };
        let now = (self.clock)();
        let cooling = {
            let mut cooldowns = self.cooldowns.lock().unwrap_or_else(|e| e.into_inner());
            cooldowns.retain(|_, until| *until > now);
            cooldowns.clone()
        };
        let mut reasons = Vec::new();
        let mut usable: Vec<usize> = Vec::new();
        for (i, candidate) in config.candidates.iter().enumerate() {
            let label = label(candidate);
            if let Some(until) = cooling.get(&label) {
                let left = until.saturating_duration_since(now);
                reasons.push(format!(
                    "{label} is cooling down after a rate limit ({}s left)",
                    // Rounded up: a cooldown just begun reads as its full length.
                    left.as_millis().div_ceil(1000).max(1)
                ));
                continue;
            }
            if let Err(why) = (self.available)(from, candidate) {
                reasons.push(format!("{label} is not available ({why})"));
                continue;
            }
            if let Err(why) = fits(candidate) {
                reasons.push(format!("{label} {why}"));
                continue;
            }
            usable.push(i);
        }
        let forced = self.force.as_ref().map(|force| {
            usable
                .iter()
                .copied()
                .find(|&i| force.matches(&config.candidates[i]))
        });
        let (index, reason) = match forced {
            Some(Some(i)) => (i, Reason::Forced),
            Some(None) => {
                reasons.push("the forced candidate is not among the usable ones".into());
                return Err(SelectError::NoneAvailable { category, reasons });
            }
            None => {
                let total: u64 = usable
                    .iter()
                    .map(|&i| u64::from(config.candidates[i].weight))
                    .sum();
                if total == 0 {
                    if !usable.is_empty() {
                        reasons.push("the others have weight 0".into());
                    }
                    return Err(SelectError::NoneAvailable { category, reasons });
                }
                let mut draw = self.rng.below(total);
                let mut chosen = usable[0];
                for &i in &usable {
                    let weight = u64::from(config.candidates[i].weight);
                    if draw < weight {
                        chosen = i;
                        break;
                    }
                    draw -= weight;
                }
                (chosen, Reason::Weighted)
            }
        };
        let reason = match after {
            Some(after) => Reason::Fallback {
                after: after.to_owned(),
            },
            None => reason,
        };
        let candidate = config.candidates[index].clone();
        Ok((
            Choice {
                category,
                from,
                index,
                tool: candidate.tool.clone(),
                model: candidate.model.clone(),
                reason,
            },
            candidate,
        ))
    }

    /// `choice` was rate limited: skip it for its category's `cooldownSec`. Returns whether
    /// the category falls back to another candidate (`fallbackOnRateLimit`).
    pub fn rate_limited(&mut self, choice: &Choice) -> bool {
        let Some(config) = self.profile.category(choice.category).map(|(_, c)| c) else {
            return false;
        };
        if !config.fallback_on_rate_limit {
            return false;
        }
        let until = (self.clock)() + Duration::from_secs(config.cooldown_sec);
        self.cooldowns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(choice.label(), until);
        true
    }
}

fn label(candidate: &Candidate) -> String {
    match &candidate.model {
        Some(model) => format!("{} {model}", candidate.tool),
        None => candidate.tool.clone(),
    }
}

/// `runner.worker` with a `worker` candidate applied: its tool as the kind (another kind
/// drops the image, auth path, command and flags that were the old kind's), its model,
/// its flags and env added. The result is checked like `runner.worker` itself.
pub(crate) fn apply_worker(
    worker: &WorkerConfig,
    candidate: &Candidate,
) -> Result<WorkerConfig, WorkerCandidateError> {
    let kind: WorkerKind = serde_json::from_value(Value::String(candidate.tool.clone()))
        .map_err(|_| WorkerCandidateError::NotAKind(candidate.tool.clone()))?;
    let mut applied = worker.clone();
    if kind != worker.kind {
        applied.kind = kind;
        applied.docker_image = None;
        applied.auth_path = None;
        applied.model = None;
        applied.flags.clear();
        applied.command.clear();
    }
    if let Some(model) = &candidate.model {
        applied.model = Some(model.clone());
    }
    applied.flags.extend(candidate.flags.iter().cloned());
    applied
        .env
        .extend(candidate.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    applied.validate().map_err(WorkerCandidateError::Invalid)?;
    Ok(applied)
}

/// Why a `worker` candidate cannot be applied to `runner.worker`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WorkerCandidateError {
    /// `tool` names no worker kind.
    NotAKind(String),
    /// The worker it makes is not valid (e.g. `command` without `runner.worker.command`).
    Invalid(WorkerConfigError),
}

impl std::fmt::Display for WorkerCandidateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkerCandidateError::NotAKind(tool) => write!(f, "`{tool}` is not a worker kind"),
            WorkerCandidateError::Invalid(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for WorkerCandidateError {}

/// Lines from the end of a worker run's stderr, stdout and final message that are searched
/// for a rate limit: a CLI's own error comes last, while the agent's work above it (build
/// logs, code it printed) may well mention a quota or contain `429`.
const RATE_LIMIT_LINES: usize = 5;
/// The longest quote of that line kept for the timeline, in characters.
const EVIDENCE_CHARS: usize = 200;

/// The line of a worker run's output that says its provider refused for a rate limit or
/// an exhausted quota, if one does, by the rule planner CLIs are judged by
/// ([`mentions_rate_limit`]). Only a run that exited non-zero counts (a CLI that finished
/// its turn was not stopped by a limit), and only the last lines of each stream and of
/// the final message.
pub(crate) fn worker_rate_limit(run: &WorkerRun) -> Option<String> {
    if run.ending != RunEnding::Exited || run.exit_code == Some(0) {
        return None;
    }
    [&run.stderr_tail, &run.stdout_tail, &run.summary]
        .into_iter()
        .find_map(|text| {
            text.lines()
                .rev()
                .map(str::trim)
                .filter(|line| !line.is_empty())
                .take(RATE_LIMIT_LINES)
                .find(|line| mentions_rate_limit(line))
        })
        .map(|line| super::worker::truncate_chars(line, EVIDENCE_CHARS))
}

/// The worker under `runner.tooling`: the candidate the task's runs use and, after a run
/// that was rate limited, the switch to another. The worker is drawn before the sandbox
/// starts (its kind decides the image), so a later run can only move to a candidate that
/// runs in that same sandbox: the same kind, image and login, with its own model, flags
/// and env. The others are skipped, and the timeline says so: they are not refused when
/// the file is read, since the original's own profiles mix kinds (a Codex worker with a
/// Claude one to fall back on).
pub(crate) struct WorkerTooling {
    /// Shares its cooldowns with the planner's selector.
    selector: Selector,
    /// `runner.worker` as written: every candidate is applied to it.
    base: WorkerConfig,
    /// The candidate in use, and `base` with it applied.
    choice: Choice,
    config: WorkerConfig,
}

impl std::fmt::Debug for WorkerTooling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerTooling")
            .field("choice", &self.choice)
            .finish_non_exhaustive()
    }
}

/// What follows a rate-limited worker run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AfterRateLimit {
    /// For the Task Note's timeline: the candidate the next runs use and why, or why the
    /// same one again.
    pub line: String,
    /// `runner.worker` for the next runs, when another candidate takes over.
    pub switch_to: Option<WorkerConfig>,
}

impl WorkerTooling {
    /// `choice` was drawn and applied to `base` (`runner.worker` as written), giving
    /// `config`, the worker the sandbox is made for.
    pub(crate) fn new(
        selector: Selector,
        base: WorkerConfig,
        choice: Choice,
        config: WorkerConfig,
    ) -> WorkerTooling {
        WorkerTooling {
            selector,
            base,
            choice,
            config,
        }
    }

    /// The candidate the next run uses.
    pub(crate) fn choice(&self) -> &Choice {
        &self.choice
    }

    /// After `run`, made with the current candidate: when its output says it was rate
    /// limited, the candidate cools down and another one that runs in this sandbox takes
    /// over (drawn by weight, as ever). A forced worker never falls back, nor does a
    /// category with `fallbackOnRateLimit: false`; then, or when no other candidate fits
    /// or is free, the same one runs again and the planner decides, as without tooling.
    /// `None` when the run was not rate limited.
    pub(crate) fn after_run(&mut self, run: &WorkerRun) -> Option<AfterRateLimit> {
        let evidence = worker_rate_limit(run)?;
        let limited = self.choice.label();
        let said = format!("{} with {limited} was rate limited ({evidence})", run.id);
        let stays = |why: &str| {
            Some(AfterRateLimit {
                line: format!("tooling: {said}; no fallback: {why}"),
                switch_to: None,
            })
        };
        if self.selector.forced() {
            return stays(
                "the worker is forced (`force.enabled`), and a forced candidate is always used",
            );
        }
        if !self.selector.rate_limited(&self.choice) {
            return stays("`fallbackOnRateLimit` is false for `worker`");
        }
        let (base, current) = (&self.base, &self.config);
        let fits = |candidate: &Candidate| same_sandbox(base, current, candidate).map(|_| ());
        let chosen = self
            .selector
            .choose_fitting(Category::Worker, Some(&limited), &fits)
            .map_err(|e| e.to_string())
            .and_then(|(choice, candidate)| {
                same_sandbox(base, current, &candidate).map(|config| (choice, config))
            });
        match chosen {
            Ok((choice, config)) => {
                let mut line = format!("tooling: {said}; the next runs use {}", choice.summary());
                let skipped = self.unfit();
                if !skipped.is_empty() {
                    line.push_str(&format!(
                        "; skipped, as they need another sandbox: {}",
                        skipped.join("; ")
                    ));
                }
                self.choice = choice;
                self.config = config.clone();
                Some(AfterRateLimit {
                    line,
                    switch_to: Some(config),
                })
            }
            Err(why) => stays(&why),
        }
    }

    /// The worker candidates that cannot run in this sandbox, each with why.
    fn unfit(&self) -> Vec<String> {
        self.selector
            .category(Category::Worker)
            .map(|config| {
                config
                    .candidates
                    .iter()
                    .filter_map(|c| {
                        same_sandbox(&self.base, &self.config, c)
                            .err()
                            .map(|why| format!("{} {why}", label(c)))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// `candidate` applied to `base`, if it runs in the sandbox made for `current`: the same
/// worker kind, image and login (what the sandbox was started with; the model, flags and
/// env go with each run). Else why not, after the candidate's label.
fn same_sandbox(
    base: &WorkerConfig,
    current: &WorkerConfig,
    candidate: &Candidate,
) -> Result<WorkerConfig, String> {
    let applied = apply_worker(base, candidate)
        .map_err(|e| format!("cannot be applied to `runner.worker` ({e})"))?;
    let image = super::images::image_of;
    if applied.kind != current.kind
        || image(&applied) != image(current)
        || applied.auth_path != current.auth_path
    {
        return Err(format!(
            "needs another sandbox ({} in {}; this one is for {} in {})",
            applied.kind.name(),
            image(&applied),
            current.kind.name(),
            image(current)
        ));
    }
    Ok(applied)
}

/// The real availability check: a planner `openai-chat` candidate needs its API key
/// variable set, a planner CLI its program on PATH (or at its path); `mock` and worker
/// candidates (which run in the worker image, checked by preflight) always can.
pub(crate) fn host_availability(default_api_key_env: String, read: EnvReader) -> Availability {
    Box::new(move |category, candidate| {
        if category == Category::Worker {
            return Ok(());
        }
        match candidate.tool.as_str() {
            "openai-chat" => {
                let variable = candidate
                    .tool_specific
                    .get("api_key_env")
                    .and_then(Value::as_str)
                    .unwrap_or(&default_api_key_env);
                match read(variable) {
                    Some(key) if !key.trim().is_empty() => Ok(()),
                    _ => Err(format!("{variable} is not set")),
                }
            }
            "codex-cli" | "claude-code" => {
                let default = if candidate.tool == "codex-cli" {
                    "codex"
                } else {
                    "claude"
                };
                let program = candidate.cli_path.as_deref().unwrap_or(default);
                if on_path(program, read("PATH")) {
                    Ok(())
                } else {
                    Err(format!("`{program}` is not on PATH"))
                }
            }
            _ => Ok(()),
        }
    })
}

/// Whether `program` (a path, or a name looked up in `path`) is an executable file.
fn on_path(program: &str, path: Option<String>) -> bool {
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return executable(Path::new(program));
    }
    path.as_deref()
        .unwrap_or("")
        .split(':')
        .filter(|dir| !dir.is_empty())
        .any(|dir| executable(&Path::new(dir).join(program)))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    fn config(json: &str) -> ToolingConfig {
        serde_json::from_str(json).unwrap()
    }

    fn candidate(tool: &str, model: &str, weight: u32) -> Value {
        serde_json::json!({"tool": tool, "model": model, "weight": weight})
    }

    fn tooling(meta: Vec<Value>, extra: Value) -> ToolingConfig {
        let mut category =
            serde_json::json!({"strategy": "weighted", "cooldownSec": 30, "candidates": meta});
        if let (Some(c), Some(e)) = (category.as_object_mut(), extra.as_object()) {
            c.extend(e.clone());
        }
        config(
            &serde_json::json!({"activeProfile": "balanced",
                "profiles": {"balanced": {"meta": category}}})
            .to_string(),
        )
    }

    struct FakeClock(Arc<Mutex<Instant>>);

    impl FakeClock {
        fn new() -> (FakeClock, Clock) {
            let now = Arc::new(Mutex::new(Instant::now()));
            let shared = now.clone();
            (
                FakeClock(now),
                Box::new(move || *shared.lock().unwrap_or_else(|e| e.into_inner())),
            )
        }

        fn advance(&self, by: Duration) {
            let mut now = self.0.lock().unwrap_or_else(|e| e.into_inner());
            *now += by;
        }
    }

    fn all_available() -> Availability {
        Box::new(|_, _| Ok(()))
    }

    #[test]
    fn weights_are_respected_over_many_draws_and_a_seed_repeats_them() {
        let config = tooling(
            vec![
                candidate("openai-chat", "a", 1),
                candidate("openai-chat", "b", 3),
                candidate("mock", "c", 0),
            ],
            Value::Null,
        );
        let draw = |seed| {
            let (_, clock) = FakeClock::new();
            let mut selector =
                Selector::new(&config, SplitMix64::new(seed), clock, all_available());
            (0..4000)
                .map(|_| selector.choose(Category::Meta, None).unwrap().0)
                .collect::<Vec<_>>()
        };
        let choices = draw(7);
        let b = choices
            .iter()
            .filter(|c| c.model.as_deref() == Some("b"))
            .count();
        let c = choices
            .iter()
            .filter(|c| c.model.as_deref() == Some("c"))
            .count();
        // 3/4 of 4000 = 3000; a fair generator stays well within ±150.
        assert!((2850..=3150).contains(&b), "b drawn {b} times");
        assert_eq!(c, 0, "a weight-0 candidate is never drawn");
        assert!(choices.iter().all(|c| c.reason == Reason::Weighted));
        assert_eq!(choices, draw(7), "the same seed, the same choices");
        assert_ne!(choices, draw(8));
    }

    #[test]
    fn an_undefined_category_falls_back_to_meta() {
        let config = tooling(vec![candidate("mock", "m", 1)], Value::Null);
        let (_, clock) = FakeClock::new();
        let mut selector = Selector::new(&config, SplitMix64::new(1), clock, all_available());
        let (choice, _) = selector.choose(Category::Plan, None).unwrap();
        assert_eq!(
            (choice.category, choice.from),
            (Category::Plan, Category::Meta)
        );
        assert_eq!(choice.to_string(), "plan: mock m (weighted)");
    }

    #[test]
    fn a_rate_limited_candidate_cools_down_until_its_time_is_up() {
        let config = tooling(
            vec![
                candidate("openai-chat", "a", 1),
                candidate("openai-chat", "b", 1),
            ],
            Value::Null,
        );
        let (time, clock) = FakeClock::new();
        let mut selector = Selector::new(&config, SplitMix64::new(3), clock, all_available());
        let (first, _) = selector.choose(Category::Meta, None).unwrap();
        assert!(selector.rate_limited(&first));
        for _ in 0..50 {
            let (next, _) = selector
                .choose(Category::Meta, Some(&first.label()))
                .unwrap();
            assert_ne!(next.model, first.model, "a cooling candidate is skipped");
            assert_eq!(
                next.reason,
                Reason::Fallback {
                    after: first.label()
                }
            );
        }
        time.advance(Duration::from_secs(29));
        assert!(
            (0..50).all(|_| selector.choose(Category::Meta, None).unwrap().0.model != first.model)
        );
        time.advance(Duration::from_secs(2));
        assert!(
            (0..50).any(|_| selector.choose(Category::Meta, None).unwrap().0.model == first.model),
            "after cooldownSec the candidate is drawn again"
        );
    }

    #[test]
    fn when_all_are_cooling_down_the_error_names_them() {
        let config = tooling(
            vec![
                candidate("openai-chat", "a", 1),
                candidate("claude-code", "b", 1),
            ],
            Value::Null,
        );
        let (_, clock) = FakeClock::new();
        let mut selector = Selector::new(&config, SplitMix64::new(3), clock, all_available());
        for _ in 0..2 {
            let (choice, _) = selector.choose(Category::Meta, None).unwrap();
            selector.rate_limited(&choice);
        }
        let e = selector
            .choose(Category::Meta, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("openai-chat a is cooling down after a rate limit (30s left)")
                && e.contains("claude-code b is cooling down"),
            "{e}"
        );
    }

    #[test]
    fn without_fallback_a_rate_limit_does_not_cool_down() {
        let config = tooling(
            vec![candidate("openai-chat", "a", 1)],
            serde_json::json!({"fallbackOnRateLimit": false}),
        );
        let (_, clock) = FakeClock::new();
        let mut selector = Selector::new(&config, SplitMix64::new(3), clock, all_available());
        let (choice, _) = selector.choose(Category::Meta, None).unwrap();
        assert!(!selector.rate_limited(&choice));
        assert!(selector.choose(Category::Meta, None).is_ok());
    }

    #[test]
    fn unavailable_candidates_are_skipped_and_named() {
        let config = tooling(
            vec![
                candidate("openai-chat", "a", 100),
                candidate("mock", "m", 1),
            ],
            Value::Null,
        );
        let (_, clock) = FakeClock::new();
        let no_key: Availability = Box::new(|_, c| {
            if c.tool == "openai-chat" {
                Err("OPENAI_API_KEY is not set".into())
            } else {
                Ok(())
            }
        });
        let mut selector = Selector::new(&config, SplitMix64::new(3), clock, no_key);
        assert!((0..50).all(|_| selector.choose(Category::Meta, None).unwrap().0.tool == "mock"));
        let config = tooling(vec![candidate("openai-chat", "a", 1)], Value::Null);
        let (_, clock) = FakeClock::new();
        let no_key: Availability = Box::new(|_, _| Err("OPENAI_API_KEY is not set".into()));
        let e = Selector::new(&config, SplitMix64::new(3), clock, no_key)
            .choose(Category::Meta, None)
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("openai-chat a is not available (OPENAI_API_KEY is not set)"),
            "{e}"
        );
    }

    #[test]
    fn force_takes_the_first_or_the_named_candidate() {
        let mut config = tooling(
            vec![
                candidate("openai-chat", "a", 1),
                candidate("mock", "m", 0),
                candidate("mock", "n", 5),
            ],
            Value::Null,
        );
        config.force = Some(ForceSpec {
            enabled: true,
            ..ForceSpec::default()
        });
        let (_, clock) = FakeClock::new();
        let mut selector = Selector::new(&config, SplitMix64::new(3), clock, all_available());
        assert!((0..20).all(|_| {
            let (c, _) = selector.choose(Category::Meta, None).unwrap();
            c.model.as_deref() == Some("a") && c.reason == Reason::Forced
        }));
        config.force = Some(ForceSpec {
            enabled: true,
            tool: Some("mock".into()),
            model: Some("m".into()),
        });
        assert!(
            config.check(&WorkerConfig::default()).is_empty(),
            "{:?}",
            config.check(&WorkerConfig::default())
        );
        let (_, clock) = FakeClock::new();
        let mut selector = Selector::new(&config, SplitMix64::new(3), clock, all_available());
        let (c, _) = selector.choose(Category::Meta, None).unwrap();
        assert_eq!(
            (c.model.as_deref(), c.reason),
            (Some("m"), Reason::Forced),
            "weight 0 can be forced"
        );
        config.force = Some(ForceSpec {
            enabled: true,
            tool: Some("claude-code".into()),
            model: None,
        });
        let findings = config.check(&WorkerConfig::default());
        assert!(
            findings.iter().any(|f| f.pointer == "/force"),
            "{findings:?}"
        );
    }

    #[test]
    fn check_names_bad_tools_profiles_and_misplaced_keys() {
        let config = config(
            r#"{"activeProfile": "fast", "profiles": {"balanced": {
                "meta": {"candidates": [{"tool": "gemini-cli", "flags": ["-x"]}]},
                "worker": {"candidates": [{"tool": "gemini-cli", "weight": 0, "systemPrompt": "x"}]}}}}"#,
        );
        let findings = config.check(&WorkerConfig::default());
        let pointers: Vec<&str> = findings.iter().map(|f| f.pointer.as_str()).collect();
        assert_eq!(
            pointers,
            [
                "/activeProfile",
                "/profiles/balanced/meta/candidates/0/tool",
                "/profiles/balanced/meta/candidates/0",
                "/profiles/balanced/worker/candidates/0",
                "/profiles/balanced/worker/candidates",
            ],
            "{findings:?}"
        );
        assert!(
            findings[1]
                .help
                .contains("openai-chat, codex-cli, claude-code, mock")
        );
        let e = serde_json::from_str::<ToolingConfig>(r#"{"profiles": {}, "activProfile": "x"}"#)
            .unwrap_err();
        assert!(
            e.to_string().contains("unknown field `activProfile`"),
            "{e}"
        );
    }

    #[test]
    fn a_worker_candidate_is_applied_to_runner_worker() {
        let c = |v: Value| serde_json::from_value::<Candidate>(v).unwrap();
        let worker: WorkerConfig = serde_json::from_value(serde_json::json!({
            "kind": "codex-cli", "model": "m0", "docker_image": "img", "flags": ["--a"],
            "env": {"X": "1"}}))
        .unwrap();
        let same = apply_worker(
            &worker,
            &c(serde_json::json!({"tool": "codex-cli", "flags": ["--b"], "env": {"Y": "2"}})),
        )
        .unwrap();
        assert_eq!(
            (same.model.as_deref(), same.docker_image.as_deref()),
            (Some("m0"), Some("img"))
        );
        assert_eq!(same.flags, ["--a", "--b"]);
        assert_eq!(same.env.len(), 2);
        let other = apply_worker(
            &worker,
            &c(serde_json::json!({"tool": "claude-code", "model": "haiku"})),
        )
        .unwrap();
        assert_eq!(other.kind, WorkerKind::ClaudeCode);
        assert_eq!(other.model.as_deref(), Some("haiku"));
        assert_eq!(
            other.docker_image, None,
            "the old kind's image is not this kind's"
        );
        assert!(other.flags.is_empty());
        let e = apply_worker(&worker, &c(serde_json::json!({"tool": "command"}))).unwrap_err();
        assert!(matches!(e, WorkerCandidateError::Invalid(_)), "{e}");
        assert!(e.to_string().contains("command"), "{e}");
    }

    #[test]
    fn availability_looks_for_the_key_and_the_cli() {
        let dir = std::env::temp_dir().join(format!("tooling-path-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let program = dir.join("codex");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.display().to_string();
        let check = host_availability(
            "OPENAI_API_KEY".into(),
            Box::new(move |name| match name {
                "PATH" => Some(path.clone()),
                "MY_KEY" => Some("sk".into()),
                _ => None,
            }),
        );
        let c = |v: Value| serde_json::from_value::<Candidate>(v).unwrap();
        assert!(check(Category::Meta, &c(serde_json::json!({"tool": "codex-cli"}))).is_ok());
        let e = check(
            Category::Meta,
            &c(serde_json::json!({"tool": "claude-code"})),
        )
        .unwrap_err();
        assert_eq!(e, "`claude` is not on PATH");
        let e = check(
            Category::Meta,
            &c(serde_json::json!({"tool": "openai-chat"})),
        )
        .unwrap_err();
        assert_eq!(e, "OPENAI_API_KEY is not set");
        assert!(check(
            Category::Meta,
            &c(serde_json::json!({"tool": "openai-chat", "toolSpecific": {"api_key_env": "MY_KEY"}}))
        )
        .is_ok());
        assert!(
            check(
                Category::Worker,
                &c(serde_json::json!({"tool": "gemini-cli"}))
            )
            .is_ok()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn worker_run(id: &str, exit_code: i32, stderr: &str) -> WorkerRun {
        WorkerRun {
            id: id.into(),
            started_at: String::new(),
            finished_at: String::new(),
            duration_ms: 1,
            exit_code: Some(exit_code),
            ending: RunEnding::Exited,
            stdout_tail: String::new(),
            stderr_tail: stderr.into(),
            summary: String::new(),
            files_changed: Vec::new(),
            diff_stat: String::new(),
            error: None,
            refused: Vec::new(),
            candidate: None,
        }
    }

    const LIMITED: &str = "ERROR: 429 Too Many Requests: usage limit reached";

    /// The default image of a worker kind.
    fn image(kind: WorkerKind) -> String {
        crate::runner::images::image_of(&WorkerConfig {
            kind,
            ..WorkerConfig::default()
        })
    }

    /// A profile whose `worker` block has these candidates (and a `meta` one, `mock`).
    fn worker_profile(candidates: Value, extra: Value) -> ToolingConfig {
        let mut worker = serde_json::json!({"cooldownSec": 30, "candidates": candidates});
        if let (Some(w), Some(e)) = (worker.as_object_mut(), extra.as_object()) {
            w.extend(e.clone());
        }
        config(
            &serde_json::json!({"profiles": {"p": {
                "meta": {"candidates": [{"tool": "mock"}]}, "worker": worker}}})
            .to_string(),
        )
    }

    /// The worker tooling of a task whose first draw took candidate `index` (as the
    /// setup does: applied to `runner.worker`, the default Codex one here).
    fn worker_tooling(
        config: &ToolingConfig,
        index: usize,
        seed: u64,
        clock: Clock,
    ) -> WorkerTooling {
        let selector = Selector::new(config, SplitMix64::new(seed), clock, all_available());
        let candidate = selector.category(Category::Worker).unwrap().candidates[index].clone();
        let base = WorkerConfig::default();
        let applied = apply_worker(&base, &candidate).unwrap();
        let choice = Choice {
            category: Category::Worker,
            from: Category::Worker,
            index,
            tool: candidate.tool.clone(),
            model: candidate.model.clone(),
            reason: Reason::Weighted,
        };
        WorkerTooling::new(selector, base, choice, applied)
    }

    #[test]
    fn a_worker_run_is_rate_limited_when_it_failed_saying_so_at_its_end() {
        let limited = worker_run("run-1", 1, &format!("starting\n{LIMITED}\n"));
        assert_eq!(worker_rate_limit(&limited).as_deref(), Some(LIMITED));
        // The planner CLIs' rule: quota and "rate limit" too, in any case.
        for text in [
            "You exceeded your current QUOTA",
            "Rate-limit hit, retry later",
        ] {
            assert!(
                worker_rate_limit(&worker_run("r", 1, text)).is_some(),
                "{text}"
            );
        }
        // Claude's result envelope on stdout, as its final message.
        let mut claude = worker_run("r", 1, "");
        claude.stdout_tail =
            r#"{"type":"result","is_error":true,"result":"API Error: Rate limit reached"}"#.into();
        assert!(worker_rate_limit(&claude).is_some());
        let mut summary = worker_run("r", 1, "");
        summary.summary = "Codex stopped: you have hit your usage quota".into();
        assert!(worker_rate_limit(&summary).is_some());
        // A run that finished its turn was not stopped by a limit, whatever it printed.
        assert_eq!(worker_rate_limit(&worker_run("r", 0, LIMITED)), None);
        let mut timed_out = worker_run("r", 124, LIMITED);
        timed_out.ending = RunEnding::TimedOut;
        assert_eq!(worker_rate_limit(&timed_out), None);
        assert_eq!(
            worker_rate_limit(&worker_run("r", 1, "segmentation fault")),
            None
        );
        // The agent's work above the CLI's last lines may mention quotas or 429 freely.
        let buried = format!(
            "test quota::refill ... FAILED at line 429\n{}",
            "step\n".repeat(5)
        );
        assert_eq!(worker_rate_limit(&worker_run("r", 1, &buried)), None);
        let long = worker_run("r", 1, &format!("429 {}", "x".repeat(1000)));
        assert!(worker_rate_limit(&long).unwrap().chars().count() <= EVIDENCE_CHARS + 1);
    }

    #[test]
    fn a_rate_limited_worker_falls_back_to_a_candidate_of_the_same_sandbox() {
        let config = worker_profile(
            serde_json::json!([
                {"tool": "codex-cli", "model": "a", "weight": 10},
                {"tool": "claude-code", "model": "c", "weight": 1000},
                {"tool": "codex-cli", "model": "b", "weight": 1, "env": {"X": "1"}},
                {"tool": "codex-cli", "model": "d", "weight": 1}]),
            Value::Null,
        );
        let mut next = Vec::new();
        for seed in 0..40 {
            let (_, clock) = FakeClock::new();
            let mut tooling = worker_tooling(&config, 0, seed, clock);
            let after = tooling.after_run(&worker_run("run-1", 1, LIMITED)).unwrap();
            let worker = after
                .switch_to
                .expect("a candidate of the same kind takes over");
            assert_eq!(worker.kind, WorkerKind::CodexCli, "never the Claude one");
            assert!(
                after.line.starts_with(&format!(
                    "tooling: run-1 with codex-cli a was rate limited ({LIMITED}); the next runs use codex-cli "
                )) && after.line.contains("(fallback after codex-cli a was rate limited)")
                    && after.line.ends_with(&format!(
                        "; skipped, as they need another sandbox: claude-code c needs another sandbox (claude-code in {}; this one is for codex-cli in {})",
                        image(WorkerKind::ClaudeCode),
                        image(WorkerKind::CodexCli)
                    )),
                "{}",
                after.line
            );
            assert_eq!(tooling.choice().model, worker.model);
            assert_eq!(
                tooling.choice().reason,
                Reason::Fallback {
                    after: "codex-cli a".into()
                }
            );
            next.push(worker.model.clone());
            // The same seed, the same fallback.
            let (_, clock) = FakeClock::new();
            let again = worker_tooling(&config, 0, seed, clock)
                .after_run(&worker_run("run-1", 1, LIMITED))
                .unwrap();
            assert_eq!(again.switch_to.and_then(|w| w.model), worker.model);
        }
        assert!(next.contains(&Some("b".into())) && next.contains(&Some("d".into())));
        assert!(!next.contains(&Some("a".into())), "a is cooling down");
    }

    #[test]
    fn with_no_other_candidate_for_the_sandbox_the_worker_stays_and_the_line_says_why() {
        let config = worker_profile(
            serde_json::json!([
                {"tool": "codex-cli", "model": "a"},
                {"tool": "codex-cli", "model": "b"},
                {"tool": "gemini-cli", "model": "g"}]),
            Value::Null,
        );
        let (time, clock) = FakeClock::new();
        let mut tooling = worker_tooling(&config, 0, 1, clock);
        assert_eq!(
            tooling.after_run(&worker_run("run-1", 1, "boom")),
            None,
            "not a rate limit"
        );
        let first = tooling.after_run(&worker_run("run-2", 1, LIMITED)).unwrap();
        assert_eq!(first.switch_to.and_then(|w| w.model).as_deref(), Some("b"));
        let stay = tooling.after_run(&worker_run("run-3", 1, LIMITED)).unwrap();
        assert_eq!(stay.switch_to, None);
        assert_eq!(
            stay.line,
            format!(
                "tooling: run-3 with codex-cli b was rate limited ({LIMITED}); no fallback: runner.tooling: no `worker` candidate can be used now: codex-cli a is cooling down after a rate limit (30s left); codex-cli b is cooling down after a rate limit (30s left); gemini-cli g needs another sandbox (gemini-cli in {}; this one is for codex-cli in {})",
                image(WorkerKind::GeminiCli),
                image(WorkerKind::CodexCli)
            )
        );
        assert_eq!(
            tooling.choice().model.as_deref(),
            Some("b"),
            "the same one again"
        );
        // Once a's cooldown is over, the next limit moves back to it.
        time.advance(Duration::from_secs(31));
        let back = tooling.after_run(&worker_run("run-4", 1, LIMITED)).unwrap();
        assert_eq!(back.switch_to.and_then(|w| w.model).as_deref(), Some("a"));
    }

    #[test]
    fn a_forced_worker_never_falls_back_nor_cools_down() {
        let mut config = worker_profile(
            serde_json::json!([{"tool": "codex-cli", "model": "a"}, {"tool": "codex-cli", "model": "b"}]),
            Value::Null,
        );
        config.force = Some(ForceSpec {
            enabled: true,
            tool: Some("codex-cli".into()),
            model: Some("a".into()),
        });
        let (_, clock) = FakeClock::new();
        let mut tooling = worker_tooling(&config, 0, 1, clock);
        for run in ["run-1", "run-2"] {
            let after = tooling.after_run(&worker_run(run, 1, LIMITED)).unwrap();
            assert_eq!(after.switch_to, None);
            assert!(
                after.line.ends_with(
                    "no fallback: the worker is forced (`force.enabled`), and a forced candidate is always used"
                ),
                "{}",
                after.line
            );
        }
        assert!(
            tooling.selector.cooldowns.lock().unwrap().is_empty(),
            "a forced candidate is not cooled down"
        );
    }

    #[test]
    fn without_fallback_on_rate_limit_the_worker_stays() {
        let config = worker_profile(
            serde_json::json!([{"tool": "codex-cli", "model": "a"}, {"tool": "codex-cli", "model": "b"}]),
            serde_json::json!({"fallbackOnRateLimit": false}),
        );
        let (_, clock) = FakeClock::new();
        let mut tooling = worker_tooling(&config, 0, 1, clock);
        let after = tooling.after_run(&worker_run("run-1", 1, LIMITED)).unwrap();
        assert_eq!(after.switch_to, None);
        assert!(
            after
                .line
                .ends_with("no fallback: `fallbackOnRateLimit` is false for `worker`"),
            "{}",
            after.line
        );
    }

    #[test]
    fn a_worker_rate_limit_cools_the_same_tool_and_model_for_the_planner() {
        let config = config(
            r#"{"profiles": {"p": {
                "meta": {"cooldownSec": 30, "candidates": [
                    {"tool": "codex-cli", "model": "gpt-5.2", "weight": 1000}, {"tool": "mock"}]},
                "worker": {"cooldownSec": 30, "candidates": [
                    {"tool": "codex-cli", "model": "gpt-5.2"}, {"tool": "codex-cli", "model": "m"}]}}}}"#,
        );
        let (_, clock) = FakeClock::new();
        let mut planner = Selector::new(&config, SplitMix64::new(2), clock, all_available());
        let (_, clock) = FakeClock::new();
        let sibling = planner.sibling(SplitMix64::new(2), clock, all_available());
        let base = WorkerConfig::default();
        let candidate = sibling.category(Category::Worker).unwrap().candidates[0].clone();
        let choice = Choice {
            category: Category::Worker,
            from: Category::Worker,
            index: 0,
            tool: candidate.tool.clone(),
            model: candidate.model.clone(),
            reason: Reason::Weighted,
        };
        let applied = apply_worker(&base, &candidate).unwrap();
        let mut worker = WorkerTooling::new(sibling, base, choice, applied);
        assert!(
            (0..20).any(|_| planner.choose(Category::Meta, None).unwrap().0.tool == "codex-cli")
        );
        let after = worker.after_run(&worker_run("run-1", 1, LIMITED)).unwrap();
        assert!(after.switch_to.is_some());
        assert!(
            (0..50).all(|_| planner.choose(Category::Meta, None).unwrap().0.tool == "mock"),
            "the planner's codex-cli gpt-5.2 cools down with the worker's"
        );
    }
}
