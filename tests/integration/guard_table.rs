//! Table-driven tests of the guard language: evaluation, null handling, syntax errors with
//! their positions, and the static checker.

use code_intel::guard::Ty;
use code_intel::guard::parse;
use code_intel::guard::{CheckErrorKind, TypeEnv, check_condition};
use code_intel::guard::{Context, eval};
use serde_json::{Value, json};

fn data() -> Value {
    json!({
        "payload": {"passed": true, "n": 3, "name": "abc", "spaced": "  a\n\t b  c ", "items": ["a", "b"], "none": null,
                     "hyps": [{"result": true}, {"result": false}]},
        "flags": {"fast": false, "gate": "full"},
        "intent": "IMPLEMENT",
        "tasks": [{"id": "t1", "status": "completed", "failure_count": 3}, {"id": "t2", "status": "pending", "failure_count": 0}]
    })
}

fn give(guard: &str, expected: Value) {
    let expr = parse(guard).unwrap_or_else(|e| panic!("{guard}: {e:?}"));
    let roots = data();
    let ctx = Context {
        roots: roots.as_object().unwrap(),
        unknown: &[],
    };
    assert_eq!(
        eval(&expr, ctx).unwrap_or_else(|e| panic!("{guard}: {e:?}")),
        expected,
        "{guard}"
    );
}

#[test]
fn evaluation() {
    let table: &[(&str, Value)] = &[
        ("true", json!(true)),
        ("payload.passed", json!(true)),
        ("!payload.passed", json!(false)),
        ("payload.n >= 3 && payload.n < 4", json!(true)),
        ("payload.n == 3.0", json!(true)),
        ("payload.name == 'abc'", json!(true)),
        ("payload.name != \"abd\"", json!(true)),
        ("\"b\" in payload.items", json!(true)),
        ("\"z\" not in payload.items", json!(true)),
        ("intent in [\"IMPLEMENT\", \"MODIFY\"]", json!(true)),
        ("flags.fast || flags.gate == \"full\"", json!(true)),
        ("true || false && false", json!(true)),
        ("(true || false) && false", json!(false)),
        ("!flags.fast && !(payload.n > 5)", json!(true)),
        ("len(payload.items)", json!(2)),
        ("len(payload.name)", json!(3)),
        ("len(payload.none)", json!(0)),
        ("any(tasks, .failure_count >= 3)", json!(true)),
        ("all(tasks, .status == \"completed\")", json!(false)),
        ("count(tasks, .status == \"pending\")", json!(1)),
        ("all(payload.hyps, .result == true)", json!(false)),
        ("any(payload.items, it == \"b\")", json!(true)),
        ("all(payload.missing, .x == 1)", json!(true)),
        ("\"bc\" in payload.name", json!(true)),
        ("normalize_space(payload.spaced)", json!("a b c")),
        ("normalize_space(payload.none)", json!(null)),
        (
            "normalize_space(\"x  y\") in normalize_space(payload.spaced)",
            json!(false),
        ),
        ("\"b c\" in normalize_space(payload.spaced)", json!(true)),
        ("-1 < 0", json!(true)),
        ("9223372036854775807 > -9223372036854775808", json!(true)),
    ];
    for (guard, expected) in table {
        give(guard, expected.clone());
    }
}

#[test]
fn null_handling() {
    let table: &[(&str, Value)] = &[
        ("payload.missing == null", json!(true)),
        ("payload.none == null", json!(true)),
        ("payload.missing.deeper == null", json!(true)),
        ("payload.missing != 1", json!(true)),
        // Ordering with null is false both ways.
        ("payload.missing < 1", json!(false)),
        ("payload.missing >= 1", json!(false)),
        // In boolean positions null counts as false.
        ("!payload.missing", json!(true)),
        ("payload.missing || true", json!(true)),
        ("\"a\" in payload.missing", json!(false)),
    ];
    for (guard, expected) in table {
        give(guard, expected.clone());
    }
}

#[test]
fn runtime_type_errors_are_errors_not_panics() {
    let roots = data();
    let ctx = Context {
        roots: roots.as_object().unwrap(),
        unknown: &[],
    };
    for guard in [
        "payload.name && true",
        "payload.n < \"a\"",
        "1 in 2",
        "len(1)",
        "any(payload.n, .x)",
        "!payload.items",
    ] {
        let expr = parse(guard).unwrap();
        assert!(eval(&expr, ctx).is_err(), "{guard} should fail at run time");
    }
}

