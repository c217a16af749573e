//! Building blocks of the text outputs: a small column/row model rendered as a comfy-table
//! (the heavy-header box style of the `mixseek exec` leaderboard) or as a Markdown table, CSV
//! from serializable rows, and value formatting.

use crate::error::{Result, StoreError};
use chrono::{DateTime, Utc};
use comfy_table::{
    CellAlignment, ContentArrangement, ContentLineStyle, LineStyle, Table, TableStyle,
};

/// Cell alignment of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Text columns.
    Left,
    /// Number columns (`---:` in Markdown).
    Right,
}

/// Column titles, alignments and rows of formatted cells.
#[derive(Debug, Clone, Default)]
pub struct Grid {
    /// Each column's title and alignment, in order.
    pub columns: Vec<(String, Align)>,
    /// The rows, one formatted cell per column.
    pub rows: Vec<Vec<String>>,
}

impl Grid {
    /// A grid with these columns and no rows.
    pub fn new(columns: &[(&str, Align)]) -> Self {
        Self {
            columns: columns
                .iter()
                .map(|(t, a)| ((*t).to_string(), *a))
                .collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row (one cell per column).
    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// A box-drawn table (no colours, no wrapping: stable in pipes and snapshots).
    pub fn to_table(&self) -> String {
        const STYLE: TableStyle = TableStyle::new()
            .top_border(LineStyle::new('┏', '━', '┳', '┓'))
            .header_lines(ContentLineStyle::new('┃', '┃', '┃'))
            .header_separator(LineStyle::new('┡', '━', '╇', '┩'))
            .content_lines(ContentLineStyle::new('│', '│', '│'))
            .bottom_border(LineStyle::new('└', '─', '┴', '┘'));
        let mut table = Table::new();
        table
            .load_style(STYLE)
            .set_content_arrangement(ContentArrangement::Disabled);
        table.set_header(
            self.columns
                .iter()
                .map(|(t, _)| t.clone())
                .collect::<Vec<_>>(),
        );
        for row in &self.rows {
            table.add_row(row.clone());
        }
        for (i, (_, align)) in self.columns.iter().enumerate() {
            if let Some(col) = table.column_mut(i) {
                col.set_cell_alignment(match align {
                    Align::Left => CellAlignment::Left,
                    Align::Right => CellAlignment::Right,
                });
            }
        }
        table.to_string()
    }

    /// A GitHub-flavoured Markdown table (pipes escaped, line breaks as `<br>`).
    pub fn to_markdown(&self) -> String {
        let cell = |s: &str| {
            md_inline(&s.replace('\\', "\\\\").replace('|', "\\|"))
                .replace("\r\n", "<br>")
                .replace('\n', "<br>")
        };
        let mut out = String::new();
        out.push('|');
        for (t, _) in &self.columns {
            out.push_str(&format!(" {} |", cell(t)));
        }
        out.push_str("\n|");
        for (_, a) in &self.columns {
            out.push_str(match a {
                Align::Left => " --- |",
                Align::Right => " ---: |",
            });
        }
        out.push('\n');
        for row in &self.rows {
            out.push('|');
            for c in row {
                out.push_str(&format!(" {} |", cell(c)));
            }
            out.push('\n');
        }
        out
    }
}

/// Text for Markdown outside code: `&`, `<`, `>` as entities, so stored text can never become
/// markup in a renderer (it displays the same).
pub fn md_inline(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A fenced code block that shows `s` verbatim (the fence is longer than any backtick run
/// inside).
pub fn md_fenced(s: &str) -> String {
    let mut run = 0;
    let mut max_run = 0;
    for c in s.chars() {
        if c == '`' {
            run += 1;
            max_run = max_run.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat((max_run + 1).max(3));
    let body = s.strip_suffix('\n').unwrap_or(s);
    format!("{fence}\n{body}\n{fence}\n")
}

/// RFC 4180 CSV of serializable flat rows (header from the field names). With no rows the
/// header comes from `header`.
pub fn csv_of<T: serde::Serialize>(rows: &[T], header: &[&str]) -> Result<String> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(true)
        .from_writer(Vec::new());
    if rows.is_empty() {
        w.write_record(header)
            .map_err(|e| StoreError::Export(e.to_string()))?;
    }
    for r in rows {
        w.serialize(r)
            .map_err(|e| StoreError::Export(e.to_string()))?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| StoreError::Export(e.to_string()))?;
    String::from_utf8(bytes).map_err(|e| StoreError::Export(e.to_string()))
}

/// Pretty JSON with a trailing newline.
pub fn json_of<T: serde::Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string_pretty(value)
        .map(|s| s + "\n")
        .map_err(|e| StoreError::Export(e.to_string()))
}

/// `2025-11-19 12:34:56 UTC`.
pub fn time(t: &DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// [`time`], or `—` for `None`.
pub fn opt_time(t: Option<&DateTime<Utc>>) -> String {
    t.map(time).unwrap_or_else(|| "—".into())
}

/// Scores always with two decimals (legacy 0–1 scores stay readable).
pub fn score(s: f64) -> String {
    format!("{s:.2}")
}

/// [`score`], or `—` for `None`.
pub fn opt_score(s: Option<f64>) -> String {
    s.map(score).unwrap_or_else(|| "—".into())
}

/// `$0.0123`, or `—` when nothing was priced.
pub fn cost(c: f64) -> String {
    if c == 0.0 {
        "—".into()
    } else {
        format!("${c:.4}")
    }
}

/// The first 8 characters of an execution id (any unique prefix is accepted back).
pub fn short_id(id: &str) -> String {
    id.chars().take(8).collect()
}

/// At most `max` characters on one line, with `…` when cut.
pub fn clip(text: &str, max: usize) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let mut s: String = one_line.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

/// `continue` / `stop` / `—`.
pub fn decision(should_continue: Option<bool>) -> String {
    match should_continue {
        Some(true) => "continue".into(),
        Some(false) => "stop".into(),
        None => "—".into(),
    }
}

/// The text, or `—` for `None` or an empty one.
pub fn or_dash(s: Option<&str>) -> String {
    s.filter(|s| !s.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| "—".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_escapes_pipes_and_newlines() {
        let mut g = Grid::new(&[("A", Align::Left), ("N", Align::Right)]);
        g.push(vec!["a|b\nc".into(), "1".into()]);
        assert_eq!(
            g.to_markdown(),
            "| A | N |\n| --- | ---: |\n| a\\|b<br>c | 1 |\n"
        );
    }

    #[test]
    fn markdown_never_carries_markup() {
        let mut g = Grid::new(&[("A", Align::Left)]);
        g.push(vec!["<script>x</script> & y".into()]);
        assert!(
            g.to_markdown()
                .contains("| &lt;script&gt;x&lt;/script&gt; &amp; y |")
        );
        assert_eq!(md_fenced("a ``` b"), "````\na ``` b\n````\n");
        assert_eq!(md_fenced("plain\n"), "```\nplain\n```\n");
    }

    #[test]
    fn clip_cuts_with_an_ellipsis() {
        assert_eq!(clip("日本語のテキスト", 5), "日本語の…");
        assert_eq!(clip("a\n  b", 10), "a b");
    }
}
