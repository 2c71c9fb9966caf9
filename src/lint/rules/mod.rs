//! One file per lint rule. Each file documents what it flags, why, and an example.

pub mod dead_end_state;
pub mod missing_locale_text;
pub mod placeholder_mismatch;
pub mod shadowed_transition;
pub mod unbounded_cycle;
pub mod undefined_message;
pub mod unreachable_state;
pub mod unused_message;
