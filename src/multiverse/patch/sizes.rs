//! The budgets of one patch: every text and list within its limit, titles and questions
//! not blank, pools and conflict paths well formed. The schema states the same limits to
//! the planner; this holds for a patch built in Rust too.

use super::problem::{Location, PatchError, PatchProblem};
use super::types::{
    ImplHints, MAX_CONFLICTS, MAX_ITEM_CHARS, MAX_ITEMS, MAX_QUESTIONS, MAX_TEXT_CHARS,
    MAX_TITLE_CHARS, Operation, PlanPatch, Question,
};

/// Every budget the patch exceeds, in the patch's order.
pub(super) fn check(patch: &PlanPatch) -> Vec<PatchError> {
    let mut sizes = Sizes::default();
    sizes.text(
        &Location::Patch,
        "understanding",
        &patch.understanding,
        MAX_TEXT_CHARS,
        true,
    );
    for (index, operation) in patch.operations.iter().enumerate() {
        let at = Location::Operation {
            index,
            op: operation.name(),
        };
        sizes.operation(&at, operation);
    }
    sizes.count(
        &Location::Patch,
        "questions",
        patch.questions.len(),
        MAX_QUESTIONS,
    );
    for (index, question) in patch.questions.iter().enumerate() {
        let at = Location::Question { index };
        match question {
            Question::Text(q) => sizes.text(&at, "question", q, MAX_ITEM_CHARS, false),
            Question::Detailed(d) => {
                sizes.text(&at, "question", &d.question, MAX_ITEM_CHARS, false);
                sizes.items(&at, "options", &d.options, true);
                sizes.count(&at, "tasks", d.tasks.len(), MAX_ITEMS);
            }
        }
    }
    sizes.count(
        &Location::Patch,
        "conflicts",
        patch.conflicts.len(),
        MAX_CONFLICTS,
    );
    for (index, conflict) in patch.conflicts.iter().enumerate() {
        let at = Location::Conflict { index };
        sizes.text(&at, "file", &conflict.file, MAX_ITEM_CHARS, false);
        if let Some(reason) = &conflict.reason {
            sizes.text(&at, "reason", reason, MAX_ITEM_CHARS, true);
        }
        sizes.count(&at, "tasks", conflict.tasks.len(), MAX_ITEMS);
        if !is_relative_path(&conflict.file) {
            sizes.push(
                &at,
                PatchProblem::BadPath {
                    file: conflict.file.clone(),
                },
            );
        }
    }
    sizes.errors
}

/// The same budgets for a task a user adds (`task add`, `POST /api/tasks`): what a
/// planner may not send, a request may not either.
pub(crate) fn task_design(design: &crate::multiverse::model::TaskDesign) -> Vec<PatchProblem> {
    let mut sizes = Sizes::default();
    let at = Location::Patch;
    sizes.text(&at, "title", &design.title, MAX_TITLE_CHARS, false);
    sizes.text(
        &at,
        "description",
        &design.description,
        MAX_TEXT_CHARS,
        true,
    );
    sizes.items(
        &at,
        "acceptance_criteria",
        &design.acceptance_criteria,
        false,
    );
    sizes.count(&at, "dependencies", design.dependencies.len(), MAX_ITEMS);
    if let Some(test) = &design.runner.test_command {
        sizes.text(&at, "test", test, MAX_ITEM_CHARS, false);
    }
    if !is_name(&design.pool) {
        sizes.push(
            &at,
            PatchProblem::BadPool {
                pool: design.pool.clone(),
            },
        );
    }
    sizes.errors.into_iter().map(|e| e.problem).collect()
}

#[derive(Default)]
struct Sizes {
    errors: Vec<PatchError>,
}

impl Sizes {
    fn push(&mut self, at: &Location, problem: PatchProblem) {
        self.errors.push(PatchError {
            at: at.clone(),
            problem,
        });
    }

    fn text(&mut self, at: &Location, field: &str, value: &str, max: usize, blank_ok: bool) {
        let chars = value.chars().count();
        if chars > max {
            let field = field.to_string();
            self.push(at, PatchProblem::TooLong { field, chars, max });
        } else if !blank_ok && value.trim().is_empty() {
            let field = field.to_string();
            self.push(at, PatchProblem::Blank { field });
        }
    }

    fn count(&mut self, at: &Location, field: &str, count: usize, max: usize) {
        if count > max {
            let field = field.to_string();
            self.push(at, PatchProblem::TooManyItems { field, count, max });
        }
    }

    /// A list of texts: each within [`MAX_ITEM_CHARS`], at most [`MAX_ITEMS`] of them.
    fn items(&mut self, at: &Location, field: &str, items: &[String], blank_ok: bool) {
        for item in items {
            self.text(at, field, item, MAX_ITEM_CHARS, blank_ok);
        }
        self.count(at, field, items.len(), MAX_ITEMS);
    }

    fn operation(&mut self, at: &Location, operation: &Operation) {
        let (title, description, criteria, dependencies, hints, facets, pool) = match operation {
            Operation::Create(c) => (
                Some(&c.title),
                Some(&c.description),
                Some(&c.acceptance_criteria),
                Some(&c.dependencies),
                c.suggested_impl.as_ref(),
                [c.milestone.as_ref(), c.phase.as_ref()],
                c.pool.as_ref(),
            ),
            Operation::Update(u) => (
                u.title.as_ref(),
                u.description.as_ref(),
                u.acceptance_criteria.as_ref(),
                u.dependencies.as_ref(),
                u.suggested_impl.as_ref(),
                [u.milestone.as_ref(), u.phase.as_ref()],
                u.pool.as_ref(),
            ),
            Operation::Move(_) | Operation::Delete(_) => return,
        };
        if let Some(title) = title {
            self.text(at, "title", title, MAX_TITLE_CHARS, false);
        }
        if let Some(description) = description {
            self.text(at, "description", description, MAX_TEXT_CHARS, true);
        }
        for (name, facet) in ["milestone", "phase"].into_iter().zip(facets) {
            if let Some(facet) = facet {
                self.text(at, name, facet, MAX_TITLE_CHARS, true);
            }
        }
        if let Some(criteria) = criteria {
            self.items(at, "acceptance_criteria", criteria, false);
        }
        if let Some(dependencies) = dependencies {
            self.count(at, "dependencies", dependencies.len(), MAX_ITEMS);
        }
        if let Some(hints) = hints {
            self.hints(at, hints);
        }
        if let Some(pool) = pool
            && !is_name(pool)
        {
            self.push(at, PatchProblem::BadPool { pool: pool.clone() });
        }
    }

    fn hints(&mut self, at: &Location, hints: &ImplHints) {
        if let Some(language) = &hints.language {
            self.text(
                at,
                "suggested_impl.language",
                language,
                MAX_TITLE_CHARS,
                true,
            );
        }
        self.items(at, "suggested_impl.file_paths", &hints.file_paths, true);
        self.items(at, "suggested_impl.constraints", &hints.constraints, true);
    }
}

/// A pool name: 1 to 64 of `A-Z a-z 0-9 . _ -`.
fn is_name(text: &str) -> bool {
    (1..=64).contains(&text.len())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A path inside the project: relative, no `..`, no NUL.
fn is_relative_path(file: &str) -> bool {
    let path = std::path::Path::new(file);
    !file.contains('\0')
        && !path.has_root()
        && !file.starts_with('\\')
        && path.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        })
}
