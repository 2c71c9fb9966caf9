//! How the server words a text it makes outside a reply: a message the registry declares
//! (the code tools' notes, `code_tools.*` and `semantic.note.*`; the hook's denials before
//! a session), in one locale. `Server` passes its contract and the session's locale;
//! `registry::english` words them in the built-in contract's English for callers without
//! a server (tests, the hook before it finds a session).
//!
//! A file of its own, below the tools and the registry: the tool handlers word their
//! notes with it, and the registry is made from the tools' declarations.

use serde_json::{Map, Value};

use crate::contract::Contract;
use crate::machine::response::message;

/// The contract and locale a text is worded in.
#[derive(Clone, Copy)]
pub struct Words<'a> {
    contract: Option<&'a Contract>,
    locale: &'a str,
}

impl<'a> Words<'a> {
    pub fn new(contract: &'a Contract, locale: &'a str) -> Words<'a> {
        Words {
            contract: Some(contract),
            locale,
        }
    }

    /// Without a contract: every text is its key (`registry::english` when the built-in
    /// contract did not load, which its own tests rule out).
    pub fn keys_only() -> Words<'static> {
        Words {
            contract: None,
            locale: "en",
        }
    }

    /// Message `key` with `args` filled in. A contract without the key cannot run (the
    /// registry declares every key, and `lint` refuses a contract that lacks one); were
    /// it missing anyway, the key itself is the text.
    pub fn note(&self, key: &str, args: &[(&str, Value)]) -> String {
        let Some(contract) = self.contract else {
            return key.to_string();
        };
        let args: Map<String, Value> = args
            .iter()
            .map(|(k, v)| ((*k).to_string(), v.clone()))
            .collect();
        message(contract, key, &args, self.locale).text
    }
}
