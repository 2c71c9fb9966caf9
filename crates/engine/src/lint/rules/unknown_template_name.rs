//! `unknown-template-name`
//!
//! ## What it does
//! Flags a name an instruction or the instruction footer reads that its template is not
//! given: a top-level name other than `flags`, `intent`, `params`, `counters`, `tasks`,
//! `vars`, `phase`, `step`, `state`, `next_task` and minijinja's globals (the context the
//! instruction is rendered with), and a name under `flags`, `params`, `counters` or
//! `vars` that the contract does not declare. Says which name was meant when one is close.
//! Overlays are checked after the merge, at the line of the text the overlay wrote.
//!
//! ## Why is this bad?
//! Undefined values render as nothing, so that an instruction may read a variable before
//! it is set: a misspelt name is a blank in what the agent reads, and `{% if %}` on it is
//! silently false. Nothing else would notice.
//!
//! ## Example
//! ```yaml
//! vars:
//!   target: {type: string}
//! states:
//!   PLAN:
//!     instruction: "Rebase on {{ vars.targte }}.{% if flags.quik %} Be brief.{% endif %}"
//! ```

use std::cell::OnceCell;
use std::collections::{BTreeSet, HashSet};
use std::ops::Range;

use crate::contract::Contract;
use crate::contract::model::Localized;
use crate::contract::overlay::edit_distance;
use crate::contract::template_roots::{NOT_IN_TEMPLATES, TemplateRoot, oversized_tag, tags};
use crate::diagnostic::Diagnostic;
use crate::source::{Span, TextSpan};

/// minijinja's attribute tracking walks each attribute chain from its end, once per
/// link, when the chain does not start at a context name: n² for a chain of n. A
/// template with a chain longer than this is checked for its top-level names only,
/// which costs one pass.
const MAX_CHAIN: usize = 64;

/// How many findings per contract get the work that costs a pass over their text or the
/// names (a "did you mean" and the template line): a constant, so a template made of
/// thousands of distinct unknown names stays linear to check. Later findings are still
/// reported, without that help.
const HELP_BUDGET: usize = 256;

/// The most findings one text gets; a note on the last says how many more there are.
const MAX_PER_TEXT: usize = 20;

/// Names longer than this get no "did you mean": comparing costs the product of lengths.
const MAX_SUGGESTED_LEN: usize = 64;

pub(crate) fn check(contract: &Contract) -> Vec<Diagnostic> {
    let mut checker = Checker {
        contract,
        globals: contract.templates.globals().map(|(n, _)| n).collect(),
        budget: HELP_BUDGET,
        out: Vec::new(),
    };
    if let Some(footer) = &contract.instruction_footer {
        checker.texts(footer, "`instruction_footer`", None);
    }
    for state in &contract.states {
        if let Some(instruction) = &state.instruction {
            let what = format!("the instruction of `{}`", state.id);
            checker.texts(instruction, &what, Some(state.span));
        }
    }
    checker.out
}

struct Checker<'c> {
    contract: &'c Contract,
    globals: BTreeSet<&'c str>,
    /// What is left of [`HELP_BUDGET`].
    budget: usize,
    out: Vec<Diagnostic>,
}

