//! Scenario tests as data: a YAML file says "with these flags, intent, params and facts,
//! after these payloads (and these action results), the session is in this state with
//! this message", and `code-intel test` runs it through the same session driver the hosts
//! use. Loading (`load`) turns a file into [`Scenario`]s with positions; running (`run`)
//! checks each step and records the transitions taken; `coverage` compares them with every
//! transition and counter redirect of the contract.

mod coverage;
mod load;
mod model;
mod paths;
mod raw;
mod replay;
mod run;

pub use coverage::{Coverage, Rule};
pub use load::{SUFFIXES, generated_schema, is_scenario_file, load};
pub use model::{ContractRef, Expect, Scenario, ScenarioFile, Step};
pub use paths::{Found, PathStep, Paths, shortest, to_scenarios};
pub use raw::RawScenarioFile;
pub use replay::{ReplayError, from_log};
pub use run::{Failure, ScenarioRun, ScriptedHost, Taken, run};