#[test]
fn syntax_errors_point_at_the_problem() {
    let table: &[(&str, usize)] = &[
        ("payload.passed &&", 17),
        ("payload.n >", 11),
        ("(payload.passed", 15),
        ("payload..x", 7),
        ("a == = b", 5),
        ("'unterminated", 0),
        ("len(a, b)", 0),
        ("max(a)", 0),
        ("a # b", 2),
        // Integers beyond i64 are refused, not rounded to a float.
        ("payload.n == 9223372036854775808", 13),
        ("-9223372036854775809 < payload.n", 0),
        ("payload.n < 99999999999999999999999", 12),
    ];
    for (guard, column) in table {
        let err = parse(guard).expect_err(guard);
        assert_eq!(err.range.start, *column, "{guard}: {}", err.message);
        assert!(!err.message.is_empty());
    }
    assert!(
        parse("payload.passed &&")
            .unwrap_err()
            .message
            .contains("expected an operand")
    );
    let err = parse("payload.n == 9223372036854775808").unwrap_err();
    assert_eq!((err.range.start, err.range.end), (13, 32));
    assert!(err.message.contains("out of range"), "{}", err.message);
    // Decimals are floats, whatever their size.
    assert!(parse("payload.n < 99999999999999999999999.5").is_ok());
}

fn env() -> TypeEnv {
    TypeEnv::default()
        .with(
            "payload",
            Ty::object([
                ("passed".to_string(), Ty::Bool),
                ("n".to_string(), Ty::Number),
                ("name".to_string(), Ty::string().optional()),
            ]),
        )
        .with(
            "flags",
            Ty::object([
                ("gate".to_string(), Ty::enumeration(&["auto", "full"])),
                ("fast".to_string(), Ty::Bool),
            ]),
        )
        .with(
            "tasks",
            Ty::list(Ty::object([(
                "status".to_string(),
                Ty::enumeration(&["pending", "completed"]),
            )])),
        )
}

#[test]
fn static_checker() {
    let ok = [
        "payload.passed",
        "payload.name == null || len(payload.name) > 2",
        "flags.gate == \"full\" && !flags.fast",
        "any(tasks, .status == \"pending\")",
        "payload.n in [1, 2, 3]",
    ];
    for guard in ok {
        check_condition(&parse(guard).unwrap(), &env())
            .unwrap_or_else(|e| panic!("{guard}: {e:?}"));
    }
    let bad: &[(&str, CheckErrorKind, &str)] = &[
        (
            "payload.pased",
            CheckErrorKind::UnknownPath,
            "has no field `pased`",
        ),
        (
            "counters.x > 1",
            CheckErrorKind::UnknownPath,
            "unknown name `counters`",
        ),
        (
            "flags.gate == \"ful\"",
            CheckErrorKind::Type,
            "never a value",
        ),
        (
            "payload.n == \"3\"",
            CheckErrorKind::Type,
            "can never be equal",
        ),
        (
            "payload.n && payload.passed",
            CheckErrorKind::Type,
            "needs booleans",
        ),
        ("payload.n", CheckErrorKind::Type, "must be a boolean"),
        (
            "payload.passed < 3",
            CheckErrorKind::Type,
            "orders numbers or strings",
        ),
        ("any(payload.n, .x)", CheckErrorKind::Type, "needs a list"),
        (
            "any(tasks, .stat == 1)",
            CheckErrorKind::UnknownPath,
            "has no field `stat`",
        ),
        (
            ".status == \"x\"",
            CheckErrorKind::UnknownPath,
            "only exist inside",
        ),
        ("\"x\" in payload.n", CheckErrorKind::Type, "needs a list"),
    ];
    for (guard, kind, needle) in bad {
        let errors = check_condition(&parse(guard).unwrap(), &env()).expect_err(guard);
        assert_eq!(errors[0].kind, *kind, "{guard}: {errors:?}");
        assert!(
            errors[0].message.contains(needle),
            "{guard}: {}",
            errors[0].message
        );
    }
}

/// A type error points at the operand whose type is wrong, and its message names that
/// side; when neither side alone is wrong (a number ordered against a string), it points
/// at both.
#[test]
fn type_errors_blame_the_wrong_operand() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "payload.passed in \"abc\"",
            "payload.passed",
            "its left side must be a string, but it is bool",
        ),
        (
            "payload.passed not in \"abc\"",
            "payload.passed",
            "its left side must be a string",
        ),
        ("\"x\" in payload.n", "payload.n", "needs a list"),
        (
            "payload.passed < 3",
            "payload.passed",
            "its left side is bool",
        ),
        (
            "3 >= payload.passed",
            "payload.passed",
            "its right side is bool",
        ),
        (
            "payload.n < \"3\"",
            "payload.n < \"3\"",
            "not number and string",
        ),
    ];
    for (guard, blamed, needle) in cases {
        let errors = check_condition(&parse(guard).unwrap(), &env()).expect_err(guard);
        assert_eq!(errors.len(), 1, "{guard}: {errors:?}");
        let range = errors[0].range;
        let shown: String = guard
            .chars()
            .skip(range.start)
            .take(range.end - range.start)
            .collect();
        assert_eq!(&shown, blamed, "{guard}: {errors:?}");
        assert!(
            errors[0].message.contains(needle),
            "{guard}: {}",
            errors[0].message
        );
    }
}
