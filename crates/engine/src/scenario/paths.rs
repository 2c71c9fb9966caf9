//! `code-intel paths`: a shortest sequence of payloads to each state, found by running the
//! contract for real. Payloads are generated from each state's schema (the smallest valid
//! value, then variants: each boolean flipped, each enum value, each string a guard
//! compares a field with, each list empty), tools are the ones the state requires, and a
//! breadth-first search over the sessions the engine accepts records the first path that
//! reaches each state. The result is a scenario file to start tests from.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::{Map, Value, json};

use super::run::ScriptedHost;
use crate::contract::Contract;
use crate::contract::model::{State, StateKind};
use crate::machine::Instance;
use crate::session::{Driver, NoCheckpoints, StartFailure, Stop};

/// How many sessions the search may try before it stops.
const MAX_TRIES: usize = 5_000;

/// One submission of a path.
#[derive(Debug, Clone, PartialEq)]
pub struct PathStep {
    pub payload: Value,
    pub tools: Vec<String>,
    /// The state the session was in after it.
    pub state: String,
}

/// A path to a state and the host facts it was found with.
#[derive(Debug, Clone)]
pub struct Found {
    pub facts: Map<String, Value>,
    pub steps: Vec<PathStep>,
}

/// What the search found under one flag set.
#[derive(Debug, Clone)]
pub struct Paths {
    pub flags: String,
    pub intent: String,
    pub params: Map<String, Value>,
    /// The first path to each state reached (the start alone reaches some), and the facts
    /// it needs.
    pub reached: BTreeMap<String, Found>,
    /// States no generated payload sequence reached.
    pub unreached: Vec<String>,
}

/// Searches the shortest payload sequence to each state under `flag_text` and `intent`,
/// with `facts` (the host's; default: each declared fact's smallest value).
pub fn shortest(
    contract: &Contract,
    flag_text: &str,
    intent: Option<&str>,
    facts: Option<Map<String, Value>>,
) -> Result<Paths, StartFailure> {
    let facts = facts.unwrap_or_else(|| {
        contract
            .registry
            .facts
            .iter()
            .map(|(name, schema)| (name.to_string(), example(schema, &Map::new(), 0)))
            .collect()
    });
    // Generated strings are runs of "x": a string param of 64 of them (the user's request,
    // say) lets checks that quote it find any of them.
    let params: Map<String, Value> = contract
        .params
        .iter()
        .map(|(k, (_, v))| {
            let value = if v.is_string() {
                json!("x".repeat(64))
            } else {
                v.clone()
            };
            (k.clone(), value)
        })
        .collect();
    let mut reached: BTreeMap<String, Found> = BTreeMap::new();
    // The facts as given, then each boolean fact the other way: some states only run
    // when the host observes something (stale branches, a prompt file).
    let mut fact_sets = vec![facts.clone()];
    for (name, value) in &facts {
        if let Value::Bool(b) = value {
            let mut flipped = facts.clone();
            flipped.insert(name.clone(), Value::Bool(!b));
            fact_sets.push(flipped);
        }
    }
    for facts in fact_sets {
        for (state, steps) in search(contract, flag_text, intent, &params, &facts)? {
            reached.entry(state).or_insert_with(|| Found {
                facts: facts.clone(),
                steps,
            });
        }
    }
    let unreached = contract
        .states
        .iter()
        .map(|s| s.id.clone())
        .filter(|s| !reached.contains_key(s))
        .collect();
    Ok(Paths {
        flags: flag_text.to_string(),
        intent: intent.unwrap_or(&contract.default_intent).to_string(),
        params,
        reached,
        unreached,
    })
}

/// The first path to each state under one set of facts, breadth first.
fn search(
    contract: &Contract,
    flag_text: &str,
    intent: Option<&str>,
    params: &Map<String, Value>,
    facts: &Map<String, Value>,
) -> Result<BTreeMap<String, Vec<PathStep>>, StartFailure> {
    let driver = Driver::new(contract);
    let host = || ScriptedHost::new(facts.clone(), Map::new());
    let turn = driver.start(
        &mut host(),
        &mut NoCheckpoints,
        flag_text,
        intent,
        None,
        params,
    )?;
    let mut reached: BTreeMap<String, Vec<PathStep>> = BTreeMap::new();
    reached.insert(contract.state(contract.initial).id.clone(), Vec::new());
    for s in &turn.steps {
        reached.entry(s.to.clone()).or_default();
    }
    let mut queue: VecDeque<(Instance, Vec<PathStep>)> = VecDeque::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    if matches!(turn.stop, Stop::Waiting) {
        seen.insert(signature(&turn.instance));
        queue.push_back((turn.instance.clone(), Vec::new()));
    }
    let mut tries = 0;
    while let Some((instance, path)) = queue.pop_front() {
        let Some(id) = contract.state_id(&instance.state) else {
            continue;
        };
        let state = contract.state(id);
        if state.kind != StateKind::External {
            continue;
        }
        let tools = tools_for(state);
        for payload in candidates(state) {
            if tries >= MAX_TRIES {
                break;
            }
            tries += 1;
            let turn = driver.submit(
                &mut host(),
                &mut NoCheckpoints,
                instance.clone(),
                payload.clone(),
                tools.clone(),
            );
            if turn.steps.is_empty() {
                continue;
            }
            let mut next_path = path.clone();
            next_path.push(PathStep {
                payload,
                tools: tools.clone(),
                state: turn.instance.state.clone(),
            });
            for s in &turn.steps {
                reached
                    .entry(s.to.clone())
                    .or_insert_with(|| next_path.clone());
            }
            if matches!(turn.stop, Stop::Waiting) && seen.insert(signature(&turn.instance)) {
                queue.push_back((turn.instance, next_path));
            }
        }
    }
    Ok(reached)
}

