//! Keywords of judge comments, offline: RAKE (Rapid Automatic Keyword Extraction, Rose et al.
//! 2010) over English and Japanese text, and the matching helpers that quote a keyword's
//! sentences or check that a quote really is in a comment.
//!
//! The judges' comments (one per team, round and metric) are analysed together as one corpus.
//! Text is normalised first: full-width ASCII (U+FF01–U+FF5E) becomes ASCII, the ideographic
//! space a space, `’` an apostrophe, and letters lowercase. It is then cut into tokens:
//!
//! * runs of letters and digits outside Japanese script, with `'` or `-` allowed between two
//!   of them (`don't`, `well-structured`), are English words (any alphabetic script but the
//!   Japanese one is treated alike);
//! * runs of kanji and kana are segmented into words by TinySegmenter (a private safe port,
//!   see `keywords/segmenter.rs`, since the `tinysegmenter` crate aborts in debug builds);
//! * everything else (punctuation, including 、。「」（）・, symbols, emoji, line breaks) ends a
//!   phrase; spaces and tabs only separate English words.
//!
//! Stopwords (`keywords/stopwords.rs`) end a phrase too, and so does a change of script: a
//! candidate phrase is a maximal run of non-stopword tokens of one script. Each word `w` gets
//! RAKE's `degree(w) / frequency(w)`, where `frequency` counts its occurrences in candidates
//! and `degree` sums the lengths (in tokens) of the candidates it occurs in; a phrase scores the
//! sum over its words. English phrases are shown with their words joined by a space, Japanese
//! ones with their tokens joined with nothing (so 具体 + 例 and 具体例 are the same phrase).

mod segmenter;
mod stopwords;

use serde::Serialize;
use std::collections::HashMap;

/// Longest phrase kept, in words (English) or TinySegmenter tokens (Japanese). Longer candidate
/// phrases are dropped before scoring, as RAKE's usual maximum length does.
const MAX_PHRASE_TOKENS: usize = 4;

/// Quote marks that [`contains_quote`] ignores around a quote (after normalisation, so
/// full-width `＂` and `＇` are covered by `"` and `'`, and `’` by `'`).
const QUOTE_MARKS: [char; 12] = [
    '「', '」', '『', '』', '"', '\'', '“', '”', '‘', '„', '«', '»',
];

/// A keyword phrase found in a set of texts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Keyword {
    /// The phrase as shown to users: English words joined by one space, lowercased; Japanese
    /// tokens joined with no space (`具体例`; `エラー処理の不足` is not one phrase, since の is a
    /// stopword: it gives `エラー処理` and `不足`).
    pub phrase: String,
    /// RAKE score: the sum over the phrase's words of `degree(word) / frequency(word)`,
    /// computed over all texts together. When the same shown phrase comes from different
    /// segmentations (具体例 as one token, or as 具体 + 例), the highest of their scores.
    pub score: f64,
    /// How many times the phrase occurs as a candidate across all texts.
    pub occurrences: usize,
    /// Indices (into the `texts` slice given) of the texts containing the phrase as a
    /// candidate, ascending, no duplicates.
    pub texts: Vec<usize>,
}

