//! The evaluator. It never panics: every way a value can be the wrong shape at run time
//! is an [`EvalError`], and `null` (a missing field) has defined behaviour everywhere.
//!
//! The same code evaluates concretely (a session's real data) and abstractly (the flow
//! analysis, where payloads and counters are unknown): an unknown root yields
//! [`Val::Unknown`], and `&&`/`||` still decide when one side settles the answer.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::ast::{BinaryOp, Expr, ExprKind, Func};

/// The data a guard reads: one value per root name. Roots listed in `unknown` evaluate to
/// [`Val::Unknown`] (used by the analysis); missing roots evaluate to `null`.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub roots: &'a Map<String, Value>,
    pub unknown: &'a [&'a str],
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val<'a> {
    Known(Cow<'a, Value>),
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError {
    pub message: String,
}

fn err<T>(message: impl Into<String>) -> Result<T, EvalError> {
    Err(EvalError {
        message: message.into(),
    })
}

/// Evaluates `expr` on concrete data.
pub fn eval(expr: &Expr, ctx: Context<'_>) -> Result<Value, EvalError> {
    match eval_val(expr, ctx, None)? {
        Val::Known(v) => Ok(v.into_owned()),
        Val::Unknown => err("the guard reads data that is not available here"),
    }
}

/// Evaluates a condition: `true`, `false`, or `None` when it depends on unknown data.
/// `null` counts as false; any other non-boolean is an error.
pub(crate) fn eval_condition(expr: &Expr, ctx: Context<'_>) -> Result<Option<bool>, EvalError> {
    match eval_val(expr, ctx, None)? {
        Val::Known(v) => truth(&v).map(Some),
        Val::Unknown => Ok(None),
    }
}

fn truth(v: &Value) -> Result<bool, EvalError> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::Null => Ok(false),
        other => err(format!("expected a boolean, found {}", kind(other))),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn known(v: Value) -> Val<'static> {
    Val::Known(Cow::Owned(v))
}

fn eval_val<'a>(
    expr: &Expr,
    ctx: Context<'a>,
    item: Option<&'a Value>,
) -> Result<Val<'a>, EvalError> {
    match &expr.kind {
        ExprKind::Literal(v) => Ok(known(v.clone())),
        ExprKind::Path(segments) => {
            let root = segments[0].as_str();
            if ctx.unknown.contains(&root) {
                return Ok(Val::Unknown);
            }
            let start = ctx.roots.get(root);
            Ok(Val::Known(Cow::Borrowed(walk(start, &segments[1..]))))
        }
        ExprKind::ItemPath(segments) => match item {
            Some(v) => Ok(Val::Known(Cow::Borrowed(walk(Some(v), segments)))),
            None => err("`.field` used outside any, all or count"),
        },
        ExprKind::List(items) => {
            let mut out = Vec::with_capacity(items.len());
            for it in items {
                match eval_val(it, ctx, item)? {
                    Val::Known(v) => out.push(v.into_owned()),
                    Val::Unknown => return Ok(Val::Unknown),
                }
            }
            Ok(known(Value::Array(out)))
        }
        ExprKind::Not(inner) => match eval_val(inner, ctx, item)? {
            Val::Known(v) => Ok(known(Value::Bool(!truth(&v)?))),
            Val::Unknown => Ok(Val::Unknown),
        },
        ExprKind::Binary(op, lhs, rhs) => binary(*op, lhs, rhs, ctx, item),
        ExprKind::Call(func, args) => call(*func, args, ctx, item),
    }
}

static NULL: Value = Value::Null;

fn walk<'a>(start: Option<&'a Value>, segments: &[String]) -> &'a Value {
    let mut current = match start {
        Some(v) => v,
        None => return &NULL,
    };
    for segment in segments {
        current = match current {
            Value::Object(map) => match map.get(segment) {
                Some(v) => v,
                None => return &NULL,
            },
            _ => return &NULL,
        };
    }
    current
}

