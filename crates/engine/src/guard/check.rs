//! The static checker: resolves every path against the declared data and infers types,
//! so a typo or a string compared with a number is a lint finding, not a runtime surprise.

use std::collections::BTreeMap;

use serde_json::Value;

use super::ast::{BinaryOp, Expr, ExprKind, Func, Range};
use super::types::Ty;

/// The roots a guard may read (`payload`, `flags`, ...) and their types.
#[derive(Debug, Clone, Default)]
pub struct TypeEnv {
    pub roots: BTreeMap<String, Ty>,
}

impl TypeEnv {
    pub fn with(mut self, root: &str, ty: Ty) -> TypeEnv {
        self.roots.insert(root.to_string(), ty);
        self
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckErrorKind {
    UnknownPath,
    Type,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CheckError {
    pub kind: CheckErrorKind,
    pub message: String,
    pub range: Range,
    pub help: Option<String>,
}

/// Checks `expr` and returns its type, or every problem found.
pub(crate) fn check(expr: &Expr, env: &TypeEnv) -> Result<Ty, Vec<CheckError>> {
    let mut checker = Checker {
        env,
        errors: Vec::new(),
    };
    let ty = checker.expr(expr, None);
    if checker.errors.is_empty() {
        Ok(ty)
    } else {
        Err(checker.errors)
    }
}

/// Checks that `expr` is a condition: its type must be boolean.
pub fn check_condition(expr: &Expr, env: &TypeEnv) -> Result<(), Vec<CheckError>> {
    let ty = check(expr, env)?;
    if is_boolish(&ty) {
        Ok(())
    } else {
        Err(vec![type_error(
            format!("a guard must be a boolean condition, but this is {ty}"),
            expr.range,
        )])
    }
}

struct Checker<'a> {
    env: &'a TypeEnv,
    errors: Vec<CheckError>,
}

fn type_error(message: String, range: Range) -> CheckError {
    CheckError {
        kind: CheckErrorKind::Type,
        message,
        range,
        help: None,
    }
}

fn is_boolish(ty: &Ty) -> bool {
    matches!(ty.strip_optional(), Ty::Bool | Ty::Any)
}

fn path_text(segments: &[String]) -> String {
    segments.join(".")
}

impl Checker<'_> {
    fn expr(&mut self, expr: &Expr, item: Option<&Ty>) -> Ty {
        match &expr.kind {
            ExprKind::Literal(v) => literal_ty(v),
            ExprKind::Path(segments) => self.path(segments, expr.range),
            ExprKind::ItemPath(segments) => {
                match item {
                    Some(item_ty) => self.walk(
                        item_ty,
                        segments,
                        if segments.is_empty() {
                            "it".into()
                        } else {
                            format!(".{}", path_text(segments))
                        },
                        expr.range,
                    ),
                    None => {
                        self.errors.push(CheckError {
                        kind: CheckErrorKind::UnknownPath,
                        message: "`.field` and `it` only exist inside the predicate of any, all or count".into(),
                        range: expr.range,
                        help: Some("write the full path, for example `payload.passed`".into()),
                    });
                        Ty::Any
                    }
                }
            }
            ExprKind::List(items) => {
                let mut item_ty = Ty::Any;
                for it in items {
                    let t = self.expr(it, item);
                    if item_ty == Ty::Any && t != Ty::Null {
                        item_ty = t;
                    }
                }
                Ty::list(item_ty)
            }
            ExprKind::Not(inner) => {
                let t = self.expr(inner, item);
                if !is_boolish(&t) && t != Ty::Null {
                    self.errors.push(type_error(
                        format!("`!` needs a boolean, but this is {t}"),
                        inner.range,
                    ));
                }
                Ty::Bool
            }
            ExprKind::Binary(op, lhs, rhs) => self.binary(*op, lhs, rhs, item),
            ExprKind::Call(func, args) => self.call(*func, args, expr.range, item),
        }
    }

    fn path(&mut self, segments: &[String], range: Range) -> Ty {
        let root = &segments[0];
        let Some(root_ty) = self.env.roots.get(root) else {
            let known: Vec<&str> = self.env.roots.keys().map(String::as_str).collect();
            self.errors.push(CheckError {
                kind: CheckErrorKind::UnknownPath,
                message: format!("unknown name `{root}`"),
                range,
                help: Some(format!("a guard here can read: {}", known.join(", "))),
            });
            return Ty::Any;
        };
        self.walk(root_ty, &segments[1..], root.clone(), range)
    }

    /// The type of `segments` read from a value of type `ty`. Walks by reference and
    /// clones only the result: a root like `flags` may have thousands of fields.
    fn walk(&mut self, mut ty: &Ty, segments: &[String], mut so_far: String, range: Range) -> Ty {
        static ANY: Ty = Ty::Any;
        // Whether a step so far may be null, which makes the result optional.
        let mut optional = false;
        for segment in segments {
            optional = (optional || ty.is_nullable()) && *ty != Ty::Any;
            let next = match ty.strip_optional() {
                Ty::Any => &ANY,
                Ty::Object { fields, open } => match fields.get(segment) {
                    Some(t) => t,
                    None if *open => &ANY,
                    None => {
                        let mut known: Vec<&str> = fields.keys().map(String::as_str).collect();
                        known.sort_unstable();
                        self.errors.push(CheckError {
                            kind: CheckErrorKind::UnknownPath,
                            message: format!("`{so_far}` has no field `{segment}`"),
                            range,
                            help: Some(if known.is_empty() {
                                "it has no fields".to_string()
                            } else {
                                format!("known fields: {}", known.join(", "))
                            }),
                        });
                        return Ty::Any;
                    }
                },
                other => {
                    self.errors.push(type_error(
                        format!("`{so_far}` is {other}, it has no field `{segment}`"),
                        range,
                    ));
                    return Ty::Any;
                }
            };
            ty = next;
            so_far = format!("{so_far}.{segment}");
        }
        if optional {
            ty.clone().optional()
        } else {
            ty.clone()
        }
    }

    fn binary(&mut self, op: BinaryOp, lhs: &Expr, rhs: &Expr, item: Option<&Ty>) -> Ty {
        let l = self.expr(lhs, item);
        let r = self.expr(rhs, item);
        match op {
            BinaryOp::And | BinaryOp::Or => {
                for (t, e) in [(&l, lhs), (&r, rhs)] {
                    if !is_boolish(t) {
                        self.errors.push(type_error(
                            format!(
                                "`{}` needs booleans on both sides, but this is {t}",
                                op.symbol()
                            ),
                            e.range,
                        ));
                    }
                }
            }
            BinaryOp::Eq | BinaryOp::Ne => {
                if !compatible(&l, &r) {
                    self.errors.push(type_error(
                        format!(
                            "`{}` compares {l} with {r}: it can never be equal",
                            op.symbol()
                        ),
                        Range {
                            start: lhs.range.start,
                            end: rhs.range.end,
                        },
                    ));
                } else {
                    self.enum_literal(&l, rhs);
                    self.enum_literal(&r, lhs);
                }
            }
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
                let ordered = matches!(
                    (l.strip_optional(), r.strip_optional()),
                    (Ty::Number | Ty::Any, Ty::Number | Ty::Any)
                        | (Ty::Str(_) | Ty::Any, Ty::Str(_) | Ty::Any)
                );
                let orderable =
                    |t: &Ty| matches!(t.strip_optional(), Ty::Number | Ty::Str(_) | Ty::Any);
                if !ordered {
                    // Blame the side that can never be ordered; when both can (a number
                    // and a string), the pair is wrong, not one side.
                    let (message, range) = match (orderable(&l), orderable(&r)) {
                        (false, true) => (
                            format!(
                                "`{}` orders numbers or strings, but its left side is {l}",
                                op.symbol()
                            ),
                            lhs.range,
                        ),
                        (true, false) => (
                            format!(
                                "`{}` orders numbers or strings, but its right side is {r}",
                                op.symbol()
                            ),
                            rhs.range,
                        ),
                        _ => (
                            format!(
                                "`{}` orders numbers or strings, not {l} and {r}",
                                op.symbol()
                            ),
                            Range {
                                start: lhs.range.start,
                                end: rhs.range.end,
                            },
                        ),
                    };
                    self.errors.push(type_error(message, range));
                }
            }
            BinaryOp::In | BinaryOp::NotIn => match r.strip_optional() {
                Ty::List(item_ty) => {
                    if !compatible(&l, item_ty) {
                        self.errors.push(type_error(
                            format!("`{}` looks for {l} in a list of {item_ty}", op.symbol()),
                            Range {
                                start: lhs.range.start,
                                end: rhs.range.end,
                            },
                        ));
                    } else if let ExprKind::List(items) = &rhs.kind {
                        for it in items {
                            self.enum_literal(&l, it);
                        }
                    }
                }
                Ty::Str(_) if matches!(l.strip_optional(), Ty::Str(_) | Ty::Any) => {}
                // A string on the right is fine; the left side is what is wrong.
                Ty::Str(_) => {
                    self.errors.push(type_error(
                        format!(
                            "`{}` with a string on its right looks for a substring, so its left side must be a string, but it is {l}",
                            op.symbol()
                        ),
                        lhs.range,
                    ));
                }
                Ty::Any => {}
                other => {
                    self.errors.push(type_error(
                        format!(
                            "`{}` needs a list (or a string) on its right, but this is {other}",
                            op.symbol()
                        ),
                        rhs.range,
                    ));
                }
            },
        }
        Ty::Bool
    }

