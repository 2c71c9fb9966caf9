//! The names an instruction template may use: the one list that the renderer
//! (`machine::response::instruction`) fills the template context from and that lint
//! (`unknown-template-name`) checks every template against, so the two cannot disagree.

use super::model::Contract;

/// A top-level name of the template context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TemplateRoot {
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
    pub const ALL: [TemplateRoot; 10] = [
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
    pub fn name(self) -> &'static str {
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
    pub fn find(name: &str) -> Option<TemplateRoot> {
        TemplateRoot::ALL.into_iter().find(|r| r.name() == name)
    }

    /// For a namespace whose keys are names the contract declares, those names: what
    /// `flags.X`, `params.X`, `counters.X` and `vars.X` may read. `None` for the others,
    /// whose attributes are not declared names (a task's fields, or none at all).
    pub fn members(self, contract: &Contract) -> Option<Vec<&str>> {
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
pub const NOT_IN_TEMPLATES: &[(&str, &str)] = &[
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

#[cfg(test)]
mod tests {
    use super::*;

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