/// What makes two sessions different for the search: the state, counters, tasks and vars.
fn signature(i: &Instance) -> String {
    json!([i.state, i.counters, i.tasks.len(), i.vars]).to_string()
}

/// The tools a submission reports: the required ones, then allowed ones up to the
/// minimum number of distinct tools.
fn tools_for(state: &State) -> Vec<String> {
    let mut tools = state.required_tools.clone();
    for t in &state.allowed_tools {
        if tools.len() >= state.min_distinct_tools as usize {
            break;
        }
        if !tools.contains(t) {
            tools.push(t.clone());
        }
    }
    tools
}

/// Payloads to try in `state`: the smallest valid one, then one change at a time.
fn candidates(state: &State) -> Vec<Value> {
    let Some(schema) = &state.payload_schema else {
        return vec![json!({})];
    };
    let defs = schema
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut base = example(schema, &defs, 0);
    // `len(payload.NAME) >= N` (or `> N`) in a check: a string of that length.
    for check in &state.checks {
        let g = check.guard.source.as_str();
        for (at, _) in g.match_indices("len(payload.") {
            let rest = &g[at + "len(payload.".len()..];
            let Some(close) = rest.find(')') else {
                continue;
            };
            let field = &rest[..close];
            let tail = rest[close + 1..].trim_start();
            let (strict, tail) = match tail.strip_prefix(">=") {
                Some(t) => (false, t),
                None => match tail.strip_prefix('>') {
                    Some(t) => (true, t),
                    None => continue,
                },
            };
            let digits: String = tail
                .trim_start()
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            let Ok(n) = digits.parse::<usize>() else {
                continue;
            };
            let n = (n + usize::from(strict)).min(64);
            if let Some(obj) = base.as_object_mut()
                && obj.get(field).is_some_and(Value::is_string)
            {
                obj.insert(field.to_string(), json!("x".repeat(n)));
            }
        }
    }
    let tools = tools_for(state);
    if let Some(obj) = base.as_object_mut()
        && obj.contains_key("tools_used")
    {
        obj.insert("tools_used".into(), json!(tools));
    }
    let mut out = vec![base.clone()];
    // One change anywhere inside: each nested enum value, each nested boolean flipped
    // (the same change to every item of a list).
    for v in leaf_variants(schema, &base, &defs, 0) {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    let props = resolve(schema, &defs)
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let guards: Vec<&str> = state
        .transitions
        .iter()
        .filter_map(|t| t.guard.as_ref().map(|g| g.source.as_str()))
        .collect();
    for (name, prop) in &props {
        let prop = resolve(prop, &defs);
        let mut variant = |value: Value| {
            let mut v = base.clone();
            if let Some(o) = v.as_object_mut() {
                o.insert(name.clone(), value);
            }
            if !out.contains(&v) {
                out.push(v);
            }
        };
        match prop.get("type").and_then(Value::as_str) {
            Some("boolean") => variant(json!(true)),
            Some("array") => variant(json!([])),
            _ => {}
        }
        for e in prop
            .get("enum")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            variant(e.clone());
        }
        // `payload.NAME == "text"` in a guard: try the text.
        let needle = format!("payload.{name} == \"");
        for g in &guards {
            for (at, _) in g.match_indices(&needle) {
                let rest = &g[at + needle.len()..];
                if let Some(end) = rest.find('"') {
                    variant(json!(&rest[..end]));
                }
            }
        }
    }
    out
}