    /// A string literal compared with an enum must be one of its values.
    fn enum_literal(&mut self, ty: &Ty, other: &Expr) {
        if let (Ty::Str(Some(values)), ExprKind::Literal(Value::String(s))) =
            (ty.strip_optional(), &other.kind)
            && !values.iter().any(|v| v == s)
        {
            self.errors.push(CheckError {
                kind: CheckErrorKind::Type,
                message: format!("`\"{s}\"` is never a value here"),
                range: other.range,
                help: Some(format!("the possible values are: {}", values.join(", "))),
            });
        }
    }

    fn call(&mut self, func: Func, args: &[Expr], range: Range, item: Option<&Ty>) -> Ty {
        let list_ty = self.expr(&args[0], item);
        match func {
            Func::Len => {
                if !matches!(
                    list_ty.strip_optional(),
                    Ty::List(_) | Ty::Str(_) | Ty::Any | Ty::Object { .. } | Ty::Null
                ) {
                    self.errors.push(type_error(
                        format!("`len` needs a list, a string or an object, but this is {list_ty}"),
                        args[0].range,
                    ));
                }
                Ty::Number
            }
            Func::NormalizeSpace => {
                if !matches!(list_ty.strip_optional(), Ty::Str(_) | Ty::Any | Ty::Null) {
                    self.errors.push(type_error(
                        format!("`normalize_space` needs a string, but this is {list_ty}"),
                        args[0].range,
                    ));
                }
                Ty::Optional(Box::new(Ty::string()))
            }
            Func::Any | Func::All | Func::Count => {
                let item_ty = match list_ty.strip_optional() {
                    Ty::List(t) => (**t).clone(),
                    Ty::Any => Ty::Any,
                    other => {
                        self.errors.push(type_error(
                            format!("`{}` needs a list, but this is {other}", func.name()),
                            args[0].range,
                        ));
                        Ty::Any
                    }
                };
                let pred = self.expr(&args[1], Some(&item_ty));
                if !is_boolish(&pred) {
                    self.errors.push(type_error(
                        format!(
                            "the predicate of `{}` must be a condition, but this is {pred}",
                            func.name()
                        ),
                        args[1].range,
                    ));
                }
                let _ = range;
                if func == Func::Count {
                    Ty::Number
                } else {
                    Ty::Bool
                }
            }
        }
    }
}

fn literal_ty(v: &Value) -> Ty {
    match v {
        Value::Null => Ty::Null,
        Value::Bool(_) => Ty::Bool,
        Value::Number(_) => Ty::Number,
        Value::String(_) => Ty::string(),
        Value::Array(_) => Ty::list(Ty::Any),
        Value::Object(_) => Ty::Object {
            fields: BTreeMap::new(),
            open: true,
        },
    }
}

/// Whether values of the two types can ever be equal.
fn compatible(a: &Ty, b: &Ty) -> bool {
    let (a, b) = (a.strip_optional(), b.strip_optional());
    match (a, b) {
        (Ty::Any, _) | (_, Ty::Any) | (Ty::Null, _) | (_, Ty::Null) => true,
        (Ty::Bool, Ty::Bool) | (Ty::Number, Ty::Number) | (Ty::Str(_), Ty::Str(_)) => true,
        (Ty::List(x), Ty::List(y)) => compatible(x, y),
        (Ty::Object { .. }, Ty::Object { .. }) => true,
        _ => false,
    }
}
