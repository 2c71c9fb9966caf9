//! The pest parser, kept private: `Pairs` become [`Expr`]s here and pest's types never
//! leave this module, so the parser can be replaced without touching its users.

use pest::Parser as _;
use pest::iterators::{Pair, Pairs};
use pest::pratt_parser::{Assoc, Op, PrattParser};
use serde_json::Value;

use super::ast::{BinaryOp, Expr, ExprKind, Func, Range, SyntaxError};

#[derive(pest_derive::Parser)]
#[grammar = "guard/guard.pest"]
struct GuardParser;

/// Guards longer than this are refused rather than parsed, to keep worst cases cheap.
const MAX_GUARD_LEN: usize = 4096;

pub(super) fn parse(text: &str) -> Result<Expr, SyntaxError> {
    if text.len() > MAX_GUARD_LEN {
        return Err(SyntaxError {
            message: format!("guard is longer than {MAX_GUARD_LEN} bytes"),
            range: Range { start: 0, end: 1 },
        });
    }
    let offsets = CharOffsets::new(text);
    let mut pairs =
        GuardParser::parse(Rule::guard, text).map_err(|e| syntax_error(&e, &offsets))?;
    let guard = pairs.next().ok_or_else(|| SyntaxError {
        message: "empty guard".into(),
        range: Range { start: 0, end: 1 },
    })?;
    let expr = guard.into_inner().next().ok_or_else(|| SyntaxError {
        message: "empty guard".into(),
        range: Range { start: 0, end: 1 },
    })?;
    build_expr(expr.into_inner(), &offsets)
}

/// Byte offsets from pest to character offsets for columns.
struct CharOffsets<'a> {
    text: &'a str,
}

impl<'a> CharOffsets<'a> {
    fn new(text: &'a str) -> Self {
        CharOffsets { text }
    }

    fn chars(&self, byte: usize) -> usize {
        self.text.get(..byte).map_or(byte, |s| s.chars().count())
    }

    fn range(&self, pair: &Pair<'_, Rule>) -> Range {
        let span = pair.as_span();
        Range {
            start: self.chars(span.start()),
            end: self.chars(span.end()),
        }
    }
}

fn syntax_error(e: &pest::error::Error<Rule>, offsets: &CharOffsets<'_>) -> SyntaxError {
    use pest::error::{ErrorVariant, InputLocation};
    let (start, end) = match e.location {
        InputLocation::Pos(p) => (p, p + 1),
        InputLocation::Span((s, e)) => (s, e.max(s + 1)),
    };
    let message = match &e.variant {
        ErrorVariant::ParsingError { positives, .. } => {
            let mut expected: Vec<String> = positives
                .iter()
                .filter_map(|r| describe(*r))
                .map(str::to_string)
                .collect();
            expected.sort();
            expected.dedup();
            let found = offsets
                .text
                .get(start..)
                .and_then(|s| s.chars().next())
                .map_or("end of guard".to_string(), |c| format!("`{c}`"));
            if expected.is_empty() {
                format!("unexpected {found}")
            } else {
                format!("expected {}, found {found}", expected.join(" or "))
            }
        }
        ErrorVariant::CustomError { message } => message.clone(),
    };
    // Pest reports byte offsets; a point error covers one character, whatever its width.
    let start_char = offsets.chars(start);
    let end_char = match e.location {
        InputLocation::Pos(_) => start_char + 1,
        InputLocation::Span(_) => offsets.chars(end).max(start_char + 1),
    };
    SyntaxError {
        message,
        range: Range {
            start: start_char,
            end: end_char,
        },
    }
}

fn describe(rule: Rule) -> Option<&'static str> {
    Some(match rule {
        Rule::expr
        | Rule::not
        | Rule::null
        | Rule::boolean
        | Rule::number
        | Rule::string
        | Rule::call
        | Rule::list
        | Rule::path
        | Rule::item_path => "an operand",
        Rule::or
        | Rule::and
        | Rule::eq
        | Rule::ne
        | Rule::le
        | Rule::ge
        | Rule::lt
        | Rule::gt
        | Rule::in_op
        | Rule::not_in => "an operator",
        Rule::EOI => "end of guard",
        _ => return None,
    })
}

fn pratt() -> PrattParser<Rule> {
    PrattParser::new()
        .op(Op::infix(Rule::or, Assoc::Left))
        .op(Op::infix(Rule::and, Assoc::Left))
        .op(Op::infix(Rule::eq, Assoc::Left)
            | Op::infix(Rule::ne, Assoc::Left)
            | Op::infix(Rule::lt, Assoc::Left)
            | Op::infix(Rule::le, Assoc::Left)
            | Op::infix(Rule::gt, Assoc::Left)
            | Op::infix(Rule::ge, Assoc::Left)
            | Op::infix(Rule::in_op, Assoc::Left)
            | Op::infix(Rule::not_in, Assoc::Left))
        .op(Op::prefix(Rule::not))
}

