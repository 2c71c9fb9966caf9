//! Qualified names as agents write them by habit: `Session.request`, `module.func`,
//! `requests.sessions.Session`, `Index::open`, `crate::codeintel::index::Index::open`.
//!
//! The index knows each definition's name, its file and its container (`Tag::scope`, the
//! innermost definition around it), so a qualified name is resolved as a name plus a
//! container: a member of a type (its scope is the container's last part, and any parts
//! before name the file's module path) or a top-level definition of a module (its file's
//! path ends with the container's parts). Uses are judged by what each use says: through
//! the container (`Session.request`, `sessions.merge_setting`), through `self` inside the
//! container, or only by the name (the receiver's type is unknown; kept, marked `name`).

use super::references::{Resolution, TaggedFile, Use};

/// A name with its container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Qualified {
    /// The container's parts, outermost first (`["requests", "sessions", "Session"]`),
    /// without `crate`, `self` and `super`.
    pub(crate) container: Vec<String>,
    /// The member's own name (`request`).
    pub(crate) name: String,
}

/// The name whose mentions hold every definition and use of `text`: the member's own
/// name when `text` is qualified (`request` for `Session.request`).
pub(crate) fn word_of(text: &str) -> String {
    split(text).map_or_else(|| text.to_string(), |q| q.name)
}

/// Path parts that say where a Rust path starts, not what it names.
const PATH_KEYWORDS: &[&str] = &["crate", "self", "super"];

