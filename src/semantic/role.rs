//! What a chunk's file is for — the code itself, its tests, or prose about it — so that a
//! search can prefer the code.
//!
//! A developer (or an agent) asking "where are passwords checked against the stored hash"
//! wants the function that does it. Tests and documentation describe the same behaviour
//! in more words, so by meaning they often rank above it: on Django's behaviour queries
//! (benches/django_queries.yml) tests and `docs/*.txt` filled most of the top ten. The
//! vector ranking therefore takes a margin off a test or prose chunk's similarity
//! ([`Role::margin`]) unless the query asks for tests or documentation. A margin, not a
//! filter or a factor on the fused rank: where the docs are clearly the better answer
//! they still come first; where a test and the code tie by meaning, the code wins.

/// What a file is for, from its path alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Code,
    Test,
    Prose,
}

/// How much cosine similarity a test or prose chunk gives up in the vector ranking when
/// the query does not ask for one. Chosen on the tuning half of benches/django_queries.yml
/// (never the held-out half): 0.15 to 0.3 score the same there, 0.1 lets tests back into
/// the top ten; the smallest on the plateau.
const MARGIN: f32 = 0.15;

/// Directory names that hold tests.
const TEST_DIRS: &[&str] = &["test", "tests", "__tests__", "spec", "specs", "testing"];
/// Directory names that hold prose.
const PROSE_DIRS: &[&str] = &["doc", "docs", "documentation"];
/// Extensions of prose files.
const PROSE_EXTENSIONS: &[&str] = &["md", "markdown", "rst", "txt", "adoc"];
/// Query words that ask for tests or for prose: with one, that role is not demoted.
const TEST_WORDS: &[&str] = &["test", "tests", "testing", "tested", "spec", "specs"];
const PROSE_WORDS: &[&str] = &[
    "doc",
    "docs",
    "documentation",
    "documented",
    "guide",
    "tutorial",
    "readme",
    "changelog",
];

impl Role {
    /// The role of the file at `path` (repository-relative, `/`-separated).
    pub(crate) fn of(path: &str) -> Role {
        let (dirs, file) = match path.rsplit_once('/') {
            Some((dirs, file)) => (dirs, file),
            None => ("", path),
        };
        let lower = file.to_ascii_lowercase();
        let (stem, ext) = lower.rsplit_once('.').unwrap_or((lower.as_str(), ""));
        let in_dir = |names: &[&str]| {
            dirs.split('/')
                .any(|d| names.contains(&d.to_ascii_lowercase().as_str()))
        };
        if in_dir(TEST_DIRS) || is_test_file(file, stem) {
            Role::Test
        } else if in_dir(PROSE_DIRS) || PROSE_EXTENSIONS.contains(&ext) {
            Role::Prose
        } else {
            Role::Code
        }
    }

    /// The similarity a chunk of this role gives up, given what the query asks for.
    pub(crate) fn margin(self, asks: Asks) -> f32 {
        match self {
            Role::Code => 0.0,
            Role::Test if asks.tests => 0.0,
            Role::Prose if asks.prose => 0.0,
            Role::Test | Role::Prose => MARGIN,
        }
    }
}

/// The naming conventions of test files across the languages we index: `test_x.py`,
/// `x_test.go`, `x_test.py`, `x.test.ts`, `x.spec.js`, `XTest.java`, `XTests.cs`.
fn is_test_file(file: &str, stem: &str) -> bool {
    stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || stem.ends_with(".test")
        || stem.ends_with(".spec")
        || file
            .rsplit_once('.')
            .is_some_and(|(s, _)| s.len() > 4 && (s.ends_with("Test") || s.ends_with("Tests")))
}

/// Which roles a query asks for by name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Asks {
    pub(crate) tests: bool,
    pub(crate) prose: bool,
}

impl Asks {
    pub(crate) fn of(query: &str) -> Asks {
        let mut asks = Asks::default();
        for word in query
            .split(|c: char| !c.is_alphanumeric())
            .map(str::to_ascii_lowercase)
        {
            asks.tests |= TEST_WORDS.contains(&word.as_str());
            asks.prose |= PROSE_WORDS.contains(&word.as_str());
        }
        asks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_code_tests_or_prose() {
        for (path, role) in [
            ("django/contrib/auth/hashers.py", Role::Code),
            ("tests/auth_tests/test_hashers.py", Role::Test),
            ("src/app/tests/views.py", Role::Test),
            ("pkg/server_test.go", Role::Test),
            ("web/src/app.spec.ts", Role::Test),
            ("web/src/app.test.js", Role::Test),
            ("src/main/java/org/FooTest.java", Role::Test),
            ("test_cli.py", Role::Test),
            ("docs/topics/auth/default.txt", Role::Prose),
            ("README.md", Role::Prose),
            ("doc/guide.html", Role::Prose),
            ("src/contest.py", Role::Code),
            ("src/latest.rs", Role::Code),
            ("src/Test.java", Role::Code),
            ("src/protest_tests_helper.py", Role::Code),
        ] {
            assert_eq!(Role::of(path), role, "{path}");
        }
    }

    #[test]
    fn a_query_that_names_tests_or_docs_does_not_demote_them() {
        let plain = Asks::of("where are passwords checked");
        assert_eq!(plain, Asks::default());
        assert_eq!(Role::Test.margin(plain), MARGIN);
        assert_eq!(Role::Prose.margin(plain), MARGIN);
        assert_eq!(Role::Code.margin(plain), 0.0);
        let tests = Asks::of("the tests of password hashing");
        assert_eq!(Role::Test.margin(tests), 0.0);
        assert_eq!(Role::Prose.margin(tests), MARGIN);
        let docs = Asks::of("Docs: how to configure caches");
        assert_eq!(Role::Prose.margin(docs), 0.0);
        assert_eq!(Role::Test.margin(docs), MARGIN);
    }
}