impl Checker<'_> {
    fn texts(&mut self, text: &Localized, what: &str, fallback: Option<Span>) {
        // One text written for every locale is checked once, naming them all.
        let mut groups: Vec<(Vec<&str>, Text<'_>)> = Vec::new();
        for (locale, body) in &text.texts {
            let place = match text.spans.get(locale) {
                Some(place) => Some(place.clone()),
                None => fallback.map(TextSpan::whole),
            };
            match groups
                .iter_mut()
                .find(|(_, t)| t.body == body.as_str() && t.place == place)
            {
                Some((locales, _)) => locales.push(locale),
                None => groups.push((
                    vec![locale.as_str()],
                    Text {
                        body,
                        what: String::new(),
                        place,
                        tags: OnceCell::new(),
                    },
                )),
            }
        }
        for (locales, mut at) in groups {
            at.what = format!("{what} ({})", locales.join(", "));
            self.text(&at);
        }
    }

    /// Checks one template. A template that does not compile, or that lowering refused
    /// to compile, was reported there (`template-syntax-error`) and is skipped here.
    fn text(&mut self, text: &Text<'_>) {
        if oversized_tag(text.body).is_some() {
            return;
        }
        let Ok(template) = self.contract.templates.template_from_str(text.body) else {
            return;
        };
        let nested = longest_attribute_chain(text.body) <= MAX_CHAIN;
        // With `nested`, each name the template reads from its context comes with the
        // attributes read from it: `vars.x.y` for `{{ vars.x.y }}`, `vars` for `{{ vars }}`.
        let mut paths: Vec<String> = template.undeclared_variables(nested).into_iter().collect();
        paths.sort_unstable();
        let mut seen: HashSet<(&str, &str)> = HashSet::new();
        let before = self.out.len();
        for path in &paths {
            let mut parts = path.splitn(3, '.');
            let root = parts.next().unwrap_or_default();
            let attribute = parts.next();
            if !seen.insert((root, attribute.unwrap_or_default())) {
                continue;
            }
            match TemplateRoot::find(root) {
                Some(known) => {
                    if let Some(attribute) = attribute {
                        self.attribute(known, attribute, text);
                    }
                }
                None if self.globals.contains(root) => {}
                // Report an unknown root once, not once per attribute read from it.
                None if attribute.is_some() && seen.contains(&(root, "")) => {}
                None => {
                    seen.insert((root, ""));
                    self.root(root, text);
                }
            }
        }
        // Each finding shows the text's line: thousands of them on one long line would
        // print that line thousands of times.
        let found = self.out.len() - before;
        if found > MAX_PER_TEXT {
            self.out.truncate(before + MAX_PER_TEXT);
            if let Some(last) = self.out.last_mut() {
                last.notes.push(format!(
                    "{} reads {} more names it is not given, not listed",
                    text.what,
                    found - MAX_PER_TEXT
                ));
            }
        }
    }

    fn root(&mut self, name: &str, text: &Text<'_>) {
        let (span, line) = self.place_of(text, name);
        let declared_in = TemplateRoot::ALL.into_iter().find(|r| {
            r.members(self.contract)
                .is_some_and(|members| members.contains(&name))
        });
        let help = if let Some((_, why)) = NOT_IN_TEMPLATES.iter().find(|(n, _)| *n == name) {
            format!("`{name}` is not available in instructions: {why}")
        } else if let Some(root) = declared_in {
            format!("did you mean `{}.{name}`?", root.name())
        } else {
            let globals: Vec<&str> = self.globals.iter().copied().collect();
            let candidates = TemplateRoot::ALL.iter().map(|r| r.name()).chain(globals);
            match self.closest(name, candidates) {
                Some(close) => format!("did you mean `{close}`?"),
                None => format!(
                    "templates may read {} and minijinja's globals",
                    TemplateRoot::ALL
                        .map(|r| format!("`{}`", r.name()))
                        .join(", ")
                ),
            }
        };
        self.out.push(
            Diagnostic::new(
                "unknown-template-name",
                format!(
                    "{} reads `{name}`, which templates are not given{line}",
                    text.what
                ),
                span,
            )
            .with_help(help),
        );
    }

    fn attribute(&mut self, root: TemplateRoot, name: &str, text: &Text<'_>) {
        let Some(members) = root.members(self.contract) else {
            return;
        };
        if members.contains(&name) {
            return;
        }
        let kind = match root {
            TemplateRoot::Flags => "flag",
            TemplateRoot::Params => "param",
            TemplateRoot::Counters => "counter",
            _ => "variable",
        };
        let path = format!("{}.{name}", root.name());
        let (span, line) = self.place_of(text, &path);
        let help = match self.closest(name, members.iter().copied()) {
            Some(close) => format!("did you mean `{}.{close}`?", root.name()),
            None if members.is_empty() => format!(
                "the contract declares no {kind}; declare it under `{}:`",
                root.name()
            ),
            None => format!(
                "declare it under `{}:`, or use a declared {kind}",
                root.name()
            ),
        };
        self.out.push(
            Diagnostic::new(
                "unknown-template-name",
                format!(
                    "{} reads `{path}`, which is not a declared {kind}{line}",
                    text.what
                ),
                span,
            )
            .with_help(help),
        );
    }

    /// Takes one unit of the help budget, if any is left.
    fn spend(&mut self) -> bool {
        let ok = self.budget > 0;
        self.budget = self.budget.saturating_sub(1);
        ok
    }

    /// The candidate at most two edits from `name` (the closest, then the first in name
    /// order), within the help budget.
    fn closest<'n>(
        &mut self,
        name: &str,
        candidates: impl Iterator<Item = &'n str>,
    ) -> Option<&'n str> {
        if name.chars().count() > MAX_SUGGESTED_LEN || !self.spend() {
            return None;
        }
        candidates
            .filter(|c| c.chars().count() <= MAX_SUGGESTED_LEN)
            .map(|c| (edit_distance(name, c), c))
            .filter(|(d, _)| *d <= 2)
            .min()
            .map(|(_, c)| c)
    }

    /// Where `name` is first read in the text: its own place in the file when the text's
    /// layout allows (a single-line string, a literal block), else the text's place and
    /// ` (template line N)` for the message. Within the help budget; past it, the text's
    /// place alone.
    fn place_of(&mut self, text: &Text<'_>, name: &str) -> (Option<Span>, String) {
        let whole = text.place.as_ref().map(|p| p.span);
        if !self.spend() {
            return (whole, String::new());
        }
        let tags = text.tags.get_or_init(|| tags(text.body));
        let Some(offset) = first_use(text.body, tags, name) else {
            return (whole, String::new());
        };
        match &text.place {
            Some(place) if place.is_exact() => {
                let start = text.body[..offset].chars().count();
                (
                    Some(place.at(text.body, start, name.chars().count())),
                    String::new(),
                )
            }
            _ => {
                let line = text.body[..offset].matches('\n').count() + 1;
                (whole, format!(" (template line {line})"))
            }
        }
    }
}