/// The top `max` keyword phrases of `texts` (all analysed together as one corpus), best first:
/// by score descending, then by number of texts descending, then phrase ascending.
///
/// Dropped: phrases longer than 4 words or tokens (before scoring), phrases without a letter
/// (only digits or punctuation), phrases of a single character (any script), and, when there
/// are several texts, phrases occurring only once (a phrase is kept when `occurrences >= 2` or
/// `texts.len() == 1`).
pub fn extract(texts: &[&str], max: usize) -> Vec<Keyword> {
    let candidates: Vec<(usize, Candidate)> = texts
        .iter()
        .enumerate()
        .flat_map(|(index, text)| candidates(text).into_iter().map(move |c| (index, c)))
        .filter(|(_, c)| c.tokens.len() <= MAX_PHRASE_TOKENS)
        .collect();

    // frequency and degree of each word
    let mut words: HashMap<&str, (usize, usize)> = HashMap::new();
    for (_, candidate) in &candidates {
        for token in &candidate.tokens {
            let (frequency, degree) = words.entry(token.as_str()).or_default();
            *frequency += 1;
            *degree += candidate.tokens.len();
        }
    }
    let word_score = |token: &str| {
        words
            .get(token)
            .map_or(0.0, |&(frequency, degree)| degree as f64 / frequency as f64)
    };

    let mut phrases: HashMap<String, Keyword> = HashMap::new();
    for (index, candidate) in &candidates {
        let score: f64 = candidate.tokens.iter().map(|t| word_score(t)).sum();
        let keyword = phrases
            .entry(candidate.phrase())
            .or_insert_with_key(|phrase| Keyword {
                phrase: phrase.clone(),
                score,
                occurrences: 0,
                texts: Vec::new(),
            });
        keyword.score = keyword.score.max(score);
        keyword.occurrences += 1;
        // candidates come text by text, so `texts` stays ascending
        if keyword.texts.last() != Some(index) {
            keyword.texts.push(*index);
        }
    }

    let mut keywords: Vec<Keyword> = phrases
        .into_values()
        .filter(|k| k.occurrences >= 2 || texts.len() == 1)
        .filter(|k| k.phrase.chars().nth(1).is_some())
        .filter(|k| k.phrase.chars().any(char::is_alphabetic))
        .collect();
    keywords.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| b.texts.len().cmp(&a.texts.len()))
            .then_with(|| a.phrase.cmp(&b.phrase))
    });
    keywords.truncate(max);
    keywords
}

/// The sentences of `text` that contain `phrase`, to quote as evidence for a keyword.
///
/// Sentences end after `.` `!` `?` `。` `！` `？` `．` `｡` and at line breaks; they are trimmed
/// and empty ones dropped. A sentence contains the phrase under the normalisation [`extract`]
/// uses (Latin letters in any case, full-width ASCII as ASCII, any run of whitespace as one
/// space); an English phrase must also start and end on word boundaries (`api` is not in
/// `rapid`), while a Japanese phrase only needs its characters contiguous in the sentence.
///
/// Each sentence is returned as written in `text`, cut to at most `max_chars` characters: a
/// longer one keeps its first `max_chars - 1` characters (on a character boundary, trailing
/// whitespace dropped) followed by `…` (a `max_chars` of 0 counts as 1). An empty phrase is in
/// no sentence.
pub fn sentences_containing(text: &str, phrase: &str, max_chars: usize) -> Vec<String> {
    let needle = collapse_whitespace(&normalise(phrase));
    let needle = needle.trim();
    if needle.is_empty() {
        return Vec::new();
    }
    sentences(text)
        .into_iter()
        .filter(|sentence| contains_phrase(&collapse_whitespace(&normalise(sentence)), needle))
        .map(|sentence| shorten(sentence, max_chars))
        .collect()
}

/// Whether `quote` occurs in `text`, to verify that a quote an LLM claims to cite really is in
/// the comments.
///
/// Both are normalised as in [`extract`] (Latin letters in any case, full-width ASCII as
/// ASCII, `’` as `'`), with every run of whitespace read as one space; quote marks (「」『』
/// `"` `'` “ ” ‘ ’ „ « ») and whitespace around `quote` are ignored. A quote that is empty after
/// that is never contained.
pub fn contains_quote(text: &str, quote: &str) -> bool {
    let quote = collapse_whitespace(&normalise(quote));
    let quote = quote.trim_matches(|c: char| c.is_whitespace() || QUOTE_MARKS.contains(&c));
    !quote.is_empty() && collapse_whitespace(&normalise(text)).contains(quote)
}

/// One candidate phrase: its tokens, all of one script.
struct Candidate {
    tokens: Vec<String>,
    japanese: bool,
}

