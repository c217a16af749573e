//! Python's `textwrap.dedent(s).strip()`, used on judgment instructions.

/// Removes the whitespace prefix common to every non-blank line (lines of only whitespace
/// become empty), then trims both ends — as `textwrap.dedent(s).strip()`.
pub(crate) fn dedent_trim(s: &str) -> String {
    let lines: Vec<&str> = s.split('\n').collect();
    let mut prefix: Option<&str> = None;
    for line in &lines {
        if line.trim().is_empty() {
            continue;
        }
        let indent = &line[..line.len() - line.trim_start_matches([' ', '\t']).len()];
        prefix = Some(match prefix {
            None => indent,
            Some(p) => common_prefix(p, indent),
        });
    }
    let prefix = prefix.unwrap_or("");
    let out: Vec<&str> = lines
        .iter()
        .map(|l| {
            if l.trim().is_empty() {
                ""
            } else {
                l.strip_prefix(prefix).unwrap_or(l)
            }
        })
        .collect();
    out.join("\n").trim().to_string()
}

fn common_prefix<'a>(a: &'a str, b: &str) -> &'a str {
    let n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    &a[..n]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dedents_like_python() {
        assert_eq!(dedent_trim("\n    a\n      b\n\n    c\n"), "a\n  b\n\nc");
        assert_eq!(dedent_trim("  x\n\ty"), "x\n\ty");
        assert_eq!(
            dedent_trim("no indent\n  but this"),
            "no indent\n  but this"
        );
        assert_eq!(dedent_trim("   \n  "), "");
    }
}
