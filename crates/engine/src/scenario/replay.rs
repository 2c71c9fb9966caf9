//! A recorded session as a scenario: the MCP server logs every driver turn (its input, the
//! facts and action results the host gave, where it ended) to
//! `.code-intel/logs/decisions.jsonl`; `code-intel replay` turns one session's turns into a
//! scenario file whose steps expect what happened then, so running it against today's
//! contract shows where the flow would now decide differently.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// Why a log could not be replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayError {
    /// A line is not JSON (1-based line number).
    BadLine(usize, String),
    /// No recorded start of this session (or of any session, when none was named).
    NoSession(Option<String>),
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplayError::BadLine(n, e) => write!(f, "line {n} is not a JSON object: {e}"),
            ReplayError::NoSession(Some(id)) => {
                write!(f, "the log has no recorded start of session `{id}`")
            }
            ReplayError::NoSession(None) => write!(
                f,
                "the log has no recorded session start (sessions are recorded from this version on)"
            ),
        }
    }
}

impl std::error::Error for ReplayError {}

/// The scenario file (YAML) replaying `session` (default: the last session that started)
/// of a decision log, against `contract` (`builtin` or a path as the file should say).
pub fn from_log(log: &str, session: Option<&str>, contract: &str) -> Result<String, ReplayError> {
    let mut turns: Vec<Map<String, Value>> = Vec::new();
    for (i, line) in log.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let entry: Map<String, Value> =
            serde_json::from_str(line).map_err(|e| ReplayError::BadLine(i + 1, e.to_string()))?;
        if entry.get("event").and_then(Value::as_str) == Some("turn") {
            turns.push(entry);
        }
    }
    let is_start = |t: &Map<String, Value>| t.get("input").and_then(|i| i.get("start")).is_some();
    let id = match session {
        Some(id) => id.to_string(),
        None => turns
            .iter()
            .rev()
            .find(|t| is_start(t))
            .and_then(|t| t.get("session").and_then(Value::as_str))
            .map(str::to_string)
            .ok_or(ReplayError::NoSession(None))?,
    };
    let mine: Vec<&Map<String, Value>> = turns
        .iter()
        .filter(|t| t.get("session").and_then(Value::as_str) == Some(id.as_str()))
        .collect();
    let start_at = mine
        .iter()
        .rposition(|t| is_start(t))
        .ok_or_else(|| ReplayError::NoSession(Some(id.clone())))?;
    let mine = &mine[start_at..];
    let start = &mine[0]["input"]["start"];

    let mut out = String::new();
    out.push_str("# yaml-language-server: $schema=../schemas/scenario.schema.json\n");
    out.push_str(&format!(
        "# Replayed from the decision log: session {id}. Each step expects what the server\n\
         # decided then; `code-intel test` shows where today's contract decides otherwise.\n"
    ));
    out.push_str(&format!("contract: {}\n", flow(&json!(contract))));
    out.push_str("scenarios:\n");
    out.push_str(&format!(
        "  - name: {}\n",
        flow(&json!(format!("replay of session {id}")))
    ));
    for key in ["flags", "intent", "locale"] {
        if let Some(v) = start.get(key).filter(|v| !v.is_null()) {
            out.push_str(&format!("    {key}: {}\n", flow(v)));
        }
    }
    if let Some(params) = start.get("params").filter(|p| !p.is_null()) {
        out.push_str(&format!("    params: {}\n", flow(params)));
    }
    out.push_str("    steps:\n");
    for turn in mine {
        let input = &turn["input"];
        let mut first = true;
        let mut field = |out: &mut String, key: &str, value: &Value| {
            let lead = if first { "      - " } else { "        " };
            first = false;
            out.push_str(&format!("{lead}{key}: {}\n", flow(value)));
        };
        if let Some(payload) = input.get("submit") {
            field(&mut out, "submit", payload);
            if let Some(tools) = input
                .get("tools")
                .filter(|t| t.as_array().is_some_and(|a| !a.is_empty()))
            {
                field(&mut out, "tools", tools);
            }
        }
        if let Some(facts) = turn
            .get("facts")
            .filter(|f| f.as_object().is_some_and(|o| !o.is_empty()))
        {
            field(&mut out, "facts", facts);
        }
        let results = results(turn.get("actions"));
        if !results.is_empty() {
            field(&mut out, "results", &Value::Object(results));
        }
        field(&mut out, "expect", &Value::Object(expect(turn)));
    }
    Ok(out)
}

