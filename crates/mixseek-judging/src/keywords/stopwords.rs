//! Stopwords: the words that end a RAKE candidate phrase instead of joining it.
//!
//! English follows NLTK's list, the usual RAKE choice, with a few additions. Japanese has no
//! standard list that matches TinySegmenter's cuts, so the rule is made for them: every token
//! written in hiragana only is a stopword. In TinySegmenter's output those are particles (は が
//! を に で と の …), auxiliaries and inflection endings (です ます ない し て い …), formal
//! nouns (こと もの ため よう), demonstratives (これ その …), conjunctions (しかし また …), and
//! adverbs and verb forms that make poor keywords (しっかり あれば すべき; TinySegmenter even
//! returns fragments such as ばより); what is lost is the rare content word written in kana
//! (まとまり), while the terms that make a recurring criticism (具体例, エラー処理, 説得力) are
//! written with kanji or katakana. A short list adds function words written with kanji (及び 等
//! 点 場合 に対して 思う …). `的` is deliberately not one, so that 具体的 and 論理的 stay whole.

/// English stopwords: NLTK's English list (179 words) plus modal verbs, discourse
/// words (`however`, `overall`, …) and contractions, all lowercase (apostrophes as `'`, which
/// normalisation makes of `’`). Sorted, for a binary search.
#[rustfmt::skip]
pub(super) const ENGLISH: [&str; 245] = [
    "a", "about", "above", "across", "after", "again", "against", "ain", "all", "along", "also",
    "although", "am", "among", "an", "and", "any", "are", "aren", "aren't", "around", "as", "at",
    "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can",
    "can't", "cannot", "could", "couldn", "couldn't", "d", "did", "didn", "didn't", "do", "does",
    "doesn", "doesn't", "doing", "don", "don't", "down", "during", "each", "either", "etc", "even",
    "every", "few", "for", "from", "further", "had", "hadn", "hadn't", "has", "hasn", "hasn't",
    "have", "haven", "haven't", "having", "he", "he'd", "he'll", "he's", "hence", "her", "here",
    "here's", "hers", "herself", "him", "himself", "his", "how", "however", "i", "i'd", "i'll",
    "i'm", "i've", "if", "in", "into", "is", "isn", "isn't", "it", "it'd", "it'll", "it's", "its",
    "itself", "just", "let's", "ll", "m", "ma", "many", "may", "me", "might", "mightn", "mightn't",
    "more", "most", "much", "must", "mustn", "mustn't", "my", "myself", "needn", "needn't",
    "neither", "no", "nor", "not", "now", "o", "of", "off", "on", "once", "only", "or", "other",
    "our", "ours", "ourselves", "out", "over", "overall", "own", "per", "quite", "rather", "re",
    "really", "s", "same", "shall", "shan", "shan't", "she", "she'd", "she'll", "she's", "should",
    "should've", "shouldn", "shouldn't", "so", "some", "somewhat", "still", "such", "t", "than",
    "that", "that'll", "that's", "the", "their", "theirs", "them", "themselves", "then", "there",
    "there's", "therefore", "these", "they", "they'd", "they'll", "they're", "they've", "this",
    "those", "though", "through", "thus", "to", "too", "toward", "towards", "under", "until", "up",
    "upon", "ve", "very", "via", "was", "wasn", "wasn't", "we", "we'd", "we'll", "we're", "we've",
    "were", "weren", "weren't", "what", "what's", "when", "where", "whether", "which", "while",
    "who", "who's", "whom", "why", "will", "with", "within", "without", "won", "won't", "would",
    "wouldn", "wouldn't", "y", "yet", "you", "you'd", "you'll", "you're", "you've", "your", "yours",
    "yourself", "yourselves",
];

/// Japanese stopwords written with kanji (every token of hiragana only is a stopword by rule,
/// see [`is_japanese`]): compound particles, conjunctions, formal nouns, hedges (思い, 思う) and
/// auxiliaries, as TinySegmenter cuts them. Sorted, for a binary search.
#[rustfmt::skip]
pub(super) const JAPANESE: [&str; 38] = [
    "に対し", "に対して", "に対する", "に関し", "に関して", "に関する", "一方", "並びに", "事",
    "今回", "他", "以上", "以下", "以外", "全て", "全体", "出来", "出来る", "又", "又は", "及び",
    "場合", "少し", "思い", "思う", "思わ", "様", "点", "為", "特に", "等", "致し", "若しくは",
    "言う", "言え", "非常", "頂き", "頂く",
];

/// Whether an English token (lowercased) is a stopword.
pub(super) fn is_english(token: &str) -> bool {
    ENGLISH.binary_search(&token).is_ok()
}

/// Whether a Japanese token is a stopword: written in hiragana only, or one of [`JAPANESE`].
pub(super) fn is_japanese(token: &str) -> bool {
    token.chars().all(is_hiragana) || JAPANESE.binary_search(&token).is_ok()
}

/// Hiragana letters and their iteration marks (ゝ ゞ), with the combining (semi-)voiced marks.
fn is_hiragana(c: char) -> bool {
    matches!(c, '\u{3041}'..='\u{3096}' | '\u{3099}'..='\u{309F}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_sorted_unique_and_normalised() {
        for list in [&ENGLISH[..], &JAPANESE[..]] {
            assert!(
                list.windows(2).all(|w| w[0] < w[1]),
                "sorted, no duplicates"
            );
            assert!(
                list.iter()
                    .all(|w| !w.is_empty() && !w.contains(char::is_whitespace))
            );
        }
        let english = |c: char| c.is_ascii_lowercase() || c == '\'';
        assert!(ENGLISH.iter().all(|w| w.chars().all(english)));
        // hiragana-only words need no listing
        assert!(JAPANESE.iter().all(|w| !w.chars().all(is_hiragana)));
    }

    #[test]
    fn stopwords_recognised() {
        for w in [
            "the", "is", "should", "could", "would", "also", "very", "more", "don't",
        ] {
            assert!(is_english(w), "{w}");
        }
        for w in ["error", "handling", "structure", "api"] {
            assert!(!is_english(w), "{w}");
        }
        for w in [
            "は",
            "が",
            "の",
            "です",
            "ない",
            "こと",
            "ばより",
            "に対して",
            "及び",
            "点",
        ] {
            assert!(is_japanese(w), "{w}");
        }
        for w in ["具体例", "構成", "説得", "エラー", "的", "分かり", "読み"] {
            assert!(!is_japanese(w), "{w}");
        }
    }
}
