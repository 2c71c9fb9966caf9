//! The names an instruction template may use: the one list that the renderer
//! (`machine::response::instruction`) fills the template context from and that lint
//! (`unknown-template-name`) checks every template against, so the two cannot disagree.
//! And how large one tag of a template may be, which keeps compiling it bounded.

use std::ops::Range;

use super::model::Contract;

/// A top-level name of the template context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TemplateRoot {
    /// Every declared flag, by name.
    Flags,
    /// The session's intent.
    Intent,
    /// Every declared param, by name.
    Params,
    /// Every declared counter, by name.
    Counters,
    /// The task list (records whose fields the tasks carry).
    Tasks,
    /// The declared session variables that are set, by name.
    Vars,
    /// The current state's phase.
    Phase,
    /// The current state's step, or none.
    Step,
    /// The current state's id.
    State,
    /// The first pending task, or none.
    NextTask,
}

impl TemplateRoot {
    /// Every root, in the order the documentation lists them.
    pub(crate) const ALL: [TemplateRoot; 10] = [
        TemplateRoot::Flags,
        TemplateRoot::Intent,
        TemplateRoot::Params,
        TemplateRoot::Counters,
        TemplateRoot::Tasks,
        TemplateRoot::Vars,
        TemplateRoot::Phase,
        TemplateRoot::Step,
        TemplateRoot::State,
        TemplateRoot::NextTask,
    ];

    /// The name templates use.
    pub(crate) fn name(self) -> &'static str {
        match self {
            TemplateRoot::Flags => "flags",
            TemplateRoot::Intent => "intent",
            TemplateRoot::Params => "params",
            TemplateRoot::Counters => "counters",
            TemplateRoot::Tasks => "tasks",
            TemplateRoot::Vars => "vars",
            TemplateRoot::Phase => "phase",
            TemplateRoot::Step => "step",
            TemplateRoot::State => "state",
            TemplateRoot::NextTask => "next_task",
        }
    }

    /// The root a template name is, if any.
    pub(crate) fn find(name: &str) -> Option<TemplateRoot> {
        TemplateRoot::ALL.into_iter().find(|r| r.name() == name)
    }

    /// For a namespace whose keys are names the contract declares, those names: what
    /// `flags.X`, `params.X`, `counters.X` and `vars.X` may read. `None` for the others,
    /// whose attributes are not declared names (a task's fields, or none at all).
    pub(crate) fn members(self, contract: &Contract) -> Option<Vec<&str>> {
        match self {
            TemplateRoot::Flags => Some(contract.flags.iter().map(|f| f.name.as_str()).collect()),
            TemplateRoot::Params => Some(contract.params.keys().map(String::as_str).collect()),
            TemplateRoot::Counters => {
                Some(contract.counters.iter().map(|c| c.name.as_str()).collect())
            }
            TemplateRoot::Vars => Some(contract.vars.keys().map(String::as_str).collect()),
            TemplateRoot::Intent
            | TemplateRoot::Tasks
            | TemplateRoot::Phase
            | TemplateRoot::Step
            | TemplateRoot::State
            | TemplateRoot::NextTask => None,
        }
    }
}

/// Names that guards may read but templates may not, with why: an instruction is
/// rendered on entering a state, before the agent submits its payload and outside any
/// step, so there is no payload, no facts and no action result to show.
pub(crate) const NOT_IN_TEMPLATES: &[(&str, &str)] = &[
    (
        "payload",
        "the instruction is shown before the agent submits the state's payload",
    ),
    (
        "facts",
        "facts are given to a step, not to the instruction shown after it; store what the instruction needs in `vars` with `set:`",
    ),
    (
        "result",
        "action results exist inside a step only; store what the instruction needs in `vars` with `set:`",
    ),
];

/// The most characters one tag (`{{ … }}`, `{% … %}`) may hold. minijinja compiles an
/// expression by recursion as deep as the expression: `{{ x.a.a.a… }}` or `{{ 1+1+1… }}`
/// with some ten thousand links overflows a thread's stack and aborts the process. A tag
/// of this size nests at most some hundreds of levels; real tags hold a few dozen
/// characters.
pub(crate) const MAX_TAG_CHARS: usize = 1_000;