fn binary<'a>(
    op: BinaryOp,
    lhs: &Expr,
    rhs: &Expr,
    ctx: Context<'a>,
    item: Option<&'a Value>,
) -> Result<Val<'a>, EvalError> {
    if matches!(op, BinaryOp::And | BinaryOp::Or) {
        let short = op == BinaryOp::Or;
        let l = match eval_val(lhs, ctx, item)? {
            Val::Known(v) => Some(truth(&v)?),
            Val::Unknown => None,
        };
        if l == Some(short) {
            return Ok(known(Value::Bool(short)));
        }
        let r = match eval_val(rhs, ctx, item)? {
            Val::Known(v) => Some(truth(&v)?),
            Val::Unknown => None,
        };
        return Ok(match (l, r) {
            (_, Some(b)) if b == short => known(Value::Bool(short)),
            (Some(_), Some(_)) => known(Value::Bool(!short)),
            _ => Val::Unknown,
        });
    }
    let (Val::Known(l), Val::Known(r)) = (eval_val(lhs, ctx, item)?, eval_val(rhs, ctx, item)?)
    else {
        return Ok(Val::Unknown);
    };
    let result = match op {
        BinaryOp::Eq => equal(&l, &r),
        BinaryOp::Ne => !equal(&l, &r),
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => match order(&l, &r)? {
            None => false,
            Some(ord) => match op {
                BinaryOp::Lt => ord.is_lt(),
                BinaryOp::Le => ord.is_le(),
                BinaryOp::Gt => ord.is_gt(),
                _ => ord.is_ge(),
            },
        },
        BinaryOp::In | BinaryOp::NotIn => {
            let found = contains(&r, &l)?;
            if op == BinaryOp::In { found } else { !found }
        }
        BinaryOp::And | BinaryOp::Or => unreachable_and_or(),
    };
    Ok(known(Value::Bool(result)))
}

/// `&&` and `||` return early above; this keeps the match total without a panic.
fn unreachable_and_or() -> bool {
    false
}

/// Deep equality in which `1` equals `1.0`.
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| equal(a, b))
        }
        _ => a == b,
    }
}

/// Orders two numbers or two strings; `null` on either side makes the comparison false.
fn order(a: &Value, b: &Value) -> Result<Option<std::cmp::Ordering>, EvalError> {
    match (a, b) {
        (Value::Null, _) | (_, Value::Null) => Ok(None),
        (Value::Number(x), Value::Number(y)) => Ok(x
            .as_f64()
            .zip(y.as_f64())
            .and_then(|(x, y)| x.partial_cmp(&y))),
        (Value::String(x), Value::String(y)) => Ok(Some(x.cmp(y))),
        _ => err(format!("cannot order {} and {}", kind(a), kind(b))),
    }
}

fn contains(haystack: &Value, needle: &Value) -> Result<bool, EvalError> {
    match haystack {
        Value::Null => Ok(false),
        Value::Array(items) => Ok(items.iter().any(|it| equal(it, needle))),
        Value::String(s) => match needle {
            Value::String(n) => Ok(s.contains(n.as_str())),
            Value::Null => Ok(false),
            other => err(format!("cannot look for {} in a string", kind(other))),
        },
        other => err(format!(
            "`in` needs a list or a string, found {}",
            kind(other)
        )),
    }
}

fn call<'a>(
    func: Func,
    args: &[Expr],
    ctx: Context<'a>,
    item: Option<&'a Value>,
) -> Result<Val<'a>, EvalError> {
    let Some(first) = args.first() else {
        return err("missing argument");
    };
    let subject = match eval_val(first, ctx, item)? {
        Val::Known(v) => v,
        Val::Unknown => return Ok(Val::Unknown),
    };
    if func == Func::Len {
        let n = match subject.as_ref() {
            Value::Null => 0,
            Value::Array(a) => a.len(),
            Value::String(s) => s.chars().count(),
            Value::Object(o) => o.len(),
            other => {
                return err(format!(
                    "`len` needs a list, a string or an object, found {}",
                    kind(other)
                ));
            }
        };
        return Ok(known(Value::from(n)));
    }
    if func == Func::NormalizeSpace {
        return match subject.as_ref() {
            Value::Null => Ok(known(Value::Null)),
            Value::String(s) => Ok(known(Value::String(
                s.split_whitespace().collect::<Vec<_>>().join(" "),
            ))),
            other => err(format!(
                "`normalize_space` needs a string, found {}",
                kind(other)
            )),
        };
    }
    let Some(predicate) = args.get(1) else {
        return err("missing predicate");
    };
    let items: &[Value] = match subject.as_ref() {
        Value::Null => &[],
        Value::Array(a) => a,
        other => {
            return err(format!(
                "`{}` needs a list, found {}",
                func.name(),
                kind(other)
            ));
        }
    };
    let mut matched = 0usize;
    let mut unknown = false;
    for it in items {
        match eval_val(predicate, ctx, Some(it))? {
            Val::Known(v) => {
                if truth(&v)? {
                    matched += 1;
                }
            }
            Val::Unknown => unknown = true,
        }
    }
    if unknown {
        return Ok(Val::Unknown);
    }
    Ok(known(match func {
        Func::Any => Value::Bool(matched > 0),
        Func::All => Value::Bool(matched == items.len()),
        _ => Value::from(matched),
    }))
}
