//! Where names are used. The index stores definitions only; a question about uses finds
//! the files that mention the name (a whole-word text search), tags them with the
//! references queries (`queries/<language>.refs.scm`), and gives each use its kind (call,
//! inherit, import, type, decorator, read) and its resolution: how far the file itself
//! says the use is of this name and not only spelled like it.
//!
//! The answer is always as fresh as the files: nothing about uses is cached on disk.

use std::collections::{BTreeMap, BTreeSet};

use super::languages;
use super::retag::{Job, Outcome, run_reference_jobs, stamp};
use super::root::Root;
use super::search::TextResult;
use super::tags::Tag;

/// Every reference kind the references queries produce (`@reference.KIND`; a test keeps
/// the two in step).
pub(crate) const REFERENCE_KINDS: &[&str] =
    &["call", "decorator", "import", "inherit", "read", "type"];

/// Receivers that mean "the enclosing class or type".
const SELF_WORDS: &[&str] = &["self", "this", "cls", "Self", "$this", "static", "parent"];

/// Path heads that mean "this crate or module" (Rust).
const MODULE_WORDS: &[&str] = &["crate", "super"];

/// How far the referencing file says a use is of the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Resolution {
    /// The use is an import of the name, or the file imports the name.
    Import,
    /// The file defines the name.
    Local,
    /// Reached through a module or type the file imports or defines (`admin.ModelAdmin`
    /// after `from django.contrib import admin`; `Config::load` after `use crate::Config`).
    Module,
    /// Reached through `self`, `this`, `cls` or `Self`.
    Receiver,
    /// Only the name matches: a bare name the file neither defines nor imports, or reached
    /// through a value whose type the file does not say (`d.items()`).
    Name,
}

impl Resolution {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Resolution::Import => "import",
            Resolution::Local => "local",
            Resolution::Module => "module",
            Resolution::Receiver => "self",
            Resolution::Name => "name",
        }
    }

    /// Whether the file says more than the name.
    pub(crate) fn is_bound(self) -> bool {
        self != Resolution::Name
    }
}

/// One use of a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Use {
    pub(crate) path: String,
    pub(crate) tag: Tag,
    pub(crate) resolution: Resolution,
}

/// A file that mentions one of the names, tagged with definitions and references.
#[derive(Debug, Clone)]
pub(crate) struct TaggedFile {
    pub(crate) path: String,
    pub(crate) tags: Vec<Tag>,
}

/// The source files of a whole-word text search for `names` (`search::search_words`),
/// tagged with definitions, imports and the references to `names`, on every core. Files
/// that vanish meanwhile are left out.
pub(crate) fn tag_found(root: &Root, found: &TextResult, names: &[String]) -> Vec<TaggedFile> {
    let mut jobs = Vec::new();
    for file in &found.files {
        let abs = root.path().join(&file.path);
        if languages::for_path(&abs).is_none() {
            continue;
        }
        let Some((size, mtime_ns)) = stamp(&abs) else {
            continue;
        };
        jobs.push(Job {
            abs,
            rel: file.path.clone(),
            size,
            mtime_ns,
            old: None,
        });
    }
    run_reference_jobs(jobs, names)
        .into_iter()
        .filter_map(|outcome| match outcome {
            Outcome::Tagged(entry) | Outcome::Touched(entry) => Some(TaggedFile {
                path: entry.path,
                tags: entry.tags,
            }),
            Outcome::Gone | Outcome::Unreadable(_) => None,
        })
        .collect()
}

/// The uses of `names` in `files`, in file order, each with its resolution.
pub(crate) fn uses_in(files: &[TaggedFile], names: &[String]) -> Vec<Use> {
    let mut out = Vec::new();
    for file in files {
        let bindings = Bindings::of(&file.tags);
        for tag in &file.tags {
            if tag.is_definition || !names.contains(&tag.name) {
                continue;
            }
            out.push(Use {
                path: file.path.clone(),
                resolution: bindings.resolve(tag),
                tag: tag.clone(),
            });
        }
    }
    out
}

/// What a file binds: the names it defines and the names it imports.
struct Bindings<'a> {
    defined: BTreeSet<&'a str>,
    imported: BTreeSet<&'a str>,
}

impl<'a> Bindings<'a> {
    fn of(tags: &'a [Tag]) -> Bindings<'a> {
        let mut defined = BTreeSet::new();
        let mut imported = BTreeSet::new();
        for t in tags {
            if t.is_definition {
                defined.insert(t.name.as_str());
            } else if t.kind == "import" {
                imported.insert(t.name.as_str());
            }
        }
        Bindings { defined, imported }
    }

    fn resolve(&self, tag: &Tag) -> Resolution {
        if tag.kind == "import" {
            return Resolution::Import;
        }
        let Some(qualifier) = tag.qualifier.as_deref() else {
            return if self.imported.contains(tag.name.as_str()) {
                Resolution::Import
            } else if self.defined.contains(tag.name.as_str()) {
                Resolution::Local
            } else {
                Resolution::Name
            };
        };
        if SELF_WORDS.contains(&qualifier) {
            return Resolution::Receiver;
        }
        // Only a plain path (`a.b`, `a::b`) says where the name comes from; a call or an
        // index in the receiver (`f(x).items`) is a value of unknown type.
        let is_path = qualifier
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '$' | '.' | ':'));
        let head = qualifier
            .split(['.', ':'])
            .find(|s| !s.is_empty())
            .unwrap_or(qualifier);
        if is_path
            && (MODULE_WORDS.contains(&head)
                || SELF_WORDS.contains(&head) && qualifier.contains("::")
                || self.imported.contains(head)
                || self.defined.contains(head))
        {
            Resolution::Module
        } else {
            Resolution::Name
        }
    }
}

