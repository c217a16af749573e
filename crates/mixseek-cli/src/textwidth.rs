//! Terminal display width of text (wide CJK characters and emoji take two cells), and word
//! wrapping by display width — enough to reproduce the original's leaderboard table exactly.

/// Cells a character takes.
pub(crate) fn char_width(c: char) -> usize {
    let u = c as u32;
    match u {
        0 => 0,
        0x0300..=0x036F | 0x200B..=0x200F => 0,
        // The variation selector after ⚠ etc. is drawn as part of a two-cell emoji.
        0xFE0F => 1,
        0x1100..=0x115F
        | 0x2E80..=0x303E
        | 0x3041..=0x33FF
        | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF
        | 0xA000..=0xA4CF
        | 0xAC00..=0xD7A3
        | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F
        | 0xFF00..=0xFF60
        | 0xFFE0..=0xFFE6
        | 0x1F300..=0x1F64F
        | 0x1F680..=0x1F6FF
        | 0x1F900..=0x1F9FF
        | 0x20000..=0x3FFFD
        | 0x2705
        | 0x274C
        | 0x2B50
        | 0x23F1..=0x23F3 => 2,
        _ => 1,
    }
}

pub(crate) fn width(s: &str) -> usize {
    s.chars().map(char_width).sum()
}

/// Greedy word wrap to `max` cells; words longer than a line are split.
pub(crate) fn wrap(s: &str, max: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in s.split_whitespace() {
        let mut word = word.to_string();
        loop {
            let sep = if cur.is_empty() { 0 } else { 1 };
            if width(&cur) + sep + width(&word) <= max {
                if sep == 1 {
                    cur.push(' ');
                }
                cur.push_str(&word);
                break;
            }
            if !cur.is_empty() {
                lines.push(std::mem::take(&mut cur));
                continue;
            }
            // A word wider than a whole line: split it.
            let mut head = String::new();
            let mut rest = String::new();
            for ch in word.chars() {
                if rest.is_empty() && width(&head) + char_width(ch) <= max {
                    head.push(ch);
                } else {
                    rest.push(ch);
                }
            }
            lines.push(head);
            word = rest;
            if word.is_empty() {
                break;
            }
        }
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines
}

/// Left-aligns `s` in `w` cells.
pub(crate) fn pad_right(s: &str, w: usize) -> String {
    format!("{s}{}", " ".repeat(w.saturating_sub(width(s))))
}

/// Right-aligns `s` in `w` cells.
pub(crate) fn pad_left(s: &str, w: usize) -> String {
    format!("{}{s}", " ".repeat(w.saturating_sub(width(s))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_of_the_status_emoji() {
        assert_eq!(width("✅ Completed"), 12);
        assert_eq!(width("⚠️ Partial"), 10);
        assert_eq!(width("❌ Failed"), 9);
        assert_eq!(width("日本語"), 6);
    }

    #[test]
    fn wrapping() {
        assert_eq!(
            wrap("Beta Team With A Long Name", 20),
            vec!["Beta Team With A", "Long Name"]
        );
        assert_eq!(wrap("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 4), vec![""]);
    }
}
