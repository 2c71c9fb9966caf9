//! The guard syntax tree. Spans are character offsets into the guard's own text, so
//! callers can map them onto the YAML scalar the guard was written in.

use serde_json::Value;

/// A character range `[start, end)` in the guard text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub range: Range,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    NotIn,
}

impl BinaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Or => "||",
            BinaryOp::And => "&&",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::In => "in",
            BinaryOp::NotIn => "not in",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// `len(list_or_string)`: the number of items or characters; `len(null)` is 0.
    Len,
    /// `any(list, predicate)`: some item satisfies the predicate.
    Any,
    /// `all(list, predicate)`: every item satisfies the predicate (true for an empty list).
    All,
    /// `count(list, predicate)`: how many items satisfy the predicate.
    Count,
    /// `normalize_space(string)`: the string with leading and trailing whitespace removed
    /// and every inner run of whitespace replaced by one space; `null` stays `null`.
    NormalizeSpace,
}

impl Func {
    /// How many arguments the function takes.
    pub fn arity(self) -> usize {
        match self {
            Func::Len | Func::NormalizeSpace => 1,
            Func::Any | Func::All | Func::Count => 2,
        }
    }

    pub fn from_name(name: &str) -> Option<Func> {
        match name {
            "len" => Some(Func::Len),
            "any" => Some(Func::Any),
            "all" => Some(Func::All),
            "count" => Some(Func::Count),
            "normalize_space" => Some(Func::NormalizeSpace),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Func::Len => "len",
            Func::Any => "any",
            Func::All => "all",
            Func::Count => "count",
            Func::NormalizeSpace => "normalize_space",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    Literal(Value),
    /// A dotted path from a root (`payload.passed`).
    Path(Vec<String>),
    /// A path relative to the current item of `any`/`all`/`count` (`.status`); empty for `it`.
    ItemPath(Vec<String>),
    List(Vec<Expr>),
    Not(Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    Call(Func, Vec<Expr>),
}

/// A guard that does not parse, with the character range of the problem in its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub message: String,
    pub range: Range,
}