impl Candidate {
    /// The phrase as shown (see [`Keyword::phrase`]).
    fn phrase(&self) -> String {
        if self.japanese {
            self.tokens.concat()
        } else {
            self.tokens.join(" ")
        }
    }
}

/// Collects candidate phrases: tokens are pushed to the phrase being built, which a delimiter,
/// a stopword or a change of script ends.
#[derive(Default)]
struct Phrases {
    done: Vec<Candidate>,
    tokens: Vec<String>,
    japanese: bool,
}

impl Phrases {
    fn push(&mut self, token: String, japanese: bool) {
        if self.japanese != japanese {
            self.end();
            self.japanese = japanese;
        }
        self.tokens.push(token);
    }

    fn end(&mut self) {
        if !self.tokens.is_empty() {
            self.done.push(Candidate {
                tokens: std::mem::take(&mut self.tokens),
                japanese: self.japanese,
            });
        }
    }
}

/// The candidate phrases of one text, in order.
fn candidates(text: &str) -> Vec<Candidate> {
    let chars: Vec<char> = normalise(text).chars().collect();
    let mut phrases = Phrases::default();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        let start = i;
        if is_japanese(c) {
            while chars.get(i).is_some_and(|&c| is_japanese(c)) {
                i += 1;
            }
            let run: String = chars.get(start..i).unwrap_or_default().iter().collect();
            for token in segmenter::tokenize(&run) {
                if stopwords::is_japanese(&token) {
                    phrases.end();
                } else {
                    phrases.push(token, true);
                }
            }
            // Japanese does not space its words: whatever follows the run ends the phrase.
            phrases.end();
        } else if is_word_char(c) {
            i += 1;
            while let Some(&next) = chars.get(i) {
                let joins = is_joiner(next) && chars.get(i + 1).is_some_and(|&c| is_word_char(c));
                if is_word_char(next) || is_mark(next) || joins {
                    i += 1;
                } else {
                    break;
                }
            }
            let word: String = chars.get(start..i).unwrap_or_default().iter().collect();
            if stopwords::is_english(&word) {
                phrases.end();
            } else {
                phrases.push(word, false);
            }
        } else {
            if !c.is_whitespace() || is_line_break(c) {
                phrases.end();
            }
            i += 1;
        }
    }
    phrases.end();
    phrases.done
}

/// `text` folded: full-width ASCII to ASCII, the ideographic space to a space, `’` to `'`,
/// letters lowercase.
fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let c = match c {
            '\u{FF01}'..='\u{FF5E}' => char::from_u32(u32::from(c) - 0xFEE0).unwrap_or(c),
            '\u{3000}' => ' ',
            '\u{2019}' => '\'',
            _ => c,
        };
        out.extend(c.to_lowercase());
    }
    out
}

/// `text` with every run of whitespace replaced by one space.
fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            if !in_space {
                out.push(' ');
            }
            in_space = true;
        } else {
            out.push(c);
            in_space = false;
        }
    }
    out
}

/// Kanji and kana, the characters handed to TinySegmenter: hiragana, katakana (with ー and the
/// iteration marks, but not the middle dot ・, which is punctuation), half-width katakana, CJK
/// ideographs (unified, extensions, compatibility) and 々 〆 〇 〻.
fn is_japanese(c: char) -> bool {
    matches!(c,
        '\u{3041}'..='\u{3096}' | '\u{3099}'..='\u{309F}' // hiragana
        | '\u{30A1}'..='\u{30FA}' | '\u{30FC}'..='\u{30FF}' | '\u{31F0}'..='\u{31FF}' // katakana
        | '\u{FF66}'..='\u{FF9F}' // half-width katakana
        | '\u{3005}'..='\u{3007}' | '\u{303B}'
        | '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}'
        | '\u{20000}'..='\u{3FFFF}')
}

/// A letter or digit of an English (non-Japanese) word.
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() && !is_japanese(c)
}

/// The characters allowed inside an English word, between two letters or digits.
fn is_joiner(c: char) -> bool {
    c == '\'' || c == '-'
}

