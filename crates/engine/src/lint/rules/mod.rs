//! One file per lint rule. Each file documents what it flags, why, and an example.

pub(crate) mod dead_end_state;
pub(crate) mod invalid_cancel_target;
pub(crate) mod missing_locale_text;
pub(crate) mod placeholder_mismatch;
pub(crate) mod resource_not_released;
pub(crate) mod shadowed_transition;
pub(crate) mod unbounded_cycle;
pub(crate) mod undefined_message;
pub(crate) mod unknown_template_name;
pub(crate) mod unreachable_state;
pub(crate) mod unused_message;
