//! The project's own rules for agents, read from `CLAUDE.md` and `AGENTS.md`: each list
//! item becomes one rule with the `file:line` it comes from, so `context.yml` points at
//! the source instead of copying whole files.

use super::report::InitError;

/// The files agents already read for project rules, in the order they are reported.
pub(super) const SOURCES: [&str; 3] = ["CLAUDE.md", ".claude/CLAUDE.md", "AGENTS.md"];

/// Enough to summarise a rules file without turning context.yml into a copy of it.
const MAX_RULES_PER_FILE: usize = 60;
const MAX_RULE_CHARS: usize = 300;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(super) struct Rule {
    pub(super) rule: String,
    /// `CLAUDE.md:12`
    pub(super) source: String,
}

/// The rules of every source file that exists; `read` returns a file's text by its
/// repository-relative name, or `None` when it does not exist.
pub(super) fn collect(
    read: &dyn Fn(&str) -> Result<Option<String>, InitError>,
) -> Result<Vec<Rule>, InitError> {
    let mut rules = Vec::new();
    for name in SOURCES {
        if let Some(text) = read(name)? {
            rules.extend(from_markdown(name, &text));
        }
    }
    Ok(rules)
}

/// List items (`-`, `*`, `+`, `1.`, `1)`) outside fenced code blocks.
fn from_markdown(name: &str, text: &str) -> Vec<Rule> {
    let mut in_fence = false;
    let mut rules = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let Some(item) = list_item(trimmed) else {
            continue;
        };
        let item = item
            .strip_prefix("[ ] ")
            .or_else(|| item.strip_prefix("[x] "))
            .unwrap_or(item)
            .trim();
        if item.is_empty() {
            continue;
        }
        let mut rule: String = item.chars().take(MAX_RULE_CHARS).collect();
        if rule.len() < item.len() {
            rule.push('…');
        }
        rules.push(Rule {
            rule,
            source: format!("{name}:{}", index + 1),
        });
        if rules.len() == MAX_RULES_PER_FILE {
            break;
        }
    }
    rules
}

fn list_item(line: &str) -> Option<&str> {
    for marker in ["- ", "* ", "+ "] {
        if let Some(rest) = line.strip_prefix(marker) {
            return Some(rest);
        }
    }
    let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return None;
    }
    line[digits..]
        .strip_prefix(". ")
        .or_else(|| line[digits..].strip_prefix(") "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_items_outside_code_fences_become_rules_with_their_line() {
        let text = "# Rules\n\nIntro.\n- Run `cargo fmt`.\n  * nested item\n```\n- not a rule\n```\n2. Never push to main\n- \n";
        let rules = from_markdown("CLAUDE.md", text);
        let got: Vec<(&str, &str)> = rules
            .iter()
            .map(|r| (r.rule.as_str(), r.source.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("Run `cargo fmt`.", "CLAUDE.md:4"),
                ("nested item", "CLAUDE.md:5"),
                ("Never push to main", "CLAUDE.md:9"),
            ]
        );
    }
}