/// Combining diacritical marks, which belong to the letter before them (a decomposed `é`).
fn is_mark(c: char) -> bool {
    matches!(c,
        '\u{0300}'..='\u{036F}' | '\u{1AB0}'..='\u{1AFF}' | '\u{1DC0}'..='\u{1DFF}'
        | '\u{20D0}'..='\u{20FF}' | '\u{FE20}'..='\u{FE2F}')
}

/// Line and paragraph breaks, which end phrases and sentences.
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// Whether `c` ends a sentence (see [`sentences_containing`]).
fn ends_sentence(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '。' | '！' | '？' | '．' | '｡') || is_line_break(c)
}

/// The sentences of `text`, as written, trimmed; no empty ones.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (at, c) in text.char_indices() {
        if ends_sentence(c) {
            let end = at + c.len_utf8();
            out.extend(text.get(start..end));
            start = end;
        }
    }
    out.extend(text.get(start..));
    out.into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Whether normalised `haystack` contains normalised `needle`, on word boundaries where the
/// needle starts or ends with an English word character.
fn contains_phrase(haystack: &str, needle: &str) -> bool {
    let check_start = needle.chars().next().is_some_and(is_word_char);
    let check_end = needle.chars().next_back().is_some_and(is_word_char);
    let mut from = 0;
    while let Some(at) = haystack
        .get(from..)
        .and_then(|rest| rest.find(needle))
        .map(|found| from + found)
    {
        let before = haystack.get(..at).unwrap_or_default();
        let after = haystack.get(at + needle.len()..).unwrap_or_default();
        let starts_word = !check_start || !continues_word(before.chars().rev());
        let ends_word = !check_end || !continues_word(after.chars());
        if starts_word && ends_word {
            return true;
        }
        // try again one character further on (matches may overlap)
        from = at
            + haystack
                .get(at..)
                .and_then(|s| s.chars().next())
                .map_or(1, char::len_utf8);
    }
    false
}

/// Whether the characters next to a match (walking away from it) continue an English word:
/// a letter, digit or combining mark, or `'`/`-` followed by a letter or digit.
fn continues_word(mut away: impl Iterator<Item = char>) -> bool {
    match away.next() {
        Some(c) if is_word_char(c) || is_mark(c) => true,
        Some(c) if is_joiner(c) => away.next().is_some_and(is_word_char),
        _ => false,
    }
}

