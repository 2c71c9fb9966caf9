//! [`apply`]: a patch applied to a working copy of the plan, operation by operation,
//! collecting every problem; the new plan only when there is none and it passes
//! `Plan::check`. The semantics are in the module above.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::problem::{Location, PatchError, PatchErrors, PatchProblem};
use super::sizes;
use super::types::{
    Create, Created, Delete, ImplHints, MAX_OPERATIONS, MAX_PLAN_TASKS, MAX_TEMP_ID_CHARS, Move,
    Operation, PatchContext, PatchSummary, PlanPatch, PlannedConflict, PlannedQuestion, Position,
    Question, RemovedDependency, Update,
};
use super::work::Work;
use crate::multiverse::model::{DEFAULT_POOL, Plan, SuggestedImpl, TaskDesign, TaskId};
use crate::multiverse::plan::PlanFinding;

/// Apply `patch` to `plan`: the new plan and what changed, or every reason it cannot be
/// applied (the plan is untouched either way: this is a pure function of its arguments).
pub fn apply(
    plan: &Plan,
    patch: &PlanPatch,
    ctx: &PatchContext,
) -> Result<(Plan, PatchSummary), PatchErrors> {
    let fail =
        |at: Location, problem: PatchProblem| Err(PatchErrors(vec![PatchError { at, problem }]));
    // Fail closed on a broken plan: every later check assumes the invariants.
    if let Some(finding) = plan.check().into_iter().next() {
        return fail(Location::Patch, PatchProblem::PlanInvalid { finding });
    }
    // Before any work: a patch too big is refused in constant time.
    if patch.operations.len() > MAX_OPERATIONS {
        return fail(
            Location::Patch,
            PatchProblem::TooManyOperations {
                count: patch.operations.len(),
                max: MAX_OPERATIONS,
            },
        );
    }
    let mut run = Run::new(plan, patch, ctx);
    run.errors.extend(sizes::check(patch));
    run.assign_ids(patch);
    run.insert_created(patch);
    for (index, operation) in patch.operations.iter().enumerate() {
        let at = Location::Operation {
            index,
            op: operation.name(),
        };
        let done = match operation {
            Operation::Create(create) => run.place_created(index, create),
            Operation::Update(update) => run.update(index, update),
            Operation::Move(r#move) => run.relocate(index, r#move),
            Operation::Delete(delete) => run.delete(index, delete),
        };
        if let Err(Problems(problems)) = done {
            for problem in problems {
                run.errors.push(PatchError {
                    at: at.clone(),
                    problem,
                });
            }
        }
    }
    run.settle_deleted_dependencies();
    run.resolve_questions(patch);
    run.resolve_conflicts(patch);
    if run.work.tasks.len() > MAX_PLAN_TASKS {
        run.errors.push(PatchError {
            at: Location::Patch,
            problem: PatchProblem::TooManyTasks {
                count: run.work.tasks.len(),
                max: MAX_PLAN_TASKS,
            },
        });
    }
    if !run.errors.is_empty() {
        return Err(PatchErrors(run.errors));
    }
    let deps_set_by = std::mem::take(&mut run.deps_set_by);
    let mut summary = std::mem::take(&mut run.summary);
    summary.understanding = patch.understanding.clone();
    let result = run.work.into_plan();
    let errors: Vec<PatchError> = result
        .check()
        .into_iter()
        .map(|finding| match finding {
            PlanFinding::DependencyCycle { ids } => {
                let mut indices: Vec<usize> = ids
                    .iter()
                    .filter_map(|id| deps_set_by.get(id).copied())
                    .collect();
                indices.sort_unstable();
                indices.dedup();
                PatchError {
                    at: match indices.as_slice() {
                        [] => Location::Patch,
                        [index] => Location::Operation {
                            index: *index,
                            op: patch
                                .operations
                                .get(*index)
                                .map_or("operation", Operation::name),
                        },
                        _ => Location::Operations { indices },
                    },
                    problem: PatchProblem::DependencyCycle { ids },
                }
            }
            finding => PatchError {
                at: Location::Patch,
                problem: PatchProblem::ResultInvalid { finding },
            },
        })
        .collect();
    if !errors.is_empty() {
        return Err(PatchErrors(errors));
    }
    Ok((result, summary))
}

/// Why one operation failed: usually one problem, several when a list has several bad
/// entries.
struct Problems(Vec<PatchProblem>);

impl From<PatchProblem> for Problems {
    fn from(problem: PatchProblem) -> Problems {
        Problems(vec![problem])
    }
}

/// One application in progress.
struct Run<'a> {
    ctx: &'a PatchContext,
    /// Each operation's kind, for locations.
    names: Vec<&'static str>,
    work: Work,
    /// Ids the plan had before the patch.
    existing: &'a BTreeMap<TaskId, TaskDesign>,
    /// `temp_id` → (its create's index, the new id).
    temp: HashMap<String, (usize, TaskId)>,
    /// Deleted id → the operation that deleted it.
    deleted: HashMap<TaskId, usize>,
    /// Task → the last operation that set its dependencies.
    deps_set_by: HashMap<TaskId, usize>,
    summary: PatchSummary,
    errors: Vec<PatchError>,
}