/// One template text and where it is written.
struct Text<'b> {
    body: &'b str,
    /// "the instruction of `S` (en)".
    what: String,
    place: Option<TextSpan>,
    /// Where its tags are, found when a finding first needs them.
    tags: OnceCell<Vec<Range<usize>>>,
}

/// The byte offset of the first place a tag of `body` reads `name` as a whole name: not
/// preceded by a name character or `.`, not followed by a name character. Prose around
/// the tags is not searched: "the stat" is not a read of `stat`.
fn first_use(body: &str, tags: &[Range<usize>], name: &str) -> Option<usize> {
    let is_name = |c: char| c.is_alphanumeric() || c == '_';
    tags.iter().find_map(|tag| {
        let inside = &body[tag.clone()];
        inside
            .match_indices(name)
            .map(|(i, _)| i)
            .find(|&i| {
                let before = inside[..i].chars().next_back();
                let after = inside[i + name.len()..].chars().next();
                !before.is_some_and(|c| is_name(c) || c == '.') && !after.is_some_and(is_name)
            })
            .map(|i| tag.start + i)
    })
}

/// The most attribute accesses (`.name`) written one after another anywhere in `body`,
/// in one pass. It counts prose and string literals too, which can only make it larger.
fn longest_attribute_chain(body: &str) -> usize {
    let bytes = body.as_bytes();
    let is_start = |b: u8| b.is_ascii_alphabetic() || b == b'_';
    let is_name = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let skip_space = |mut i: usize| {
        while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        i
    };
    let (mut i, mut run, mut longest) = (0, 0, 0);
    while i < bytes.len() {
        if bytes[i] != b'.' {
            run = 0;
            i += 1;
            continue;
        }
        let mut j = skip_space(i + 1);
        if bytes.get(j).copied().is_some_and(is_start) {
            while bytes.get(j).copied().is_some_and(is_name) {
                j += 1;
            }
            run += 1;
            longest = longest.max(run);
            // Spaces may stand between the name and the next `.` of the chain.
            i = skip_space(j);
        } else {
            run = 0;
            i = j;
        }
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Sources;

    /// The findings of this rule on a contract whose states are `states` (YAML lines).
    fn findings(states: &str) -> Vec<Diagnostic> {
        let text = format!(
            "contract: t\nversion: 1\nhost: agent-runner\nlocales: [en, ja]\ninitial: ASK\n\
             vars: {{target: {{type: string}}}}\nstates:\n{states}  END: {{kind: terminal}}\n"
        );
        let mut sources = Sources::default();
        let file = sources.add("t.yml", text);
        let loaded =
            crate::contract::load(&mut sources, file, &crate::contract::registry::test_hosts());
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        check(&loaded.contract.unwrap())
    }

    fn state(instruction: &str) -> String {
        format!(
            "  ASK:\n    payload: {{type: object}}\n    otherwise: {{to: END}}\n    instruction: {instruction}\n"
        )
    }

    #[test]
    fn a_text_for_every_locale_is_checked_once_and_folded_text_names_its_line() {
        let found = findings(&state("\"{{ vars.targte }}\""));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.contains("(en, ja) reads `vars.targte`"));
        assert_eq!(
            found[0].help.as_deref(),
            Some("did you mean `vars.target`?")
        );
        // A folded block joins its lines (the blank one stays a line break): the finding
        // is at the text, with its line in the template.
        let folded = state(">-\n      first\n\n      then {{ nxt_task.id }}");
        let found = findings(&folded);
        let span = found[0].span.unwrap();
        assert_eq!((span.start.line, span.start.col), (12, 7));
        assert!(
            found[0]
                .message
                .ends_with("which templates are not given (template line 2)"),
            "{}",
            found[0].message
        );
        assert_eq!(found[0].help.as_deref(), Some("did you mean `next_task`?"));
        // Locals, loop variables and minijinja's globals are not context names.
        let fine = "\"{% set n = 1 %}{% for t in tasks %}{{ loop.index }}{{ t.id }}{% endfor %}{{ range(n) }}{{ namespace() }}\"";
        assert!(findings(&state(fine)).is_empty());
        // A declared variable read without `vars.`.
        let found = findings(&state("\"{{ target }}\""));
        assert_eq!(
            found[0].help.as_deref(),
            Some("did you mean `vars.target`?")
        );
    }

    #[test]
    fn many_unknown_names_are_reported_and_counted_in_linear_time() {
        // 20,000 distinct unknown names in one text: the first ones are reported, with
        // their place and a suggestion while the help budget lasts, and a note counts the
        // rest.
        let body: String = (0..20_000).map(|i| format!("{{{{ n{i} }}}}")).collect();
        let started = std::time::Instant::now();
        let found = findings(&state(&format!("\"{body}\"")));
        assert_eq!(found.len(), MAX_PER_TEXT);
        assert_eq!(
            found[MAX_PER_TEXT - 1].notes,
            [
                "the instruction of `ASK` (en, ja) reads 19980 more names it is not given, not listed"
            ]
        );
        assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
        // A chain longer than the nested analysis affords: the root is still checked.
        let chain = format!(
            "\"{{{{ nope{} }}}}{{{{ vars.nope }}}}\"",
            ".a".repeat(MAX_CHAIN + 1)
        );
        let found = findings(&state(&chain));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.contains("reads `nope`"));
    }

    #[test]
    fn attribute_chains_are_measured_in_one_pass() {
        assert_eq!(longest_attribute_chain("{{ vars.a.b }} and x.y"), 2);
        assert_eq!(longest_attribute_chain("{{ vars . a . b . c }}"), 3);
        assert_eq!(longest_attribute_chain("Wait... then x[0].a"), 1);
        assert_eq!(longest_attribute_chain("no dots"), 0);
        let long = format!("{{{{ x{} }}}}", ".a".repeat(1000));
        assert_eq!(longest_attribute_chain(&long), 1000);
    }

    fn first_use_in(body: &str, name: &str) -> Option<usize> {
        first_use(body, &tags(body), name)
    }

    #[test]
    fn a_use_is_a_whole_name() {
        assert_eq!(
            first_use_in("{{ myvars.x }} {{ vars.x }}", "vars.x"),
            Some(18)
        );
        assert_eq!(first_use_in("{{ vars.xy }}", "vars.x"), None);
        assert_eq!(first_use_in("{{ a.vars.x }}", "vars.x"), None);
        assert_eq!(first_use_in("the stat: {{ stat }}", "stat"), Some(13));
        assert_eq!(
            first_use_in("{# stat #}{% raw %}{{ stat }}{% endraw %}", "stat"),
            None
        );
    }
}
