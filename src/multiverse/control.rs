//! Control words: a chat message that is only "stop", "pause", "resume" or "status" (in
//! English or Japanese, e.g. 止めて, 一旦止めて, 続けて, 状況) is handled without the
//! planner. Only a whole message counts, after trimming, case folding, trailing
//! punctuation and a polite "please" / ください: "stop the login task from retrying" is a
//! request for the planner, not a stop.

use serde::Serialize;

/// What a control word asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Control {
    /// Stop execution: cancel running tasks gracefully, schedule nothing.
    Stop,
    /// Pause: nothing new starts; what runs goes on.
    Pause,
    /// Resume (or start) execution.
    Resume,
    /// Report the plan's state.
    Status,
}

/// The words of each control, already normalised (see [`normalise`]).
const WORDS: &[(Control, &[&str])] = &[
    (
        Control::Pause,
        &[
            "pause",
            "hold",
            "hold on",
            "一旦止めて",
            "いったん止めて",
            "一時停止",
            "一時停止して",
            "ちょっと止めて",
            "ちょっと待って",
        ],
    ),
    (
        Control::Stop,
        &[
            "stop",
            "stop all",
            "stop everything",
            "halt",
            "止めて",
            "とめて",
            "停止",
            "停止して",
            "ストップ",
            "中止",
            "中止して",
        ],
    ),
    (
        Control::Resume,
        &[
            "resume",
            "continue",
            "go on",
            "start",
            "go",
            "続けて",
            "つづけて",
            "再開",
            "再開して",
            "開始",
            "開始して",
        ],
    ),
    (
        Control::Status,
        &[
            "status",
            "progress",
            "how is it going",
            "状況",
            "状況は",
            "ステータス",
            "進捗",
            "進捗は",
            "どうなってる",
        ],
    ),
];

/// The control a message is, if it is only a control word.
pub fn control_word(message: &str) -> Option<Control> {
    let text = normalise(message);
    WORDS
        .iter()
        .find(|(_, words)| words.contains(&text.as_str()))
        .map(|(control, _)| *control)
}

/// Lower case, trimmed, without trailing punctuation and polite wrappers.
fn normalise(message: &str) -> String {
    // Bounded: a long message is never a control word, and is not scanned further.
    if message.len() > 200 {
        return String::new();
    }
    let mut text = message.trim().to_lowercase();
    loop {
        let before = text.clone();
        text = text
            .trim_end_matches(['.', '!', '?', '。', '！', '？', '、', ',', '…', ' ', '　'])
            .to_string();
        for suffix in ["ください", "下さい", " please"] {
            if let Some(rest) = text.strip_suffix(suffix) {
                text = rest.trim_end().to_string();
            }
        }
        if let Some(rest) = text.strip_prefix("please ") {
            text = rest.trim_start().to_string();
        }
        if text == before {
            return text;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_words_in_english_and_japanese() {
        let cases = [
            ("stop", Some(Control::Stop)),
            ("  Stop!  ", Some(Control::Stop)),
            ("please stop.", Some(Control::Stop)),
            ("止めて", Some(Control::Stop)),
            ("止めてください。", Some(Control::Stop)),
            ("停止", Some(Control::Stop)),
            ("一旦止めて", Some(Control::Pause)),
            ("一時停止", Some(Control::Pause)),
            ("Pause", Some(Control::Pause)),
            ("続けて", Some(Control::Resume)),
            ("再開してください", Some(Control::Resume)),
            ("continue", Some(Control::Resume)),
            ("状況", Some(Control::Status)),
            ("状況は？", Some(Control::Status)),
            ("status?", Some(Control::Status)),
        ];
        for (message, want) in cases {
            assert_eq!(control_word(message), want, "{message:?}");
        }
    }

    #[test]
    fn a_request_that_mentions_a_control_word_goes_to_the_planner() {
        for message in [
            "stop the login task from retrying",
            "add a pause button",
            "ログイン処理を止めて別の方式にして",
            "status page for the API",
            "",
            &"stop ".repeat(100),
        ] {
            assert_eq!(control_word(message), None, "{message:?}");
        }
    }
}