impl<'a> Run<'a> {
    fn new(plan: &'a Plan, patch: &PlanPatch, ctx: &'a PatchContext) -> Run<'a> {
        Run {
            ctx,
            names: patch.operations.iter().map(Operation::name).collect(),
            work: Work::from_plan(plan),
            existing: &plan.tasks,
            temp: HashMap::new(),
            deleted: HashMap::new(),
            deps_set_by: HashMap::new(),
            summary: PatchSummary::default(),
            errors: Vec::new(),
        }
    }

    fn error(&mut self, at: Location, problem: PatchProblem) {
        self.errors.push(PatchError { at, problem });
    }

    /// Map every valid, unique `temp_id` to a new id.
    fn assign_ids(&mut self, patch: &PlanPatch) {
        let mut n: u64 = 0;
        for (index, operation) in patch.operations.iter().enumerate() {
            let Operation::Create(create) = operation else {
                continue;
            };
            let at = Location::Operation {
                index,
                op: "create",
            };
            let temp_id = &create.temp_id;
            if temp_id.is_empty()
                || temp_id.chars().count() > MAX_TEMP_ID_CHARS
                || temp_id.chars().any(char::is_control)
            {
                self.error(
                    at,
                    PatchProblem::BadTempId {
                        temp_id: temp_id.clone(),
                    },
                );
                continue;
            }
            if let Some((first, _)) = self.temp.get(temp_id) {
                let first = *first;
                self.error(
                    at,
                    PatchProblem::DuplicateTempId {
                        temp_id: temp_id.clone(),
                        first,
                    },
                );
                continue;
            }
            if TaskId::parse(temp_id).is_ok_and(|id| self.existing.contains_key(&id)) {
                self.error(
                    at,
                    PatchProblem::TempIdClash {
                        temp_id: temp_id.clone(),
                    },
                );
                continue;
            }
            // The smallest free number: each turn skips one of the plan's ids or ends.
            let id = loop {
                n += 1;
                match TaskId::parse(&format!("{}{n}", self.ctx.id_prefix)) {
                    Ok(id) if self.existing.contains_key(&id) => continue,
                    Ok(id) => break Some(id),
                    Err(_) => break None,
                }
            };
            let Some(id) = id else {
                self.error(
                    at,
                    PatchProblem::BadIdPrefix {
                        prefix: self.ctx.id_prefix.clone(),
                    },
                );
                return;
            };
            self.temp.insert(temp_id.clone(), (index, id.clone()));
            self.summary.created.push(Created {
                temp_id: temp_id.clone(),
                id,
            });
        }
    }

    /// Every created design exists (unplaced) before the first operation runs, so any
    /// operation's dependencies and parents may name it.
    fn insert_created(&mut self, patch: &PlanPatch) {
        for (index, operation) in patch.operations.iter().enumerate() {
            let Operation::Create(create) = operation else {
                continue;
            };
            let Some((first, id)) = self.temp.get(&create.temp_id).cloned() else {
                continue;
            };
            if first != index {
                continue;
            }
            let at = Location::Operation {
                index,
                op: "create",
            };
            let dependencies = match self.resolve_dependencies(&id, &create.dependencies) {
                Ok(dependencies) => dependencies,
                Err(problems) => {
                    for problem in problems {
                        self.error(at.clone(), problem);
                    }
                    Vec::new()
                }
            };
            self.deps_set_by.insert(id.clone(), index);
            let design = TaskDesign {
                id: id.clone(),
                title: create.title.trim().to_string(),
                description: create.description.clone(),
                acceptance_criteria: create.acceptance_criteria.clone(),
                suggested_impl: create.suggested_impl.clone().map(hints),
                dependencies,
                milestone: facet(create.milestone.as_ref()),
                phase: facet(create.phase.as_ref()),
                pool: create
                    .pool
                    .clone()
                    .unwrap_or_else(|| DEFAULT_POOL.to_string()),
                priority: create.priority.unwrap_or(0),
                runner: Default::default(),
                created_at: self.ctx.now.clone(),
                updated_at: self.ctx.now.clone(),
                created_by: self.ctx.author.clone(),
            };
            self.work.tasks.insert(id, design);
        }
    }

    /// A dependency list's references as ids: each must name a task of the plan or a
    /// `temp_id` (deletions are settled at the end), none twice.
    fn resolve_dependencies(
        &self,
        task: &TaskId,
        references: &[String],
    ) -> Result<Vec<TaskId>, Vec<PatchProblem>> {
        let mut problems = Vec::new();
        let mut ids: Vec<TaskId> = Vec::with_capacity(references.len());
        let mut seen = HashSet::new();
        for reference in references {
            let Some(id) = self.lookup(reference) else {
                problems.push(PatchProblem::UnknownDependency {
                    reference: reference.clone(),
                });
                continue;
            };
            if !seen.insert(id.clone()) {
                problems.push(PatchProblem::DuplicateDependency {
                    task: task.clone(),
                    dependency: id,
                });
                continue;
            }
            ids.push(id);
        }
        if problems.is_empty() {
            Ok(ids)
        } else {
            Err(problems)
        }
    }

    /// The id a reference names: a `temp_id` of the patch, else a task of the plan as it
    /// was or as the patch made it so far (deleted ones included: the caller decides).
    fn lookup(&self, reference: &str) -> Option<TaskId> {
        if let Some((_, id)) = self.temp.get(reference) {
            return Some(id.clone());
        }
        let id = TaskId::parse(reference).ok()?;
        (self.work.tasks.contains_key(&id) || self.deleted.contains_key(&id)).then_some(id)
    }

    /// The task an `update`, `move` or `delete` at `index` acts on: it exists now.
    fn target(&self, index: usize, reference: &str) -> Result<TaskId, PatchProblem> {
        if let Some((create, _)) = self.temp.get(reference)
            && *create > index
        {
            return Err(PatchProblem::NotCreatedYet {
                temp_id: reference.to_string(),
                create: *create,
            });
        }
        let id = self
            .lookup(reference)
            .ok_or_else(|| PatchProblem::UnknownTask {
                reference: reference.to_string(),
            })?;
        self.present(id)
    }

    /// `id` unless an earlier operation deleted it.
    fn present(&self, id: TaskId) -> Result<TaskId, PatchProblem> {
        match self.deleted.get(&id) {
            Some(by) => Err(PatchProblem::TaskDeleted { id, by: *by }),
            None => Ok(id),
        }
    }

    /// The parent a `create` or `move` names (`None`: the root).
    fn parent(&self, reference: Option<&String>) -> Result<Option<TaskId>, PatchProblem> {
        let Some(reference) = reference else {
            return Ok(None);
        };
        let id = self
            .lookup(reference)
            .ok_or_else(|| PatchProblem::UnknownParent {
                reference: reference.clone(),
            })?;
        self.present(id).map(Some)
    }

    /// Put `id` (not placed) under `parent` at `position`, or say why not; nothing
    /// changes on an error.
    fn place(
        &mut self,
        id: &TaskId,
        parent: Option<TaskId>,
        position: Option<&Position>,
    ) -> Result<(), PatchProblem> {
        if let Some(parent) = &parent
            && self.work.is_ancestor_or_self(id, parent)
        {
            return Err(PatchProblem::OwnAncestor {
                task: id.clone(),
                parent: parent.clone(),
            });
        }
        let siblings: &[TaskId] = self
            .work
            .children
            .get(&parent)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let anchor = |reference: &String| -> Result<usize, PatchProblem> {
            self.lookup(reference)
                .and_then(|a| siblings.iter().position(|s| *s == a))
                .ok_or_else(|| PatchProblem::NotASibling {
                    anchor: reference.clone(),
                    parent: parent.clone(),
                })
        };
        let at = match position {
            None | Some(Position::End) => siblings.len(),
            Some(Position::Index(i)) => (*i).min(siblings.len()),
            Some(Position::Before(reference)) => anchor(reference)?,
            Some(Position::After(reference)) => anchor(reference)? + 1,
        };
        self.work.attach(id, parent, at);
        Ok(())
    }

    fn place_created(&mut self, index: usize, create: &Create) -> Result<(), Problems> {
        let Some((first, id)) = self.temp.get(&create.temp_id).cloned() else {
            return Ok(()); // its temp_id is already reported
        };
        if first != index {
            return Ok(());
        }
        let parent = self.parent(create.parent_id.as_ref())?;
        Ok(self.place(&id, parent, create.position.as_ref())?)
    }

    fn update(&mut self, index: usize, update: &Update) -> Result<(), Problems> {
        let id = self.target(index, &update.task_id)?;
        let Update {
            task_id: _,
            title,
            description,
            acceptance_criteria,
            dependencies,
            suggested_impl,
            milestone,
            phase,
            pool,
            priority,
        } = update;
        if title.is_none()
            && description.is_none()
            && acceptance_criteria.is_none()
            && dependencies.is_none()
            && suggested_impl.is_none()
            && milestone.is_none()
            && phase.is_none()
            && pool.is_none()
            && priority.is_none()
        {
            return Err(Problems::from(PatchProblem::EmptyUpdate { id }));
        }
        if self.ctx.running.contains(&id) {
            let fields: Vec<&'static str> = [
                ("description", description.is_some()),
                ("acceptance_criteria", acceptance_criteria.is_some()),
                ("dependencies", dependencies.is_some()),
                ("suggested_impl", suggested_impl.is_some()),
                ("pool", pool.is_some()),
            ]
            .into_iter()
            .filter_map(|(name, set)| set.then_some(name))
            .collect();
            if !fields.is_empty() {
                return Err(Problems::from(PatchProblem::RunningTaskChanged {
                    id,
                    fields,
                }));
            }
        }
        let resolved = match dependencies {
            Some(references) => Some(
                self.resolve_dependencies(&id, references)
                    .map_err(Problems)?,
            ),
            None => None,
        };
        let Some(design) = self.work.tasks.get_mut(&id) else {
            return Err(Problems::from(PatchProblem::UnknownTask {
                reference: update.task_id.clone(),
            }));
        };
        if let Some(title) = title {
            design.title = title.trim().to_string();
        }
        if let Some(description) = description {
            design.description = description.clone();
        }
        if let Some(criteria) = acceptance_criteria {
            design.acceptance_criteria = criteria.clone();
        }
        if let Some(ids) = resolved {
            design.dependencies = ids;
            self.deps_set_by.insert(id.clone(), index);
        }
        if let Some(h) = suggested_impl {
            design.suggested_impl = Some(hints(h.clone()));
        }
        if milestone.is_some() {
            design.milestone = facet(milestone.as_ref());
        }
        if phase.is_some() {
            design.phase = facet(phase.as_ref());
        }
        if let Some(pool) = pool {
            design.pool = pool.clone();
        }
        if let Some(priority) = priority {
            design.priority = *priority;
        }
        design.updated_at = self.ctx.now.clone();
        if !self.summary.updated.contains(&id) {
            self.summary.updated.push(id);
        }
        Ok(())
    }

    fn relocate(&mut self, index: usize, r#move: &Move) -> Result<(), Problems> {
        let id = self.target(index, &r#move.task_id)?;
        let parent = self.parent(r#move.parent_id.as_ref())?;
        let Some((old_parent, old_at)) = self.work.detach(&id) else {
            // Only a created task can be unplaced here, and `target` refused those
            // whose create comes later.
            return Err(Problems::from(PatchProblem::UnknownTask {
                reference: r#move.task_id.clone(),
            }));
        };
        if let Err(problem) = self.place(&id, parent, r#move.position.as_ref()) {
            self.work.attach(&id, old_parent, old_at);
            return Err(problem.into());
        }
        if !self.summary.moved.contains(&id) {
            self.summary.moved.push(id);
        }
        Ok(())
    }

    fn delete(&mut self, index: usize, delete: &Delete) -> Result<(), Problems> {
        let id = self.target(index, &delete.task_id)?;
        let doomed = if delete.cascade {
            self.work.subtree(&id)
        } else {
            vec![id.clone()]
        };
        let running: Vec<TaskId> = doomed
            .iter()
            .filter(|d| self.ctx.running.contains(*d))
            .cloned()
            .collect();
        if !running.is_empty() {
            return Err(Problems::from(PatchProblem::RunningTaskDeleted {
                ids: running,
            }));
        }
        let Some((parent, at)) = self.work.detach(&id) else {
            return Err(Problems::from(PatchProblem::UnknownTask {
                reference: delete.task_id.clone(),
            }));
        };
        let children = self
            .work
            .children
            .remove(&Some(id.clone()))
            .unwrap_or_default();
        if delete.cascade {
            for node in doomed.iter().skip(1) {
                self.work.parent.remove(node);
                self.work.children.remove(&Some(node.clone()));
            }
        } else {
            // The children take the deleted task's place, in order (the original's
            // "option A", QH-003).
            for (offset, child) in children.iter().enumerate() {
                self.work.attach(child, parent.clone(), at + offset);
            }
        }
        for node in doomed {
            self.work.tasks.remove(&node);
            self.deps_set_by.remove(&node);
            self.deleted.insert(node.clone(), index);
            self.summary.deleted.push(node);
        }
        Ok(())
    }

    /// Edges to deleted tasks: removed and reported when the plan had them, an error when
    /// this patch set them.
    fn settle_deleted_dependencies(&mut self) {
        if self.deleted.is_empty() {
            return;
        }
        let mut problems = Vec::new();
        for (id, design) in self.work.tasks.iter_mut() {
            if !design
                .dependencies
                .iter()
                .any(|d| self.deleted.contains_key(d))
            {
                continue;
            }
            if let Some(set_by) = self.deps_set_by.get(id) {
                for dependency in &design.dependencies {
                    if let Some(by) = self.deleted.get(dependency) {
                        problems.push((
                            *set_by,
                            PatchProblem::DependencyOnDeleted {
                                task: id.clone(),
                                dependency: dependency.clone(),
                                deleted_by: *by,
                            },
                        ));
                    }
                }
                continue;
            }
            let deleted = &self.deleted;
            let summary = &mut self.summary;
            design.dependencies.retain(|dependency| {
                let keep = !deleted.contains_key(dependency);
                if !keep {
                    summary.removed_dependencies.push(RemovedDependency {
                        task: id.clone(),
                        dependency: dependency.clone(),
                    });
                }
                keep
            });
            design.updated_at = self.ctx.now.clone();
        }
        problems.sort_by_key(|(index, _)| *index);
        for (index, problem) in problems {
            self.error(self.op_location(index), problem);
        }
    }

    fn op_location(&self, index: usize) -> Location {
        Location::Operation {
            index,
            op: self.names.get(index).copied().unwrap_or("operation"),
        }
    }

    /// Task references of questions and conflicts, as ids of the patched plan.
    fn resolve_references(&self, references: &[String]) -> Result<Vec<TaskId>, PatchProblem> {
        let mut ids = Vec::with_capacity(references.len());
        for reference in references {
            let id = self
                .lookup(reference)
                .ok_or_else(|| PatchProblem::UnknownTask {
                    reference: reference.clone(),
                })?;
            let id = self.present(id)?;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        Ok(ids)
    }

    fn resolve_questions(&mut self, patch: &PlanPatch) {
        for (index, question) in patch.questions.iter().enumerate() {
            let (text, tasks, options): (&str, &[String], &[String]) = match question {
                Question::Text(text) => (text, &[], &[]),
                Question::Detailed(d) => (&d.question, &d.tasks, &d.options),
            };
            match self.resolve_references(tasks) {
                Ok(tasks) => self.summary.questions.push(PlannedQuestion {
                    question: text.trim().to_string(),
                    tasks,
                    options: options.to_vec(),
                }),
                Err(problem) => self.error(Location::Question { index }, problem),
            }
        }
    }

    fn resolve_conflicts(&mut self, patch: &PlanPatch) {
        for (index, conflict) in patch.conflicts.iter().enumerate() {
            match self.resolve_references(&conflict.tasks) {
                Ok(tasks) => self.summary.conflicts.push(PlannedConflict {
                    file: conflict.file.clone(),
                    tasks,
                    reason: conflict.reason.clone(),
                }),
                Err(problem) => self.error(Location::Conflict { index }, problem),
            }
        }
    }
}

fn hints(h: ImplHints) -> SuggestedImpl {
    SuggestedImpl {
        language: h.language,
        file_paths: h.file_paths,
        constraints: h.constraints,
    }
}

/// A facet's value: `""` (or blank) means none.
fn facet(value: Option<&String>) -> Option<String> {
    value
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}
