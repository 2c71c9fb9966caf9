//! The process environment as a value: read once by a binary's entry point and handed
//! down, so that nothing below looks a variable up by itself.
//!
//! Where a model, a runtime, a cache, a state directory or a home is found changes what a
//! command answers, so it is a parameter, never an ambient lookup: a caller inside the
//! process (a test above all) says exactly which variables are in play with
//! [`Environment::empty`] and [`Environment::with`], and a developer's installed model,
//! `XDG_*` directories or exported variables cannot reach it. Only the binaries and `cli`
//! call [`Environment::of_process`] (the `tidy` test checks that no other file reads the
//! process environment).
//!
//! Two reads stay with the process on purpose: a secret a setting names by its variable
//! ([`secret`]), read at the moment it is sent so it is never copied into a value that
//! could be logged, and the program search path ([`program_path`]), which the operating
//! system uses for every child anyway.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

/// Environment variables by name. Its `Debug` shows names only: values may be secrets.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Environment {
    vars: BTreeMap<OsString, OsString>,
}

impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.vars.keys()).finish()
    }
}

impl Environment {
    /// The environment this process was started with. Only entry points call this.
    pub fn of_process() -> Environment {
        Environment {
            vars: std::env::vars_os().collect(),
        }
    }

    /// No variable at all: every location comes from settings or arguments.
    pub fn empty() -> Environment {
        Environment::default()
    }

    /// This environment with `name` set to `value`.
    #[must_use]
    pub fn with(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Environment {
        self.vars.insert(name.into(), value.into());
        self
    }

    /// This environment without `name`.
    #[must_use]
    pub fn without(mut self, name: impl AsRef<OsStr>) -> Environment {
        self.vars.remove(name.as_ref());
        self
    }

    /// The value of `name` when it is set and not empty (an empty variable counts as
    /// unset everywhere in this project).
    pub fn var_os(&self, name: &str) -> Option<&OsStr> {
        self.vars
            .get(OsStr::new(name))
            .map(OsString::as_os_str)
            .filter(|v| !v.is_empty())
    }

    /// The value of `name` as text, when set, not blank and valid UTF-8.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.var_os(name)
            .and_then(OsStr::to_str)
            .filter(|v| !v.trim().is_empty())
    }

    /// The value of `name` as a path, when set and not empty.
    pub fn path(&self, name: &str) -> Option<PathBuf> {
        self.var_os(name).map(PathBuf::from)
    }

    /// An XDG base directory (`XDG_CACHE_HOME`, `XDG_STATE_HOME`, ...): the variable when it
    /// is an absolute path (the specification ignores a relative one), else `fallback`
    /// under `HOME`.
    pub fn xdg_dir(&self, variable: &str, fallback: &str) -> Option<PathBuf> {
        match self.path(variable) {
            Some(dir) if dir.is_absolute() => Some(dir),
            _ => self.home().map(|home| home.join(fallback)),
        }
    }

    /// Every variable, by name.
    pub fn vars(&self) -> impl Iterator<Item = (&OsStr, &OsStr)> {
        self.vars
            .iter()
            .map(|(k, v)| (k.as_os_str(), v.as_os_str()))
    }

    /// `HOME`, when set and not empty.
    pub fn home(&self) -> Option<PathBuf> {
        self.path("HOME")
    }
}

/// A secret that a setting names by its variable (`api_key_env`, `token_env`), read from
/// the process when it is about to be sent; `None` when unset or blank. Never a location:
/// nothing else is looked up this way.
pub fn secret(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The process's program search path (`PATH`), which `std::process::Command` also uses:
/// a "which" must agree with what a spawn would find.
pub fn program_path() -> Option<OsString> {
    std::env::var_os("PATH")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_blank_values_count_as_unset() {
        let env = Environment::empty()
            .with("A", "")
            .with("B", "  ")
            .with("C", "x");
        assert_eq!(env.var_os("A"), None);
        assert_eq!(env.var("B"), None);
        assert_eq!(env.var_os("B"), Some(OsStr::new("  ")));
        assert_eq!(env.var("C"), Some("x"));
        assert_eq!(env.without("C").var("C"), None);
    }

    #[test]
    fn an_xdg_directory_must_be_absolute_else_home_decides() {
        let env = Environment::empty().with("HOME", "/h");
        assert_eq!(
            env.xdg_dir("XDG_CACHE_HOME", ".cache"),
            Some(PathBuf::from("/h/.cache"))
        );
        let relative = env.clone().with("XDG_CACHE_HOME", "rel");
        assert_eq!(
            relative.xdg_dir("XDG_CACHE_HOME", ".cache"),
            Some(PathBuf::from("/h/.cache"))
        );
        let absolute = env.with("XDG_CACHE_HOME", "/c");
        assert_eq!(
            absolute.xdg_dir("XDG_CACHE_HOME", ".cache"),
            Some(PathBuf::from("/c"))
        );
        assert_eq!(
            Environment::empty().xdg_dir("XDG_CACHE_HOME", ".cache"),
            None
        );
    }

    #[test]
    fn debug_shows_names_never_values() {
        let env = Environment::empty().with("API_KEY", "sk-secret");
        let shown = format!("{env:?}");
        assert!(
            shown.contains("API_KEY") && !shown.contains("sk-secret"),
            "{shown}"
        );
    }
}
