//! Code-aware words for lexical search: identifiers split at `snake_case` and `camelCase`
//! boundaries, lower-cased, with the whole identifier kept too, so `UserCreationForm`
//! matches a query for "user creation form" and, better, one for `UserCreationForm`.
//!
//! Also the token estimate that sizes chunks: the embedding model sees subword pieces, not
//! words, and running its tokenizer in the chunker would tie chunking to a loaded model.

/// Calls `emit` with every word of `text`, in order: each part of an identifier, then the
/// whole identifier when it has more than one part. All lower case. Parts of one
/// character are dropped (they carry no meaning a query would share), digits stay
/// attached to the letters before them.
pub(crate) fn for_each_word(text: &str, mut emit: impl FnMut(&str)) {
    let mut whole = String::new();
    let mut part = String::new();
    let mut parts = 0usize;
    // `parts` counts every part, even those too short to emit: `handler_7_3` is one
    // emitted part but three parts, and its whole is worth a word of its own.
    let flush_part = |part: &mut String, parts: &mut usize, emit: &mut dyn FnMut(&str)| {
        if part.chars().count() > 1 {
            emit(part);
        }
        if !part.is_empty() {
            *parts += 1;
        }
        part.clear();
    };
    let mut chars = text.chars().peekable();
    let mut prev: Option<char> = None;
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() {
            // A new part starts at lower→Upper (`userName`) and at the last capital of a
            // run followed by a lower-case letter (`HTTPServer` → HTTP, Server).
            let boundary = match prev {
                Some(p) if p.is_lowercase() || p.is_numeric() => c.is_uppercase(),
                Some(p) if p.is_uppercase() => {
                    c.is_uppercase() && chars.peek().is_some_and(|n| n.is_lowercase())
                }
                _ => false,
            };
            if boundary && prev.is_some_and(|p| p != '_') {
                flush_part(&mut part, &mut parts, &mut emit);
            }
            part.extend(c.to_lowercase());
            whole.extend(c.to_lowercase());
            prev = Some(c);
        } else if c == '_' && !whole.is_empty() {
            flush_part(&mut part, &mut parts, &mut emit);
            whole.push('_');
            prev = Some(c);
        } else {
            flush_part(&mut part, &mut parts, &mut emit);
            if parts > 1 {
                emit(&whole);
            }
            whole.clear();
            parts = 0;
            prev = None;
        }
    }
    flush_part(&mut part, &mut parts, &mut emit);
    if parts > 1 {
        emit(&whole);
    }
}

/// The words of `text`, as [`for_each_word`] finds them.
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_word(text, |w| out.push(w.to_string()));
    out
}

/// English words a query uses for grammar, not meaning. Left out of lexical queries: in a
/// rank fusion, a chunk matched only on "an" would count as much as a real match.
const QUERY_STOPWORDS: &[&str] = &[
    "a", "about", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from",
    "how", "i", "in", "is", "it", "its", "of", "on", "or", "that", "the", "this", "to", "what",
    "when", "where", "which", "who", "why", "with",
];

/// The words a lexical query searches for: [`words`] without grammar words, unless the
/// query is nothing but those.
pub(crate) fn query_words(query: &str) -> Vec<String> {
    let mut all = words(query);
    all.sort();
    all.dedup();
    let meaningful: Vec<String> = all
        .iter()
        .filter(|w| !QUERY_STOPWORDS.contains(&w.as_str()))
        .cloned()
        .collect();
    if meaningful.is_empty() {
        all
    } else {
        meaningful
    }
}

/// The identifiers a query names, lower-cased as [`words`] writes a whole identifier:
/// words with an underscore or an inner capital (`get_user_model`, `UserCreationForm`),
/// or the whole query when it is one word (`Mailer`).
pub(crate) fn query_identifiers(query: &str) -> Vec<String> {
    let pieces: Vec<&str> = query
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|p| !p.is_empty())
        .collect();
    let mut out: Vec<String> = pieces
        .iter()
        .filter(|p| {
            pieces.len() == 1
                || p.trim_matches('_').contains('_')
                || p.chars().skip(1).any(char::is_uppercase)
        })
        .map(|p| p.trim_matches('_').to_lowercase())
        .filter(|p| p.chars().count() > 1)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The whole-identifier word [`words`] gives `name` (`UserCreationForm` →
/// `usercreationform`), to compare with [`query_identifiers`].
pub(crate) fn identifier_key(name: &str) -> String {
    let mut out = String::new();
    for c in name.trim_matches('_').chars() {
        out.extend(c.to_lowercase());
    }
    out
}

/// About how many model tokens `text` makes. WordPiece splits code finely: each run of
/// letters or digits is about one piece per four characters (at least one), and every
/// punctuation character is a piece of its own. It only has to keep chunks near their
/// budget.
pub(crate) fn estimate(text: &str) -> usize {
    let mut tokens = 0usize;
    let mut run = 0usize;
    for c in text.chars() {
        if c.is_alphanumeric() {
            run += 1;
            continue;
        }
        if run > 0 {
            tokens += run.div_ceil(4);
            run = 0;
        }
        if !c.is_whitespace() {
            tokens += 1;
        }
    }
    tokens + run.div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_split_at_their_case_and_underscores_and_keep_the_whole() {
        assert_eq!(
            words("class UserCreationForm(forms.ModelForm):"),
            [
                "class",
                "user",
                "creation",
                "form",
                "usercreationform",
                "forms",
                "model",
                "form",
                "modelform"
            ]
        );
        assert_eq!(
            words("parse_http_header"),
            ["parse", "http", "header", "parse_http_header"]
        );
        assert_eq!(words("HTTPServer"), ["http", "server", "httpserver"]);
        assert_eq!(words("utf8Decode x"), ["utf8", "decode", "utf8decode"]);
        assert_eq!(words("__init__"), ["init"]);
        assert_eq!(words("handler_7_3"), ["handler", "handler_7_3"]);
        assert_eq!(words("x = a"), Vec::<String>::new());
        assert_eq!(
            words("get_user_model()"),
            ["get", "user", "model", "get_user_model"]
        );
    }

    #[test]
    fn a_query_in_words_shares_the_parts_of_the_identifier() {
        let code = words("def get_user_model():");
        for w in words("Get the user model") {
            if w != "the" {
                assert!(code.contains(&w), "{w}");
            }
        }
    }

    #[test]
    fn queries_drop_grammar_words_unless_that_is_all_they_are() {
        assert_eq!(
            query_words("send an email to the user"),
            ["email", "send", "user"]
        );
        assert_eq!(query_words("how to"), ["how", "to"]);
    }

    #[test]
    fn identifiers_in_a_query_are_the_words_that_look_like_code() {
        assert_eq!(
            query_identifiers("where is get_user_model called from UserCreationForm"),
            ["get_user_model", "usercreationform"]
        );
        assert_eq!(query_identifiers("Mailer"), ["mailer"]);
        assert!(query_identifiers("send an email").is_empty());
        assert_eq!(identifier_key("UserCreationForm"), "usercreationform");
        assert_eq!(identifier_key("__get_user_model__"), "get_user_model");
    }

    #[test]
    fn non_ascii_words_are_words() {
        assert_eq!(words("ユーザー作成 café"), ["ユーザー作成", "café"]);
    }

    #[test]
    fn the_estimate_counts_pieces_and_punctuation() {
        assert_eq!(estimate(""), 0);
        assert_eq!(estimate("a"), 1);
        assert_eq!(estimate("fn main() {}"), 1 + 1 + 4);
        assert_eq!(estimate("abcdefgh"), 2);
    }
}
