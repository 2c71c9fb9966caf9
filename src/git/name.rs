//! The task-branch name grammar: `llm_task_<session id>_from_<encoded base>`.
//!
//! A session id is `[A-Za-z0-9-]+`: it has no `_`, so the first `_from_` after the prefix
//! is always the separator (the original's regex broke on ids with underscores). The base
//! branch is encoded by replacing each `/` with `__` and decoded by reading `__` back as
//! `/` from the left. That is reversible only for bases that contain no `__` and no `_`
//! right before a `/` (`a_/b` would encode to `a___b`, which decodes to `a/_b`); such
//! bases, and names that are not valid branch names, are refused.

use super::error::GitError;

/// Every task branch name starts with this.
pub const TASK_PREFIX: &str = "llm_task_";
const SEPARATOR: &str = "_from_";

/// Whether a session id fits the grammar (`[A-Za-z0-9-]+`).
pub fn is_valid_session_id(session_id: &str) -> bool {
    !session_id.is_empty()
        && session_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

fn encode(base: &str) -> String {
    base.replace('/', "__")
}

fn decode(encoded: &str) -> String {
    encoded.replace("__", "/")
}

/// The task branch name of a session started from `base`. The caller checks both parts
/// with [`checked_task_branch_name`]; this one only formats.
pub fn task_branch_name(session_id: &str, base: &str) -> String {
    format!("{TASK_PREFIX}{session_id}{SEPARATOR}{}", encode(base))
}

/// [`task_branch_name`], refusing a session id or base that would not parse back.
pub fn checked_task_branch_name(session_id: &str, base: &str) -> Result<String, GitError> {
    if !is_valid_session_id(session_id) {
        return Err(GitError::InvalidSessionId {
            session_id: session_id.to_string(),
        });
    }
    let name = task_branch_name(session_id, base);
    let round_trips =
        parse_task_branch(&name).is_some_and(|(id, decoded)| id == session_id && decoded == base);
    let valid = git2::Branch::name_is_valid(base).unwrap_or(false)
        && git2::Branch::name_is_valid(&name).unwrap_or(false);
    if round_trips && valid {
        Ok(name)
    } else {
        Err(GitError::UnsupportedBaseName {
            base: base.to_string(),
        })
    }
}

/// The session id and decoded base of a task branch name of this grammar; `None` for any
/// other name.
pub fn parse_task_branch(name: &str) -> Option<(String, String)> {
    let (session_id, base) = split_task_branch(name)?;
    let canonical = name.ends_with(&format!("{SEPARATOR}{}", encode(&base)));
    let valid = git2::Branch::name_is_valid(&base).unwrap_or(false);
    (is_valid_session_id(session_id) && canonical && valid).then(|| (session_id.to_string(), base))
}

/// The session and decoded base of any `llm_task_<x>_from_<y>` name, including the
/// original's (`llm_task_session_20260126_210951_from_main`), whose ids hold underscores
/// but never `_from_`. Used to report stale branches, not to accept a name as ours.
pub(crate) fn split_task_branch(name: &str) -> Option<(&str, String)> {
    let rest = name.strip_prefix(TASK_PREFIX)?;
    let (session_id, encoded) = rest.split_once(SEPARATOR)?;
    if session_id.is_empty() || encoded.is_empty() {
        return None;
    }
    Some((session_id, decode(encoded)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for base in [
            "main",
            "feature/x",
            "a/b/c",
            "release-1.2",
            "my_branch",
            "a/_b",
        ] {
            let name = checked_task_branch_name("20260126-210951-ab12", base).unwrap();
            assert_eq!(
                parse_task_branch(&name),
                Some(("20260126-210951-ab12".to_string(), base.to_string())),
                "{name}"
            );
        }
        assert_eq!(
            task_branch_name("s1", "feature/x"),
            "llm_task_s1_from_feature__x"
        );
    }

    #[test]
    fn bases_that_would_not_round_trip_are_refused() {
        for base in ["a__b", "a_/b", "", "bad..name", "x/"] {
            assert!(
                matches!(
                    checked_task_branch_name("s1", base),
                    Err(GitError::UnsupportedBaseName { .. })
                ),
                "{base:?}"
            );
        }
    }

    #[test]
    fn session_ids_are_restricted() {
        for id in ["", "a_b", "a/b", "é"] {
            assert!(matches!(
                checked_task_branch_name(id, "main"),
                Err(GitError::InvalidSessionId { .. })
            ));
        }
    }

    #[test]
    fn parsing_rejects_other_names() {
        assert_eq!(parse_task_branch("main"), None);
        assert_eq!(parse_task_branch("llm_task_s1"), None);
        assert_eq!(parse_task_branch("llm_task__from_main"), None);
        // The original's ids had underscores: not ours, but still split for reporting.
        let legacy = "llm_task_session_20260126_210951_from_feature__x";
        assert_eq!(parse_task_branch(legacy), None);
        assert_eq!(
            split_task_branch(legacy),
            Some(("session_20260126_210951", "feature/x".to_string()))
        );
        // The base part may itself contain `_from_`.
        assert_eq!(
            parse_task_branch("llm_task_s1_from_x_from_y"),
            Some(("s1".to_string(), "x_from_y".to_string()))
        );
        // Four underscores decode to `a//b`, which is no branch name.
        assert_eq!(parse_task_branch("llm_task_s1_from_a____b"), None);
    }
}