/// The action results of a turn as scenario `results`: one value when every call of an
/// action gave the same answer, else a `sequence`.
fn results(actions: Option<&Value>) -> Map<String, Value> {
    let mut by_action: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for a in actions.and_then(Value::as_array).into_iter().flatten() {
        let Some(name) = a.get("action").and_then(Value::as_str) else {
            continue;
        };
        let answer = match a.get("fail") {
            Some(outcome) => json!({"fail": outcome}),
            None => a.get("result").cloned().unwrap_or(Value::Null),
        };
        by_action.entry(name.to_string()).or_default().push(answer);
    }
    by_action
        .into_iter()
        // A null success is what an unscripted action gives anyway.
        .filter(|(_, answers)| answers.iter().any(|a| !a.is_null()))
        .map(|(name, answers)| {
            let value = if answers.windows(2).all(|w| w[0] == w[1]) {
                answers[0].clone()
            } else {
                json!({"sequence": answers})
            };
            (name, value)
        })
        .collect()
}

/// What the turn ended in, as scenario expectations.
fn expect(turn: &Map<String, Value>) -> Map<String, Value> {
    let mut e = Map::new();
    if let Some(state) = turn.get("state") {
        e.insert("state".into(), state.clone());
    }
    let stop = turn.get("stop").cloned().unwrap_or(Value::Null);
    if let Some(key) = stop.get("rejected") {
        e.insert("rejected".into(), key.clone());
    } else if let Some(outcome) = stop.get("action_failed") {
        e.insert("action_failed".into(), outcome.clone());
        if let Some(m) = stop.get("message") {
            e.insert("message".into(), m.clone());
        }
    } else {
        if let Some(m) = turn.get("message").filter(|m| !m.is_null()) {
            e.insert("message".into(), m.clone());
        }
        if let Some(o) = stop.get("finished").filter(|o| !o.is_null()) {
            e.insert("finished".into(), o.clone());
        }
    }
    e
}

/// A JSON value in YAML flow style (JSON is YAML): one line, strings double-quoted.
fn flow(v: &Value) -> String {
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_logged_session_becomes_a_scenario_of_its_turns() {
        let log = [
            json!({"event": "turn", "session": "s1", "input": {"start": {"flags": "--quick", "intent": null, "locale": null, "params": {"request": "fix it"}}}, "facts": {"stale_branches_exist": false}, "actions": [], "state": "QUERY_FRAME", "message": null, "stop": {"waiting": true}}),
            json!({"event": "step", "session": "s1"}),
            json!({"event": "turn", "session": "s1", "input": {"submit": {"summary": "x"}, "tools": ["get_symbols"]}, "facts": {"stale_branches_exist": false}, "actions": [{"action": "git.commit", "fail": "conflict"}], "state": "QUERY_FRAME", "message": null, "stop": {"action_failed": "conflict", "action": "git.commit", "message": "failures.commit"}}),
            json!({"event": "turn", "session": "s1", "input": {"submit": {"summary": "y"}, "tools": []}, "facts": null, "actions": [{"action": "meta.next", "result": {"a": 1}}, {"action": "meta.next", "result": {"a": 2}}], "state": "DONE", "message": "success.done", "stop": {"finished": "success"}}),
        ]
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n");
        let text = from_log(&log, None, "builtin").unwrap();
        assert!(text.contains("  - name: \"replay of session s1\"\n    flags: \"--quick\"\n    params: {\"request\":\"fix it\"}\n"), "{text}");
        assert!(text.contains("      - facts: {\"stale_branches_exist\":false}\n        expect: {\"state\":\"QUERY_FRAME\"}\n"), "{text}");
        assert!(
            text.contains(
                "      - submit: {\"summary\":\"x\"}\n        tools: [\"get_symbols\"]\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("results: {\"git.commit\":{\"fail\":\"conflict\"}}"),
            "{text}"
        );
        assert!(text.contains("expect: {\"state\":\"QUERY_FRAME\",\"action_failed\":\"conflict\",\"message\":\"failures.commit\"}"), "{text}");
        assert!(
            text.contains("results: {\"meta.next\":{\"sequence\":[{\"a\":1},{\"a\":2}]}}"),
            "{text}"
        );
        assert!(
            text.contains(
                "expect: {\"state\":\"DONE\",\"message\":\"success.done\",\"finished\":\"success\"}"
            ),
            "{text}"
        );
        assert_eq!(
            from_log(&log, Some("nope"), "builtin"),
            Err(ReplayError::NoSession(Some("nope".into())))
        );
        assert!(matches!(
            from_log("{", None, "builtin"),
            Err(ReplayError::BadLine(1, _))
        ));
    }
}
