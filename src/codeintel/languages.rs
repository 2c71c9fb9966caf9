//! The language registry: which grammar and which tags queries serve a file, chosen by its
//! extension. The queries are data, kept in `queries/<name>.scm` (definitions) and
//! `queries/<name>.refs.scm` (references), and compiled in.

use std::path::Path;

/// A language code-intel can parse and tag.
pub(crate) struct Language {
    /// Stable identifier, also the query file's name (`queries/<name>.scm`).
    pub(crate) name: &'static str,
    /// File extensions, lower case, without the dot.
    pub(crate) extensions: &'static [&'static str],
    grammar: fn() -> tree_sitter::Language,
    tags_query: &'static str,
    references_query: &'static str,
    locals_query: &'static str,
}

impl Language {
    /// The tree-sitter grammar.
    pub(crate) fn grammar(&self) -> tree_sitter::Language {
        (self.grammar)()
    }

    /// The definitions query (tree-sitter-tags conventions: `@name` with
    /// `@definition.<kind>`, optional `@doc`): what the index stores.
    pub(crate) fn tags_query(&self) -> &'static str {
        self.tags_query
    }

    /// The references query (`@reference.<kind>`, and `@ignore` for names that are bound
    /// rather than used), which follows the definitions query when a question about uses
    /// tags the files that mention a name.
    pub(crate) fn references_query(&self) -> &'static str {
        self.references_query
    }

    /// The locals query that goes with the tags query; empty for most languages.
    pub(crate) fn locals_query(&self) -> &'static str {
        self.locals_query
    }
}

impl std::fmt::Debug for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Language")
            .field("name", &self.name)
            .field("extensions", &self.extensions)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Language {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for Language {}

static LANGUAGES: [Language; 12] = [
    Language {
        name: "rust",
        extensions: &["rs"],
        grammar: || tree_sitter_rust::LANGUAGE.into(),
        tags_query: include_str!("queries/rust.scm"),
        references_query: include_str!("queries/rust.refs.scm"),
        locals_query: "",
    },
    Language {
        name: "python",
        extensions: &["py", "pyi"],
        grammar: || tree_sitter_python::LANGUAGE.into(),
        tags_query: include_str!("queries/python.scm"),
        references_query: include_str!("queries/python.refs.scm"),
        locals_query: "",
    },
    Language {
        name: "javascript",
        extensions: &["js", "mjs", "cjs", "jsx"],
        grammar: || tree_sitter_javascript::LANGUAGE.into(),
        tags_query: concat!(
            include_str!("queries/ecmascript.scm"),
            include_str!("queries/javascript.scm")
        ),
        references_query: concat!(
            include_str!("queries/ecmascript.refs.scm"),
            include_str!("queries/javascript.refs.scm"),
            include_str!("queries/jsx.refs.scm"),
            include_str!("queries/ecmascript.reads.scm")
        ),
        locals_query: "",
    },
    Language {
        name: "typescript",
        extensions: &["ts", "mts", "cts"],
        grammar: || tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        tags_query: concat!(
            include_str!("queries/ecmascript.scm"),
            include_str!("queries/typescript.scm")
        ),
        references_query: concat!(
            include_str!("queries/ecmascript.refs.scm"),
            include_str!("queries/typescript.refs.scm"),
            include_str!("queries/ecmascript.reads.scm")
        ),
        locals_query: "",
    },
    Language {
        name: "tsx",
        extensions: &["tsx"],
        grammar: || tree_sitter_typescript::LANGUAGE_TSX.into(),
        tags_query: concat!(
            include_str!("queries/ecmascript.scm"),
            include_str!("queries/typescript.scm")
        ),
        references_query: concat!(
            include_str!("queries/ecmascript.refs.scm"),
            include_str!("queries/typescript.refs.scm"),
            include_str!("queries/jsx.refs.scm"),
            include_str!("queries/ecmascript.reads.scm")
        ),
        locals_query: "",
    },
    Language {
        name: "go",
        extensions: &["go"],
        grammar: || tree_sitter_go::LANGUAGE.into(),
        tags_query: include_str!("queries/go.scm"),
        references_query: include_str!("queries/go.refs.scm"),
        locals_query: "",
    },
    Language {
        name: "java",
        extensions: &["java"],
        grammar: || tree_sitter_java::LANGUAGE.into(),
        tags_query: include_str!("queries/java.scm"),
        references_query: include_str!("queries/java.refs.scm"),
        locals_query: "",
    },
    Language {
        name: "c",
        extensions: &["c", "h"],
        grammar: || tree_sitter_c::LANGUAGE.into(),
        tags_query: include_str!("queries/c.scm"),
        references_query: include_str!("queries/c.refs.scm"),
        locals_query: "",
    },
    Language {
        name: "cpp",
        extensions: &["cc", "cpp", "cxx", "hpp", "hh", "hxx"],
        grammar: || tree_sitter_cpp::LANGUAGE.into(),
        tags_query: include_str!("queries/cpp.scm"),
        references_query: include_str!("queries/cpp.refs.scm"),
        locals_query: "",
    },
    Language {
        name: "php",
        extensions: &["php"],
        grammar: || tree_sitter_php::LANGUAGE_PHP.into(),
        tags_query: include_str!("queries/php.scm"),
        references_query: include_str!("queries/php.refs.scm"),
        locals_query: "",
    },
    Language {
        name: "ruby",
        extensions: &["rb"],
        grammar: || tree_sitter_ruby::LANGUAGE.into(),
        tags_query: include_str!("queries/ruby.scm"),
        references_query: include_str!("queries/ruby.refs.scm"),
        locals_query: include_str!("queries/ruby.locals.scm"),
    },
    Language {
        name: "c_sharp",
        extensions: &["cs"],
        grammar: || tree_sitter_c_sharp::LANGUAGE.into(),
        tags_query: include_str!("queries/c_sharp.scm"),
        references_query: include_str!("queries/c_sharp.refs.scm"),
        locals_query: "",
    },
];

/// Every supported language.
pub(crate) fn all() -> &'static [Language] {
    &LANGUAGES
}