/// How many uses of each kind and resolution.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UseCounts {
    pub by_kind: BTreeMap<String, usize>,
    pub by_resolution: BTreeMap<&'static str, usize>,
}

impl UseCounts {
    pub(crate) fn of<'a>(uses: impl IntoIterator<Item = &'a Use>) -> UseCounts {
        let mut counts = UseCounts::default();
        for u in uses {
            *counts.by_kind.entry(u.tag.kind.clone()).or_default() += 1;
            *counts
                .by_resolution
                .entry(u.resolution.as_str())
                .or_default() += 1;
        }
        counts
    }
}

/// Sorts uses for reading: what the files say is this name first, name matches last; then
/// by path and position.
pub(crate) fn sort_for_reading(uses: &mut [Use]) {
    uses.sort_by(|a, b| {
        (!a.resolution.is_bound(), &a.path, a.tag.line, a.tag.column).cmp(&(
            !b.resolution.is_bound(),
            &b.path,
            b.tag.line,
            b.tag.column,
        ))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codeintel::languages::by_name;
    use crate::codeintel::tags::Tagger;

    fn resolutions(lang: &str, source: &str, name: &str) -> Vec<(String, &'static str, u32)> {
        let tags = Tagger::with_references()
            .tag(by_name(lang).unwrap(), source.as_bytes())
            .unwrap();
        let file = TaggedFile {
            path: "f".into(),
            tags,
        };
        uses_in(&[file], &[name.to_string()])
            .into_iter()
            .map(|u| (u.tag.kind, u.resolution.as_str(), u.tag.line))
            .collect()
    }

    fn kinds_and_resolutions<'a>(
        v: &'a [(String, &'static str, u32)],
    ) -> Vec<(&'a str, &'static str, u32)> {
        v.iter().map(|(k, r, l)| (k.as_str(), *r, *l)).collect()
    }

    #[test]
    fn python_uses_resolve_through_imports_and_receivers() {
        let src = "\
from django.contrib import admin
from .forms import UserCreationForm


class UserAdmin(admin.ModelAdmin):
    form = UserCreationForm

    def items(self):
        self.items()
        return d.items(), ModelAdmin
";
        assert_eq!(
            kinds_and_resolutions(&resolutions("python", src, "ModelAdmin")),
            [("inherit", "module", 5), ("read", "name", 10)]
        );
        assert_eq!(
            kinds_and_resolutions(&resolutions("python", src, "UserCreationForm")),
            [("import", "import", 2), ("read", "import", 6)]
        );
        assert_eq!(
            kinds_and_resolutions(&resolutions("python", src, "items")),
            [("call", "self", 9), ("call", "name", 10)]
        );
    }

    #[test]
    fn rust_uses_resolve_through_use_paths() {
        let src = "\
use crate::config::Config;
use std::fmt::{self, Display};

struct Local;

impl Display for Local {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = Config::load();
        let l = Local {};
        v.load();
        Ok(())
    }
}
";
        assert_eq!(
            kinds_and_resolutions(&resolutions("rust", src, "Config")),
            [("import", "import", 1), ("read", "import", 8)]
        );
        assert_eq!(
            kinds_and_resolutions(&resolutions("rust", src, "Display")),
            [("import", "import", 2), ("inherit", "import", 6)]
        );
        assert_eq!(
            kinds_and_resolutions(&resolutions("rust", src, "load")),
            [("call", "module", 8), ("call", "name", 10)]
        );
        assert_eq!(
            kinds_and_resolutions(&resolutions("rust", src, "Local")),
            // `impl Display for Local` is a definition (an impl) of `Local`, not a use.
            [("call", "local", 9)]
        );
    }

    #[test]
    fn every_reference_kind_of_the_queries_is_known() {
        let mut found = BTreeSet::new();
        for lang in languages::all() {
            for query in [lang.tags_query(), lang.references_query()] {
                let code: String = query
                    .lines()
                    .filter(|l| !l.trim_start().starts_with(';'))
                    .collect::<Vec<_>>()
                    .join("\n");
                for (at, _) in code.match_indices("@reference.") {
                    let kind: String = code[at + "@reference.".len()..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    found.insert(kind);
                }
            }
        }
        let known: BTreeSet<String> = REFERENCE_KINDS.iter().map(|k| k.to_string()).collect();
        assert_eq!(found, known);
    }
}
