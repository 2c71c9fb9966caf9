//! Answers an agent can afford: every code tool's JSON answer has a byte budget, and a
//! list that would take it past the budget is cut, with `truncated` and `next_offset`
//! set as for any other page, so the rest is one call away.
//!
//! An agent pays for every byte it reads; a 60 KB answer that lists every test line of a
//! library costs more than the question was worth and pushes the session towards a
//! context compaction. Paging by item count (`limit`) does not bound bytes (one file's
//! outline can be larger than a hundred search matches), so the budget is measured on the
//! JSON itself, after the tool has answered.

use serde_json::{Map, Value};

/// The most bytes (compact JSON) of one code tool's answer, whatever `limit` says.
pub const ANSWER_BUDGET: usize = 16 * 1024;

/// The most bytes of `analyze_impact`'s default answer: counts per section and the top
/// items of each.
pub const IMPACT_SUMMARY_BUDGET: usize = 8 * 1024;

/// A list in an answer that can be cut: a page (`items`, `returned`, `truncated`,
/// `offset`), a text search answer (`files` of `matches`, counted in lines), or a ranked
/// list without pages (semantic search's `hits`: the best come first, so cutting keeps
/// them; fewer are asked for with `k`).
struct Cuttable {
    /// JSON pointer to the object that holds the list.
    pointer: String,
    kind: List,
    /// The byte size of each item, in order (matches, for a text answer).
    sizes: Vec<usize>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum List {
    Page,
    Text,
    Ranked,
}

fn is_page(map: &Map<String, Value>) -> bool {
    map.get("returned").is_some_and(Value::is_u64)
        && map.get("truncated").is_some_and(Value::is_boolean)
        && (map.get("items").is_some_and(Value::is_array)
            || map.get("files").is_some_and(Value::is_array))
}

fn len(v: &Value) -> usize {
    serde_json::to_string(v).map_or(0, |s| s.len())
}

fn find(value: &Value, pointer: &mut String, out: &mut Vec<Cuttable>) {
    let Value::Object(map) = value else { return };
    if let Some(hits) = map.get("hits").and_then(Value::as_array) {
        out.push(Cuttable {
            pointer: pointer.clone(),
            kind: List::Ranked,
            sizes: hits.iter().map(|h| len(h) + 1).collect(),
        });
    } else if is_page(map) {
        let (kind, sizes) = match map.get("items").and_then(Value::as_array) {
            Some(items) => (List::Page, items.iter().map(|i| len(i) + 1).collect()),
            None => {
                let files = map.get("files").and_then(Value::as_array);
                let sizes = files
                    .into_iter()
                    .flatten()
                    .flat_map(|f| f.get("matches").and_then(Value::as_array))
                    .flatten()
                    .map(|m| len(m) + 1)
                    .collect();
                (List::Text, sizes)
            }
        };
        out.push(Cuttable {
            pointer: pointer.clone(),
            kind,
            sizes,
        });
    }
    for (key, child) in map {
        if child.is_object() {
            let at = pointer.len();
            pointer.push('/');
            pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
            find(child, pointer, out);
            pointer.truncate(at);
        }
    }
}

/// Removes the last item of the page at `pointer`, and says so in its counts.
fn pop(answer: &mut Value, c: &mut Cuttable) {
    let Some(Value::Object(page)) = answer.pointer_mut(&c.pointer) else {
        c.sizes.clear();
        return;
    };
    if c.kind == List::Ranked {
        if let Some(Value::Array(hits)) = page.get_mut("hits") {
            hits.pop();
        }
        c.sizes.pop();
        page.insert("returned".into(), Value::from(c.sizes.len()));
        page.insert("truncated".into(), Value::Bool(true));
        return;
    }
    if c.kind == List::Text {
        if let Some(Value::Array(files)) = page.get_mut("files") {
            if let Some(Value::Array(matches)) = files.last_mut().and_then(|f| f.get_mut("matches"))
            {
                matches.pop();
            }
            if files
                .last()
                .and_then(|f| f.get("matches"))
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty)
            {
                files.pop();
            }
        }
    } else if let Some(Value::Array(items)) = page.get_mut("items") {
        items.pop();
    }
    c.sizes.pop();
    let returned = c.sizes.len();
    let offset = page.get("offset").and_then(Value::as_u64).unwrap_or(0);
    page.insert("returned".into(), Value::from(returned));
    page.insert("truncated".into(), Value::Bool(true));
    page.insert(
        "next_offset".into(),
        Value::from(offset + u64::try_from(returned).unwrap_or(u64::MAX)),
    );
}

