//! Benchmark of the contract engine: loading and validating the default contract, and the
//! interpreter's step time over a full session of the default flow (a driver turn: engine step,
//! host actions answered from the shipped happy-path scenario, settling).
//!
//! Run with `cargo bench --bench engine`. Prints p50/p90/max; the goals (issue 2) are
//! < 20 ms to load and validate, and < 50 µs per step at p50.
#![allow(clippy::print_stdout)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use code_intel::contract::{BUILTIN_CONTRACT, Contract};
use code_intel::scenario;
use code_intel::scenario::{Scenario, ScriptedHost, Step};
use code_intel::session::{Driver, NoCheckpoints, Stop};
use code_intel::source::Sources;

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort_unstable();
    let index = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[index]
}

fn load() -> Contract {
    let mut sources = Sources::default();
    let id = sources.add("phase_contract.yml", BUILTIN_CONTRACT);
    code_intel::lint::load_and_lint(&mut sources, id, &code_intel::hosts::all())
        .ok()
        .expect("the default contract loads")
}

/// The happy path of the default flow as the shipped scenario file writes it: payloads,
/// tools, facts and action results. Taken from the data CI runs (`code-intel test`), so the
/// benchmark cannot drift from the contract.
fn happy_path() -> Scenario {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/contracts/phase_contract.scenarios.yml"
    );
    let text = std::fs::read_to_string(path).expect("the shipped scenario file is readable");
    let mut sources = Sources::default();
    let id = sources.add(path, &text);
    let file = scenario::load(id, &text).unwrap_or_else(|_| panic!("{path} loads"));
    file.scenarios
        .into_iter()
        .find(|s| s.name.starts_with("the happy path"))
        .expect("the scenario file has the happy path")
}

fn main() {
    // Load + validate: YAML parse, contract schema, lowering (guards, payload schemas,
    // templates) and every lint rule.
    let _warm = load();
    let mut loads = Vec::new();
    for _ in 0..30 {
        let start = Instant::now();
        black_box(load());
        loads.push(start.elapsed());
    }
    let contract = load();
    let happy = happy_path();
    let driver = Driver::new(&contract);
    let host_for = |step: Option<&Step>| {
        let mut facts = happy.facts.clone();
        let mut results = happy.results.clone();
        if let Some(step) = step {
            facts.extend(step.facts.clone());
            results.extend(step.results.clone());
        }
        ScriptedHost::new(facts, results)
    };
    let mut steps = Vec::new();
    for _ in 0..200 {
        let mut turn = driver
            .start(
                &mut host_for(happy.steps.first()),
                &mut NoCheckpoints,
                &happy.flags,
                happy.intent.as_deref(),
                happy.locale.as_deref(),
                &happy.params,
            )
            .unwrap_or_else(|e| panic!("the happy path starts: {e}"));
        for step in &happy.steps {
            // Steps the scenario expects to be refused check the contract, not the flow.
            let (Some(payload), None) = (&step.submit, &step.expect.rejected) else {
                continue;
            };
            let mut host = host_for(Some(step));
            let start = Instant::now();
            turn = driver.submit(
                &mut host,
                &mut NoCheckpoints,
                turn.instance,
                payload.clone(),
                step.tools.clone(),
            );
            steps.push(start.elapsed());
            assert!(
                matches!(turn.stop, Stop::Waiting | Stop::Finished(_)),
                "a happy-path step stopped in {}: {:?}",
                turn.instance.state,
                turn.stop
            );
        }
        assert!(
            matches!(turn.stop, Stop::Finished(_)),
            "the happy path finishes"
        );
    }
    println!(
        "contract load + validate (default contract, {} runs): p50 {:?}  p90 {:?}  max {:?}   goal < 20 ms",
        loads.len(),
        percentile(&mut loads, 0.5),
        percentile(&mut loads, 0.9),
        percentile(&mut loads, 1.0)
    );
    println!(
        "driver turn (default flow's happy path, {} submissions): p50 {:?}  p90 {:?}  max {:?}   goal < 50 µs p50",
        steps.len(),
        percentile(&mut steps, 0.5),
        percentile(&mut steps, 0.9),
        percentile(&mut steps, 1.0)
    );
}
