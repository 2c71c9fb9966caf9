//! The engine's own message roles. The engine knows roles, never message keys: a
//! contract maps each role to a key in `engine_messages`, so texts stay in data.

/// Each role and the placeholders the engine provides for it.
pub(crate) const ENGINE_ROLES: &[(&str, &[&str])] = &[
    ("payload_invalid", &["phase", "details"]),
    ("required_tools_not_used", &["phase", "missing_list"]),
    (
        "required_tools_not_reported",
        &["phase", "missing_reported"],
    ),
    ("tools_reported_not_called", &["phase", "tools"]),
    ("min_distinct_tools", &["phase", "min", "count"]),
    ("session_finished", &["state"]),
    ("guard_failed", &["details"]),
    ("action_failed", &["action", "details"]),
    ("unknown_state", &["phase"]),
];

/// Placeholders a `field_messages` entry receives.
pub(crate) const FIELD_MESSAGE_ARGS: &[&str] = &["phase", "field", "details"];

pub(crate) fn role_args(role: &str) -> Option<&'static [&'static str]> {
    ENGINE_ROLES
        .iter()
        .find(|(r, _)| *r == role)
        .map(|(_, a)| *a)
}