/// Cuts the lists of `answer` until its compact JSON fits in `budget` bytes: the longest
/// list (in bytes) loses its last item first, so every list keeps its top items as long
/// as possible. One item is always kept, so paging on always moves forward; an answer
/// whose single item is over the budget is returned as it is. Returns whether anything
/// was cut; the cut pages say `truncated` and `next_offset`.
pub(crate) fn fit(answer: &mut Value, budget: usize) -> bool {
    let mut size = len(answer);
    if size <= budget {
        return false;
    }
    let mut lists = Vec::new();
    find(answer, &mut String::new(), &mut lists);
    let mut cut = false;
    loop {
        let items: usize = lists.iter().map(|c| c.sizes.len()).sum();
        if items <= 1 {
            break;
        }
        let Some(longest) = lists
            .iter_mut()
            .filter(|c| !c.sizes.is_empty())
            .max_by_key(|c| c.sizes.iter().sum::<usize>())
        else {
            break;
        };
        let freed = longest.sizes.last().copied().unwrap_or(0);
        pop(answer, longest);
        cut = true;
        size = size.saturating_sub(freed);
        if size <= budget {
            // The estimate leaves out the counts that changed: measure again.
            size = len(answer);
            if size <= budget {
                break;
            }
        }
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn page(n: usize, text: &str) -> Value {
        let items: Vec<Value> = (0..n).map(|i| json!({"n": i, "text": text})).collect();
        json!({"items": items, "total": n, "returned": n, "truncated": false, "offset": 0})
    }

    #[test]
    fn an_answer_within_the_budget_is_left_alone() {
        let mut a = page(3, "x");
        let before = a.clone();
        assert!(!fit(&mut a, 10_000));
        assert_eq!(a, before);
    }

    #[test]
    fn the_longest_list_is_cut_first_and_says_where_to_go_on() {
        let mut a = json!({"big": page(100, &"b".repeat(100)), "small": page(2, "s")});
        assert!(fit(&mut a, 4000));
        assert!(len(&a) <= 4000, "{}", len(&a));
        let big = &a["big"];
        let returned = big["returned"].as_u64().unwrap();
        assert!(returned > 0 && returned < 100);
        assert_eq!(big["items"].as_array().unwrap().len() as u64, returned);
        assert_eq!(
            (&big["truncated"], &big["next_offset"]),
            (&json!(true), &json!(returned))
        );
        assert_eq!(big["total"], 100);
        // The short list keeps its items.
        assert_eq!(a["small"]["returned"], 2);
    }

    #[test]
    fn a_text_answer_is_cut_by_lines() {
        let matches = |n: usize| -> Vec<Value> {
            (0..n)
                .map(|i| json!({"line": i, "text": "y".repeat(200)}))
                .collect()
        };
        let mut a = json!({
            "files": [{"path": "a", "matches": matches(30)}, {"path": "b", "matches": matches(30)}],
            "total": 60, "returned": 60, "truncated": false, "offset": 10,
        });
        assert!(fit(&mut a, 3000));
        assert!(len(&a) <= 3000);
        let kept: usize = a["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["matches"].as_array().unwrap().len())
            .sum();
        assert_eq!(a["returned"].as_u64().unwrap() as usize, kept);
        assert_eq!(a["next_offset"].as_u64().unwrap() as usize, 10 + kept);
        assert_eq!(
            a["files"].as_array().unwrap().len(),
            1,
            "the emptied file is dropped"
        );
    }

    #[test]
    fn ranked_hits_keep_the_best_and_say_they_were_cut() {
        let hits: Vec<Value> = (0..50)
            .map(|i| json!({"rank": i, "preview": "p".repeat(300)}))
            .collect();
        let mut a = json!({"query": "q", "hits": hits});
        assert!(fit(&mut a, 5000));
        assert!(len(&a) <= 5000);
        let kept = a["hits"].as_array().unwrap();
        assert_eq!(kept[0]["rank"], 0);
        assert_eq!(
            (a["returned"].as_u64().unwrap() as usize, &a["truncated"]),
            (kept.len(), &json!(true))
        );
    }

    #[test]
    fn one_item_is_always_kept() {
        let mut a = page(2, &"z".repeat(5000));
        assert!(fit(&mut a, 100));
        assert_eq!(a["returned"], 1);
        assert_eq!(a["next_offset"], 1);
    }
}