/// `value` with one enum or boolean leaf changed, for every such leaf and value.
fn leaf_variants(
    schema: &Value,
    value: &Value,
    defs: &Map<String, Value>,
    depth: usize,
) -> Vec<Value> {
    if depth > 6 {
        return Vec::new();
    }
    let schema = resolve(schema, defs);
    let mut out = Vec::new();
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        out.extend(options.iter().filter(|o| *o != value).cloned());
        return out;
    }
    match value {
        Value::Bool(b) => out.push(Value::Bool(!b)),
        Value::Object(obj) => {
            let props = schema.get("properties").and_then(Value::as_object);
            for (k, v) in obj {
                let Some(prop) = props.and_then(|p| p.get(k)) else {
                    continue;
                };
                for changed in leaf_variants(prop, v, defs, depth + 1) {
                    let mut copy = obj.clone();
                    copy.insert(k.clone(), changed);
                    out.push(Value::Object(copy));
                }
            }
        }
        Value::Array(items) => {
            if let (Some(first), Some(item_schema)) = (items.first(), schema.get("items")) {
                for changed in leaf_variants(item_schema, first, defs, depth + 1) {
                    out.push(Value::Array(vec![changed; items.len()]));
                }
            }
        }
        _ => {}
    }
    out.truncate(64);
    out
}

fn resolve<'a>(schema: &'a Value, defs: &'a Map<String, Value>) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => r
            .rsplit('/')
            .next()
            .and_then(|name| defs.get(name))
            .unwrap_or(schema),
        None => schema,
    }
}

/// The smallest value a schema accepts, as far as a generator without a solver can tell:
/// its first example or enum value, else every property, strings of `x`, the minimum
/// number, one list item.
fn example(schema: &Value, defs: &Map<String, Value>, depth: usize) -> Value {
    if depth > 8 {
        return Value::Null;
    }
    let schema = resolve(schema, defs);
    // A schema that shows an example (a format the engine checks, like evidence's
    // `file:line`) says best what a valid value looks like.
    for key in ["examples", "enum"] {
        if let Some(first) = schema
            .get(key)
            .and_then(Value::as_array)
            .and_then(|e| e.first())
        {
            return first.clone();
        }
    }
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(first) = schema
            .get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
        {
            return example(first, defs, depth + 1);
        }
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types.first().and_then(Value::as_str).unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "null",
    };
    match ty {
        "object" => Value::Object(
            schema
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), example(v, defs, depth + 1)))
                .collect(),
        ),
        "array" => {
            let n = schema
                .get("minItems")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .max(1);
            let item = schema
                .get("items")
                .map_or(Value::Null, |i| example(i, defs, depth + 1));
            Value::Array(vec![item; usize::try_from(n.min(4)).unwrap_or(1)])
        }
        "string" => {
            let n = schema.get("minLength").and_then(Value::as_u64).unwrap_or(1);
            json!("x".repeat(usize::try_from(n.clamp(1, 64)).unwrap_or(1)))
        }
        "integer" | "number" => schema.get("minimum").cloned().unwrap_or_else(|| json!(0)),
        "boolean" => json!(false),
        _ => Value::Null,
    }
}

/// The paths as a scenario file: one scenario per reached state, shortest first.
pub fn to_scenarios(paths: &Paths, contract_ref: &str) -> String {
    let mut out = String::new();
    out.push_str("# yaml-language-server: $schema=../schemas/scenario.schema.json\n");
    out.push_str(&format!(
        "# Generated by `code-intel paths`: a shortest payload sequence to each state under\n\
         # flags {:?}, intent {}. Edit the payloads into meaningful ones before keeping them.\n",
        paths.flags, paths.intent
    ));
    for s in &paths.unreached {
        out.push_str(&format!(
            "# not reached by any generated payload sequence: {s}\n"
        ));
    }
    out.push_str(&format!("contract: {}\nscenarios:\n", json!(contract_ref)));
    let mut by_length: Vec<(&String, &Found)> = paths.reached.iter().collect();
    by_length.sort_by_key(|(name, found)| (found.steps.len(), (*name).clone()));
    for (state, found) in by_length {
        let steps = &found.steps;
        out.push_str(&format!("  - name: {}\n", json!(format!("reach {state}"))));
        out.push_str(&format!("    flags: {}\n", json!(paths.flags)));
        out.push_str(&format!("    intent: {}\n", json!(paths.intent)));
        out.push_str(&format!(
            "    params: {}\n",
            Value::Object(paths.params.clone())
        ));
        out.push_str(&format!(
            "    facts: {}\n",
            Value::Object(found.facts.clone())
        ));
        out.push_str("    steps:\n");
        if steps.is_empty() {
            out.push_str("      - expect: {}\n");
        }
        for (i, step) in steps.iter().enumerate() {
            out.push_str(&format!("      - submit: {}\n", step.payload));
            if !step.tools.is_empty() {
                out.push_str(&format!("        tools: {}\n", json!(step.tools)));
            }
            let expect = if i + 1 == steps.len() {
                json!({"state": step.state})
            } else {
                json!({})
            };
            out.push_str(&format!("        expect: {expect}\n"));
        }
    }
    out
}
