//! Checks of a project overlay against the contract it extends: a name the overlay gives
//! that the base does not have, but that is one or two edits from one it has, is most
//! likely a typo that would otherwise silently create a new state, counter or message.

use crate::diagnostic::Diagnostic;
use crate::yaml::{Node, NodeKind};

/// The sections whose keys name things of the base contract.
const SECTIONS: &[(&str, &str)] = &[
    ("states", "state"),
    ("counters", "counter"),
    ("messages", "message"),
    ("flags", "flag"),
    ("params", "param"),
    ("vars", "variable"),
];

/// Warnings for the overlay's names that the base lacks but nearly has.
pub(crate) fn near_misses(base: &Node, overlay: &Node) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (section, what) in SECTIONS {
        let (Some(base_section), Some(NodeKind::Map(entries))) =
            (base.get(section), overlay.get(section).map(|n| &n.kind))
        else {
            continue;
        };
        let NodeKind::Map(base_entries) = &base_section.kind else {
            continue;
        };
        for (key, _) in entries {
            if base_entries.iter().any(|(k, _)| k.name == key.name) {
                continue;
            }
            let closest = base_entries
                .iter()
                .map(|(k, _)| (edit_distance(&key.name, &k.name), k.name.as_str()))
                .filter(|(d, _)| *d <= 2)
                .min();
            if let Some((_, name)) = closest {
                out.push(
                    Diagnostic::new(
                        "overlay-unknown-name",
                        format!(
                            "the overlay names {what} `{}`, which the contract it extends does not have: did you mean `{name}`?",
                            key.name
                        ),
                        Some(key.span),
                    )
                    .with_help(format!(
                        "as written, the overlay adds a new {what} `{}` instead of changing `{name}`",
                        key.name
                    )),
                );
            }
        }
    }
    out
}

/// Levenshtein distance in characters, case-insensitive (a name differing only in case
/// is a near miss too); stops early past 2, which is all the callers ask (here, and the
/// "did you mean" of `unknown-template-name`).
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    if a.len().abs_diff(b.len()) > 2 {
        return 3;
    }
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        if current.iter().min().is_some_and(|m| *m > 2) {
            return 3;
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::edit_distance;

    #[test]
    fn edit_distance_counts_edits_and_ignores_case() {
        assert_eq!(edit_distance("failure_cont", "failure_count"), 1);
        assert_eq!(edit_distance("EXPLORATON", "EXPLORATION"), 1);
        assert_eq!(edit_distance("Q1", "q1"), 0);
        assert_eq!(edit_distance("MERGE", "PRE_COMMIT"), 3);
    }
}