fn is_identifier(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// Splits `Container.name` or `Container::name`; `None` for a plain name or for text that
/// is not a dotted or `::` path of identifiers (a file name such as `app.py` splits, and
/// callers that accept paths try the path first).
pub(crate) fn split(text: &str) -> Option<Qualified> {
    let parts: Vec<&str> = if text.contains("::") {
        text.split("::").collect()
    } else if text.contains('.') {
        text.split('.').collect()
    } else {
        return None;
    };
    if parts.len() < 2 || !parts.iter().all(|p| is_identifier(p)) {
        return None;
    }
    let (name, container) = parts.split_last()?;
    let container: Vec<String> = container
        .iter()
        .filter(|p| !PATH_KEYWORDS.contains(p))
        .map(|p| (*p).to_string())
        .collect();
    if container.is_empty() {
        return None;
    }
    Some(Qualified {
        container,
        name: (*name).to_string(),
    })
}

/// A file's module paths: its parts without the extension, and, when the last part may
/// only name its directory's module (`__init__`, `mod`, `index`, `lib`, `main`), also
/// without it (`pkg/__init__.py` is `pkg`; `src/index.rs` is still `index`).
fn module_parts(path: &str) -> Vec<Vec<&str>> {
    let stem = match path.rsplit_once('.') {
        Some((stem, ext)) if !ext.contains('/') => stem,
        _ => path,
    };
    let parts: Vec<&str> = stem.split('/').collect();
    let directory = parts.len() > 1
        && parts
            .last()
            .is_some_and(|p| matches!(*p, "__init__" | "mod" | "index" | "lib" | "main"));
    if directory {
        let outer = parts[..parts.len() - 1].to_vec();
        vec![parts, outer]
    } else {
        vec![parts]
    }
}

/// Whether `run` occurs in `parts` as consecutive parts.
fn contains_run(parts: &[&str], run: &[String]) -> bool {
    run.is_empty()
        || parts
            .windows(run.len())
            .any(|w| w.iter().zip(run).all(|(a, b)| a == b))
}

/// Whether a file's module path ends with `run` (`src/requests/sessions.py` ends with
/// `sessions` and with `requests.sessions`); a package's files also count
/// (`src/requests/api.py` is in `requests`).
pub(crate) fn in_module(path: &str, run: &[String]) -> bool {
    module_parts(path).iter().any(|m| contains_run(m, run))
}

/// Whether a file is the module `parts` names: its module path ends with them
/// (`src/requests/sessions.py` is `sessions` and `requests.sessions`).
pub(crate) fn is_module(path: &str, parts: &[String]) -> bool {
    !parts.is_empty()
        && module_parts(path).iter().any(|module| {
            module.len() >= parts.len()
                && module[module.len() - parts.len()..]
                    .iter()
                    .zip(parts)
                    .all(|(a, b)| a == b)
        })
}

impl Qualified {
    /// The container's own name (`Session`).
    pub(crate) fn last(&self) -> &str {
        self.container.last().map_or("", String::as_str)
    }

    /// Whether a definition of [`Qualified::name`] at `path` with this `scope` is the one
    /// meant: a member of the container type, or a top-level definition of the container
    /// module.
    pub(crate) fn defines(&self, path: &str, scope: Option<&str>) -> bool {
        let (outer, _) = self.container.split_at(self.container.len() - 1);
        let member = scope == Some(self.last()) && in_module(path, outer);
        let top_level = scope.is_none() && in_module(path, &self.container);
        member || top_level
    }

    /// Whether a use of [`Qualified::name`] may be of this member: reached through the
    /// container (`Session.request`, `sessions.merge_setting`), through `self` within
    /// the container, by the bare name in a file of the container module or one that
    /// imports the name (a module member), or only by the name (an unknown receiver,
    /// which is kept and stays marked `name`). `member_of_type` says whether the
    /// container is a type (its definitions had it as scope) rather than a module.
    pub(crate) fn may_use(&self, u: &Use, files: &[TaggedFile], member_of_type: bool) -> bool {
        if u.resolution == Resolution::Receiver {
            return member_of_type && self.inside_container(u, files);
        }
        let through = u
            .tag
            .qualifier
            .as_deref()
            .map(|q| q.rsplit(['.', ':']).find(|p| !p.is_empty()).unwrap_or(q));
        match through {
            Some(q) if q == self.last() => true,
            // Through something else the file knows: another module or type.
            Some(_) => u.resolution == Resolution::Name,
            // A bare name: a module's function where the file imports it or is the module.
            None => {
                !member_of_type
                    && (in_module(&u.path, &self.container) || u.resolution == Resolution::Import)
            }
        }
    }

    /// Whether a use lies within a definition of the container in its own file.
    fn inside_container(&self, u: &Use, files: &[TaggedFile]) -> bool {
        files.iter().filter(|f| f.path == u.path).any(|f| {
            f.tags.iter().any(|t| {
                t.is_definition
                    && t.name == self.last()
                    && t.start_line.min(t.line) <= u.tag.line
                    && u.tag.line <= t.end_line
            })
        })
    }

    /// Whether a line of text (a test, a document) that mentions the member's name is
    /// about this member: it names the container too (`Session().request(...)`,
    /// `` `Index::open` ``), so `File::open` or a `request` variable are left out.
    pub(crate) fn mentioned_in(&self, line: &str) -> bool {
        let container = self.last();
        line.match_indices(container).any(|(at, _)| {
            let before = line[..at].chars().next_back();
            let after = line[at + container.len()..].chars().next();
            let boundary = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            boundary(before) && boundary(after)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names_split_into_container_and_name() {
        let q = split("Session.request").unwrap();
        assert_eq!(
            (q.container, q.name),
            (vec!["Session".to_string()], "request".to_string())
        );
        let q = split("crate::codeintel::index::Index::open").unwrap();
        assert_eq!(q.container, ["codeintel", "index", "Index"]);
        assert_eq!(q.name, "open");
        assert_eq!(split("request"), None);
        assert_eq!(split("self::open"), None);
        assert_eq!(split("src/app.py"), None);
        assert_eq!(split("a..b"), None);
    }

    #[test]
    fn a_member_is_defined_in_its_container_and_a_function_in_its_module() {
        let member = split("Session.request").unwrap();
        assert!(member.defines("src/requests/sessions.py", Some("Session")));
        assert!(!member.defines("src/requests/api.py", None));
        assert!(!member.defines("src/requests/adapters.py", Some("HTTPAdapter")));
        let deep = split("requests.sessions.Session.request").unwrap();
        assert!(deep.defines("src/requests/sessions.py", Some("Session")));
        assert!(!deep.defines("tests/sessions_helpers.py", Some("Session")));
        let function = split("sessions.merge_setting").unwrap();
        assert!(function.defines("src/requests/sessions.py", None));
        assert!(!function.defines("src/requests/utils.py", None));
        let package = split("pkg.helper").unwrap();
        assert!(package.defines("pkg/__init__.py", None));
        let rust = split("index::Index::open").unwrap();
        assert!(rust.defines("src/codeintel/index.rs", Some("Index")));
        assert!(rust.defines("src/index/mod.rs", Some("Index")));
        assert!(!rust.defines("src/codeintel/store.rs", Some("Index")));
    }

    #[test]
    fn a_text_line_is_about_a_member_when_it_names_the_container() {
        let q = split("Index::open").unwrap();
        assert!(q.mentioned_in("let index = Index::open(&root)?;"));
        assert!(q.mentioned_in("`Index::open` reads the header"));
        assert!(!q.mentioned_in("let f = File::open(path)?;"));
        assert!(!q.mentioned_in("let i = IndexCache::open(root);"));
    }
}