fn build_expr(pairs: Pairs<'_, Rule>, offsets: &CharOffsets<'_>) -> Result<Expr, SyntaxError> {
    let pratt = pratt();
    pratt
        .map_primary(|p| build_primary(p, offsets))
        .map_prefix(|_op, rhs| {
            let rhs = rhs?;
            let range = rhs.range;
            Ok(Expr {
                kind: ExprKind::Not(Box::new(rhs)),
                range: Range {
                    start: range.start.saturating_sub(1),
                    end: range.end,
                },
            })
        })
        .map_infix(|lhs, op, rhs| {
            let (lhs, rhs) = (lhs?, rhs?);
            let op = match op.as_rule() {
                Rule::or => BinaryOp::Or,
                Rule::and => BinaryOp::And,
                Rule::eq => BinaryOp::Eq,
                Rule::ne => BinaryOp::Ne,
                Rule::lt => BinaryOp::Lt,
                Rule::le => BinaryOp::Le,
                Rule::gt => BinaryOp::Gt,
                Rule::ge => BinaryOp::Ge,
                Rule::in_op => BinaryOp::In,
                _ => BinaryOp::NotIn,
            };
            let range = Range {
                start: lhs.range.start,
                end: rhs.range.end,
            };
            Ok(Expr {
                kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                range,
            })
        })
        .parse(pairs)
}

fn build_primary(pair: Pair<'_, Rule>, offsets: &CharOffsets<'_>) -> Result<Expr, SyntaxError> {
    let range = offsets.range(&pair);
    let kind = match pair.as_rule() {
        Rule::expr => return build_expr(pair.into_inner(), offsets),
        Rule::null => ExprKind::Literal(Value::Null),
        Rule::boolean => ExprKind::Literal(Value::Bool(pair.as_str() == "true")),
        Rule::number => {
            let text = pair.as_str();
            let value = if let Ok(i) = text.parse::<i64>() {
                Value::from(i)
            } else if !text.contains('.') {
                // Would silently become an inexact float.
                return Err(SyntaxError {
                    message: format!(
                        "the integer `{text}` is out of range: guard integers are from {} to {}",
                        i64::MIN,
                        i64::MAX
                    ),
                    range,
                });
            } else {
                text.parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .map(Value::Number)
                    .ok_or_else(|| SyntaxError {
                        message: format!("`{text}` is not a number"),
                        range,
                    })?
            };
            ExprKind::Literal(value)
        }
        Rule::string => {
            let inner = pair.into_inner().next().map_or("", |p| p.as_str());
            ExprKind::Literal(Value::String(unescape(inner)))
        }
        Rule::path => {
            let segments: Vec<String> = pair.as_str().split('.').map(str::to_string).collect();
            if segments[0] == "it" {
                ExprKind::ItemPath(segments[1..].to_vec())
            } else {
                ExprKind::Path(segments)
            }
        }
        Rule::item_path => {
            ExprKind::ItemPath(pair.as_str()[1..].split('.').map(str::to_string).collect())
        }
        Rule::list => {
            let items = pair
                .into_inner()
                .map(|p| build_expr(p.into_inner(), offsets))
                .collect::<Result<Vec<_>, _>>()?;
            ExprKind::List(items)
        }
        Rule::call => {
            let mut inner = pair.into_inner();
            let name_pair = inner.next().ok_or_else(|| SyntaxError {
                message: "missing function name".into(),
                range,
            })?;
            let name = name_pair.as_str();
            let func = Func::from_name(name).ok_or_else(|| SyntaxError {
                message: format!(
                    "unknown function `{name}`: the guard language has len, any, all, count and normalize_space"
                ),
                range: offsets.range(&name_pair),
            })?;
            let args = inner
                .map(|p| build_expr(p.into_inner(), offsets))
                .collect::<Result<Vec<_>, _>>()?;
            let expected = func.arity();
            if args.len() != expected {
                return Err(SyntaxError {
                    message: format!("`{name}` takes {expected} argument(s), got {}", args.len()),
                    range,
                });
            }
            ExprKind::Call(func, args)
        }
        other => {
            return Err(SyntaxError {
                message: format!("unexpected {other:?}"),
                range,
            });
        }
    };
    Ok(Expr { kind, range })
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    out
}