/// The first tag of `text` longer than [`MAX_TAG_CHARS`], as the character offset of its
/// start and its length in characters. One pass (see [`tags`]).
pub(crate) fn oversized_tag(text: &str) -> Option<(usize, usize)> {
    let mut chars_before = 0;
    let mut counted_to = 0;
    for tag in tags(text) {
        let len = text[tag.clone()].chars().count();
        chars_before += text[counted_to..tag.start].chars().count();
        counted_to = tag.start;
        if len > MAX_TAG_CHARS {
            return Some((chars_before, len));
        }
    }
    None
}

/// The byte ranges of the tags (`{{ … }}`, `{% … %}`, delimiters included) of `text`, the
/// parts minijinja compiles, in one pass: a string literal inside a tag is skipped (a
/// `}}` in one does not end the tag), comments and `{% raw %}` blocks are text, and a tag
/// left open runs to the end of the text.
pub(crate) fn tags(text: &str) -> Vec<Range<usize>> {
    // Every delimiter is ASCII, so scanning bytes never splits a character.
    let bytes = text.as_bytes();
    let at = |i: usize, s: &[u8]| bytes.get(i..i + s.len()) == Some(s);
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] != b'{' {
            i += 1;
            continue;
        }
        let close: &[u8] = match bytes[i + 1] {
            b'{' => b"}}",
            b'%' => b"%}",
            b'#' => {
                // A comment is text to the compiler.
                i += 2;
                while i < bytes.len() && !at(i, b"#}") {
                    i += 1;
                }
                i += 2;
                continue;
            }
            _ => {
                i += 1;
                continue;
            }
        };
        let start = i;
        let mut j = i + 2;
        let mut quote: Option<u8> = None;
        while j < bytes.len() {
            match quote {
                Some(q) => {
                    if bytes[j] == b'\\' {
                        j += 1;
                    } else if bytes[j] == q {
                        quote = None;
                    }
                }
                None if bytes[j] == b'\'' || bytes[j] == b'"' => quote = Some(bytes[j]),
                None if at(j, close) => break,
                None => {}
            }
            j += 1;
        }
        let end = (j + 2).min(bytes.len());
        out.push(start..end);
        i = end;
        let words: Vec<&str> = text[start..end]
            .trim_matches(|c: char| "{}%-+ \t\r\n".contains(c))
            .split_whitespace()
            .collect();
        if close == b"%}" && words == ["raw"] {
            // Up to `{% endraw %}`, the text is not compiled.
            while i < bytes.len() && !(at(i, b"{%") && raw_end(&text[i..])) {
                i += 1;
            }
        }
    }
    out
}

/// Whether `rest` starts with an `{% endraw %}` tag (with any whitespace control).
fn raw_end(rest: &str) -> bool {
    rest.strip_prefix("{%")
        .map(|r| r.trim_start_matches(['-', '+']).trim_start())
        .is_some_and(|r| r.starts_with("endraw"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_oversized_tag_is_found_where_it_starts() {
        let long = format!("{{{{ x{} }}}}", ".a".repeat(MAX_TAG_CHARS));
        assert_eq!(
            oversized_tag(&format!("Hi {long}")),
            Some((3, MAX_TAG_CHARS * 2 + 7))
        );
        let fits = format!("{{{{ x{} }}}}", ".a".repeat(MAX_TAG_CHARS / 2 - 5));
        assert_eq!(oversized_tag(&fits), None);
        // A `}}` inside a string does not end the tag.
        let hidden = format!("{{{{ \"}}}}\" ~ x{} }}}}", ".a".repeat(MAX_TAG_CHARS));
        assert_eq!(oversized_tag(&hidden), Some((0, hidden.chars().count())));
        // Comments and raw blocks are text; prose is text.
        let prose = "x ".repeat(MAX_TAG_CHARS);
        assert_eq!(oversized_tag(&format!("{{# {prose} #}}")), None);
        assert_eq!(
            oversized_tag(&format!("{{% raw %}}{{{{ {prose} {{%- endraw %}}")),
            None
        );
        assert_eq!(oversized_tag(&prose), None);
        // An unclosed tag runs to the end of the text.
        assert_eq!(
            oversized_tag(&format!("{{{{ {prose}")),
            Some((0, MAX_TAG_CHARS * 2 + 3))
        );
    }

    #[test]
    fn names_are_unique_and_found_again() {
        for root in TemplateRoot::ALL {
            assert_eq!(TemplateRoot::find(root.name()), Some(root));
        }
        assert_eq!(TemplateRoot::find("payload"), None);
        assert!(
            NOT_IN_TEMPLATES
                .iter()
                .all(|(n, _)| TemplateRoot::find(n).is_none())
        );
    }
}