/// `sentence` cut to at most `max_chars` characters, `…` marking a cut.
fn shorten(sentence: &str, max_chars: usize) -> String {
    if sentence.chars().nth(max_chars).is_none() {
        return sentence.to_string();
    }
    let kept: String = sentence.chars().take(max_chars.saturating_sub(1)).collect();
    let mut out = kept.trim_end().to_string();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn find<'a>(keywords: &'a [Keyword], phrase: &str) -> Option<&'a Keyword> {
        keywords.iter().find(|k| k.phrase == phrase)
    }

    fn phrases(keywords: &[Keyword]) -> Vec<&str> {
        keywords.iter().map(|k| k.phrase.as_str()).collect()
    }

    #[test]
    fn english_recurring_phrase_ranks_first() {
        let texts = [
            "The error handling is weak, and the tests are missing.",
            "Good structure. However, error handling is lacking!",
            "Error handling is absent; documentation is thin.",
            "Clear documentation and good structure.",
            "Poor error handling overall.",
        ];
        let keywords = extract(&texts, 10);
        let top = &keywords[0];
        assert_eq!(top.phrase, "error handling", "{keywords:#?}");
        assert_eq!(
            top.texts,
            [0, 1, 2],
            "text 4 has it only inside 'poor error handling'"
        );
        assert_eq!(top.occurrences, 3);
        // error: frequency 4, degree 2 + 2 + 2 + 3; handling the same
        assert!((top.score - 2.0 * 9.0 / 4.0).abs() < 1e-12, "{}", top.score);
        let good = find(&keywords, "good structure").expect("good structure");
        assert_eq!(good.texts, [1, 3]);
        assert!((good.score - 4.0).abs() < 1e-12);
        // phrases seen once are dropped when there are several texts
        assert!(find(&keywords, "poor error handling").is_none());
        assert!(find(&keywords, "weak").is_none());
        assert_eq!(phrases(&keywords), ["error handling", "good structure"]);
        // a single text keeps everything
        let single = extract(&texts[..1], 10);
        assert_eq!(
            phrases(&single),
            ["error handling", "missing", "tests", "weak"]
        );
        for k in keywords.iter().chain(&single) {
            let words: Vec<&str> = k.phrase.split(' ').collect();
            for edge in [words[0], words[words.len() - 1]] {
                assert!(
                    !stopwords::is_english(edge),
                    "{edge} at an edge of {}",
                    k.phrase
                );
            }
        }
        assert_eq!(extract(&texts, 1).len(), 1);
        assert!(extract(&texts, 0).is_empty());
        assert!(extract(&[], 5).is_empty());
    }

    #[test]
    fn ranking_is_deterministic_on_ties() {
        // every phrase scores 1 (single words); ties go to more texts, then the phrase
        let texts = ["beta. alpha. gamma", "alpha, beta", "alpha; gamma."];
        let keywords = extract(&texts, 10);
        assert_eq!(phrases(&keywords), ["alpha", "beta", "gamma"]);
        assert_eq!(keywords[0].texts, [0, 1, 2]);
        assert_eq!(keywords[1].texts, [0, 1]);
        assert_eq!(keywords[2].texts, [0, 2]);
    }

    #[test]
    fn english_words_with_joiners_digits_and_long_runs() {
        let texts = [
            "Well-structured code; don't repeat it. GPT-4 is used; 42!",
            "Well-structured code, GPT-4 again; 42 again.",
        ];
        let keywords = extract(&texts, 10);
        assert!(
            find(&keywords, "well-structured code").is_some(),
            "{keywords:#?}"
        );
        assert!(find(&keywords, "gpt-4").is_some());
        assert!(find(&keywords, "42").is_none(), "digits only");
        // more than four words: dropped whole
        let long = "alpha beta gamma delta epsilon";
        assert!(extract(&[long, long], 10).is_empty());
        let four = "alpha beta gamma delta";
        assert_eq!(phrases(&extract(&[four, four], 10)), [four]);
    }

    #[test]
    fn japanese_phrases_are_segmented_and_merged() {
        assert_eq!(
            segmenter::tokenize("構成は明確だが具体例がない"),
            ["構成", "は", "明確", "だ", "が", "具体", "例", "が", "ない"],
            "TinySegmenter cuts 具体例 here, and only here"
        );
        let texts = [
            "具体例が不足しています。構成は明確です。",
            "具体例が少なく、説得力に欠けます。",
            "構成は明確だが具体例がない。",
        ];
        let keywords = extract(&texts, 10);
        let example = find(&keywords, "具体例").expect("具体例");
        assert_eq!(example.texts, [0, 1, 2]);
        assert_eq!(example.occurrences, 3);
        // 具体 + 例 scores 4 (each word: degree 2, frequency 1) against 1 for the one token
        assert!((example.score - 4.0).abs() < 1e-12, "{}", example.score);
        assert_eq!(keywords[0].phrase, "具体例");
        // the best segmentation's score, whichever text comes first
        let reversed = extract(&[texts[2], texts[1], texts[0]], 10);
        let example = find(&reversed, "具体例").expect("具体例");
        assert!((example.score - 4.0).abs() < 1e-12, "{}", example.score);
        assert_eq!(example.texts, [0, 1, 2]);
        let structure = find(&keywords, "構成").expect("構成");
        assert_eq!(structure.texts, [0, 2]);
        assert!(find(&keywords, "明確").is_some());
        assert!(find(&keywords, "不足").is_none(), "once only");
        for k in &keywords {
            for particle in [
                "が", "は", "の", "に", "を", "で", "と", "も", "だ", "です", "ます",
            ] {
                assert!(
                    !k.phrase.starts_with(particle) && !k.phrase.ends_with(particle),
                    "{particle} at an edge of {}",
                    k.phrase
                );
            }
        }
    }

    #[test]
    fn japanese_particles_and_kana_words_split_compounds() {
        let texts = [
            "エラー処理の不足が目立つ。具体例があればより説得力が増します。",
            "エラー処理の不足は明らか。具体例があればより説得力が増します。",
        ];
        // TinySegmenter: 具体 的 … あれ ばより 説得 力 が 増し ます
        assert!(segmenter::tokenize("あればより説得力").contains(&"ばより".to_string()));
        let keywords = extract(&texts, 10);
        for phrase in ["エラー処理", "不足", "具体例", "説得力"] {
            let k = find(&keywords, phrase).unwrap_or_else(|| panic!("{phrase}: {keywords:#?}"));
            assert_eq!(k.texts, [0, 1]);
        }
        let hiragana = |c: char| ('\u{3041}'..='\u{309F}').contains(&c);
        for k in &keywords {
            assert!(!k.phrase.contains('の'), "{}", k.phrase);
            assert!(!k.phrase.chars().all(hiragana), "{}", k.phrase);
        }
        // a single text keeps single occurrences, but never a phrase of one character
        let single = extract(&["例：エラー処理の不足。x and y"], 10);
        assert_eq!(phrases(&single), ["エラー処理", "不足"]);
    }

    #[test]
    fn mixed_scripts_and_full_width_fold() {
        let texts = [
            "ＡＰＩの設計は良いが、APIのエラー処理が不足。Error handling!",
            "API設計のエラー処理を改善すべき。error handling again",
        ];
        let keywords = extract(&texts, 20);
        let api = find(&keywords, "api").expect("api");
        assert_eq!(api.texts, [0, 1]);
        assert_eq!(
            api.occurrences, 3,
            "ＡＰＩ, API and API (a script change ends 'api' before 設計)"
        );
        assert!(find(&keywords, "エラー処理").is_some());
        assert!(find(&keywords, "error handling").is_some());
        assert!(find(&keywords, "設計").is_some());
        for k in &keywords {
            let latin = k.phrase.chars().any(|c| c.is_ascii_alphanumeric());
            let japanese = k.phrase.chars().any(is_japanese);
            assert!(!(latin && japanese), "one script per phrase: {}", k.phrase);
        }
        assert_eq!(normalise("ＡＰＩ　Ｔｅｓｔ！"), "api test!");
    }

    #[test]
    fn sentences_containing_quotes_original_text() {
        let text = "The structure is clear.  Error \t handling is weak!\nAlso, ERROR HANDLING \
                    lacks tests? Rapid api-less code. See GraphAPI. The API is fine";
        assert_eq!(
            sentences_containing(text, "error handling", 200),
            [
                "Error \t handling is weak!",
                "Also, ERROR HANDLING lacks tests?"
            ]
        );
        assert_eq!(
            sentences_containing(text, "Error Handling", 10),
            ["Error \t h…", "Also, ERR…"]
        );
        for s in sentences_containing(text, "error handling", 10) {
            assert!(s.chars().count() <= 10);
            assert!(s.ends_with('…'));
        }
        // word boundaries for English: not in "Rapid", "api-less" or "GraphAPI"
        assert_eq!(sentences_containing(text, "api", 200), ["The API is fine"]);
        assert_eq!(
            sentences_containing(text, "ＡＰＩ", 200),
            ["The API is fine"]
        );
        assert!(sentences_containing(text, "  ", 200).is_empty());
        assert!(sentences_containing(text, "handl", 200).is_empty());

        let japanese = "具体例が不足しています。構成は明確です！\n具体例\n　";
        assert_eq!(
            sentences_containing(japanese, "具体例", 200),
            ["具体例が不足しています。", "具体例"]
        );
        assert_eq!(
            sentences_containing(japanese, "具体例", 4),
            ["具体例…", "具体例"]
        );
        assert_eq!(sentences_containing(japanese, "構成", 0), ["…"]);
        assert_eq!(
            sentences_containing(japanese, "明確", 200),
            ["構成は明確です！"]
        );
    }

    #[test]
    fn contains_quote_normalises_and_rejects_paraphrases() {
        let text = "The Error   handling\nis WEAK. 具体例が不足しています。ＡＰＩ設計は良い。";
        assert!(contains_quote(text, "「error handling is weak」"));
        assert!(contains_quote(text, "  \"ERROR HANDLING IS WEAK.\"  "));
        assert!(contains_quote(text, "“The error handling”"));
        assert!(contains_quote(text, "『具体例が不足しています』"));
        assert!(contains_quote(text, "api設計"));
        assert!(contains_quote(text, "ＡＰＩ設計は良い"));
        assert!(
            !contains_quote(text, "error handling is poor"),
            "a paraphrase"
        );
        assert!(!contains_quote(text, "具体例が足りない"), "a paraphrase");
        assert!(!contains_quote(text, ""));
        assert!(!contains_quote(text, "「」"));
        assert!(!contains_quote(text, " \" ' "));
    }

    /// Text mixing kana, kanji, Latin, emoji, combining marks, punctuation and spaces.
    fn mixed_text() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            prop::char::range('ぁ', 'ゖ'),
            prop::char::range('ァ', 'ヿ'),
            prop::char::range('一', '龥'),
            prop::char::range('ｦ', 'ﾟ'),
            prop::char::range('a', 'z'),
            prop::char::range('Ａ', 'ｚ'),
            prop::char::range('\u{1F300}', '\u{1FAFF}'),
            prop::char::range('\u{0300}', '\u{036F}'),
            prop::sample::select(vec![
                ' ', '\n', '\u{3000}', '\t', '.', '!', '?', '。', '、', '「', '」', '・', '-',
                '\'', '’', '"', '…', '\u{200D}', '\u{FE0F}', '\u{3099}', '\u{1}', '0', '9',
            ]),
        ];
        prop::collection::vec(piece, 0..80).prop_map(|chars| chars.into_iter().collect())
    }

    fn any_text() -> impl Strategy<Value = String> {
        prop_oneof![any::<String>(), mixed_text()]
    }

    proptest! {
        #[test]
        fn never_panics_and_keywords_are_consistent(
            texts in prop::collection::vec(any_text(), 0..6),
            max in 0usize..20,
        ) {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let keywords = extract(&refs, max);
            prop_assert!(keywords.len() <= max);
            for k in &keywords {
                prop_assert!(!k.texts.is_empty());
                prop_assert!(k.texts.windows(2).all(|w| w[0] < w[1]));
                prop_assert!(k.texts.iter().all(|&i| i < texts.len()));
                prop_assert!(k.occurrences >= k.texts.len());
                prop_assert!(k.score.is_finite() && k.score >= 1.0);
                prop_assert!(k.phrase.chars().count() >= 2);
                for &i in &k.texts {
                    // a keyword's own text quotes it
                    prop_assert!(contains_quote(&texts[i], &k.phrase), "{:?} in {:?}", k.phrase, texts[i]);
                }
            }
            prop_assert!(keywords.windows(2).all(|w| w[0].score >= w[1].score));
            prop_assert_eq!(&keywords, &extract(&refs, max));
        }

        #[test]
        fn helpers_never_panic(text in any_text(), other in any_text(), max_chars in 0usize..30) {
            for s in sentences_containing(&text, &other, max_chars) {
                prop_assert!(s.chars().count() <= max_chars.max(1));
                prop_assert!(!s.is_empty());
            }
            let _ = contains_quote(&text, &other);
            if !other.trim().is_empty() && !normalise(&other).chars().any(|c| QUOTE_MARKS.contains(&c)) {
                let joined = format!("{text}{other}");
                prop_assert!(contains_quote(&joined, &other));
            }
        }
    }
}