/// The language of a file, by its extension (case-insensitive).
pub(crate) fn for_path(path: &Path) -> Option<&'static Language> {
    let ext = path.extension()?.to_str()?;
    LANGUAGES
        .iter()
        .find(|lang| lang.extensions.iter().any(|e| e.eq_ignore_ascii_case(ext)))
}

/// The language with this [`Language::name`] (tests pick grammars by name).
#[cfg(test)]
pub(crate) fn by_name(name: &str) -> Option<&'static Language> {
    LANGUAGES.iter().find(|lang| lang.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn for_path_maps_extensions() {
        let cases = [
            ("src/lib.rs", "rust"),
            ("a.py", "python"),
            ("stubs/a.pyi", "python"),
            ("a.js", "javascript"),
            ("a.mjs", "javascript"),
            ("a.cjs", "javascript"),
            ("a.jsx", "javascript"),
            ("a.ts", "typescript"),
            ("a.d.ts", "typescript"),
            ("a.mts", "typescript"),
            ("a.cts", "typescript"),
            ("a.tsx", "tsx"),
            ("main.go", "go"),
            ("A.java", "java"),
            ("a.c", "c"),
            ("a.h", "c"),
            ("a.cc", "cpp"),
            ("a.cpp", "cpp"),
            ("a.cxx", "cpp"),
            ("a.hpp", "cpp"),
            ("a.hh", "cpp"),
            ("a.hxx", "cpp"),
            ("index.php", "php"),
            ("a.rb", "ruby"),
            ("Program.cs", "c_sharp"),
            ("UPPER.RS", "rust"),
            ("Mixed.Py", "python"),
            ("X.CPP", "cpp"),
        ];
        for (path, want) in cases {
            let got = for_path(Path::new(path)).map(|l| l.name);
            assert_eq!(got, Some(want), "{path}");
        }
        for path in ["README.md", "Makefile", "a.rs.bak", ".rs", "dir.rs/file"] {
            assert_eq!(for_path(Path::new(path)).map(|l| l.name), None, "{path}");
        }
    }

    #[test]
    fn registry_is_consistent() {
        let mut names: Vec<_> = all().iter().map(|l| l.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 12);
        let mut exts: Vec<_> = all().iter().flat_map(|l| l.extensions.iter()).collect();
        let n = exts.len();
        exts.sort_unstable();
        exts.dedup();
        assert_eq!(exts.len(), n, "an extension is claimed twice");
        for lang in all() {
            assert!(lang.extensions.iter().all(|e| *e == e.to_ascii_lowercase()));
            assert_eq!(by_name(lang.name), Some(lang));
            assert!(!lang.tags_query().is_empty());
        }
    }

    #[test]
    fn every_query_compiles_against_its_grammar() {
        for lang in all() {
            let grammar = lang.grammar();
            let query = format!("{}{}", lang.locals_query(), lang.tags_query());
            if let Err(e) = tree_sitter::Query::new(&grammar, &query) {
                panic!("{}: {e}", lang.name);
            }
            if let Err(e) = tree_sitter_tags::TagsConfiguration::new(
                grammar,
                lang.tags_query(),
                lang.locals_query(),
            ) {
                panic!("{}: {e}", lang.name);
            }
        }
    }
}
