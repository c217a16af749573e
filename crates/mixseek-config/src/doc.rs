//! Reading one TOML file: syntax errors with line and column, a key → position index (so
//! later problems can point at the line), environment overlays, and typed deserialization
//! that reports every unknown key (with the closest valid key) and every wrong type.

use crate::issues::{ConfigIssue, Issues, closest};
use crate::source::{Source, SourceMap};
use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use toml::de::{DeTable, DeValue};

/// A parsed TOML file.
#[derive(Debug, Clone)]
pub struct TomlDoc {
    /// The file it was read from.
    pub path: PathBuf,
    /// Its text (CRLF line ends turned into LF).
    pub text: String,
    /// The parsed table.
    pub table: toml::Table,
    /// Dotted key path (`a.b[0].c`) → 1-based (line, column) of the key.
    positions: HashMap<String, (usize, usize)>,
}

/// 1-based line and column of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    LineStarts::new(text).line_col(offset)
}

/// Where each line of a text starts, so that positions of many keys cost a binary search
/// each instead of a scan from the top (an orchestrator file listing 1,000 teams has
/// thousands of keys).
struct LineStarts<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineStarts<'a> {
    fn new(text: &'a str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Self { text, starts }
    }

    fn line_col(&self, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self
            .starts
            .get(line.saturating_sub(1))
            .copied()
            .unwrap_or(0);
        let col = self.text[start..offset].chars().count() + 1;
        (line, col)
    }
}

fn index_table(
    lines: &LineStarts<'_>,
    prefix: &str,
    table: &DeTable<'_>,
    out: &mut HashMap<String, (usize, usize)>,
) {
    for (k, v) in table.iter() {
        let key = k.get_ref().as_ref();
        let path = if prefix.is_empty() {
            key.to_string()
        } else {
            format!("{prefix}.{key}")
        };
        out.entry(path.clone())
            .or_insert_with(|| lines.line_col(k.span().start));
        index_value(lines, &path, v.get_ref(), out);
    }
}

fn index_value(
    lines: &LineStarts<'_>,
    path: &str,
    v: &DeValue<'_>,
    out: &mut HashMap<String, (usize, usize)>,
) {
    match v {
        DeValue::Table(t) => index_table(lines, path, t, out),
        DeValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let p = format!("{path}[{i}]");
                out.entry(p.clone())
                    .or_insert_with(|| lines.line_col(item.span().start));
                index_value(lines, &p, item.get_ref(), out);
            }
        }
        _ => {}
    }
}

/// The bytes of `path`, which must be a regular file (reading a directory fails with an
/// obscure OS error, and a FIFO or `/dev/zero` would never end).
fn read_regular_file(path: &Path, what: &str) -> Result<Vec<u8>, ConfigIssue> {
    let fail = |msg: String| ConfigIssue::new("", msg).in_file(path);
    let meta = std::fs::metadata(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            fail(format!("{what} file not found"))
        } else {
            fail(format!("cannot read {what} file: {e}"))
        }
    })?;
    if meta.is_dir() {
        return Err(fail(format!("is a directory, not a {what} file"))
            .with_hint("name the TOML file itself"));
    }
    if !meta.is_file() {
        return Err(fail(format!(
            "is not a regular file (a device, pipe or socket), not a {what} file"
        ))
        .with_hint("name a TOML file"));
    }
    std::fs::read(path).map_err(|e| fail(format!("cannot read {what} file: {e}")))
}

/// The text of a file, which must be UTF-8 (as TOML requires); a byte-order mark is dropped.
fn decode_utf8(path: &Path, what: &str, bytes: Vec<u8>) -> Result<String, ConfigIssue> {
    match String::from_utf8(bytes) {
        Ok(text) => Ok(match text.strip_prefix('\u{feff}') {
            Some(rest) => rest.to_string(),
            None => text,
        }),
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let bytes = e.as_bytes();
            let prefix =
                std::str::from_utf8(bytes.get(..valid).unwrap_or_default()).unwrap_or_default();
            let (line, col) = line_col(prefix, valid);
            let byte = bytes.get(valid).copied().unwrap_or_default();
            Err(ConfigIssue::new(
                "",
                format!("the {what} file is not UTF-8 text (byte 0x{byte:02X})"),
            )
            .in_file(path)
            .at(line, col)
            .with_hint("save the file as UTF-8"))
        }
    }
}

impl TomlDoc {
    /// Reads and parses a file. `what` names the file kind in errors ("orchestrator config").
    /// A directory, a device or a pipe where the file is expected, unreadable bytes and text
    /// that is not UTF-8 are errors naming the file (and, for bad bytes, the line).
    pub fn read(path: &Path, what: &str) -> Result<Self, ConfigIssue> {
        let bytes = read_regular_file(path, what)?;
        let text = decode_utf8(path, what, bytes)?;
        Self::parse(path, &text)
    }

    /// Parses `text`, read from `path` (which only names the file in errors).
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigIssue> {
        // CRLF files parse like LF ones.
        let text = text.replace("\r\n", "\n");
        let table: toml::Table = toml::from_str(&text).map_err(|e| {
            let mut issue =
                ConfigIssue::new("", format!("invalid TOML syntax: {}", e.message().trim()))
                    .in_file(path)
                    .with_hint("fix the syntax at the position shown");
            if let Some(span) = e.span() {
                let (l, c) = line_col(&text, span.start);
                issue = issue.at(l, c);
            }
            issue
        })?;
        let mut positions = HashMap::new();
        if let Ok(spanned) = DeTable::parse(&text) {
            index_table(
                &LineStarts::new(&text),
                "",
                spanned.get_ref(),
                &mut positions,
            );
        }
        Ok(Self {
            path: path.to_path_buf(),
            text,
            table,
            positions,
        })
    }

    /// Position of a key, or of its nearest ancestor that has one.
    pub fn position(&self, key_path: &str) -> Option<(usize, usize)> {
        let mut p = key_path.to_string();
        loop {
            if let Some(pos) = self.positions.get(&p) {
                return Some(*pos);
            }
            let cut = p.rfind(['.', '['])?;
            p.truncate(cut);
        }
    }

    /// Records every leaf value of the file as coming from this file (with its line).
    pub(crate) fn record_sources(&self, sources: &mut SourceMap) {
        for (k, (line, _)) in &self.positions {
            sources.set(
                k.clone(),
                Source::File {
                    path: self.path.clone(),
                    line: *line,
                },
            );
        }
    }

    /// Attaches file and position to issues (from `from` on) whose key this file holds.
    pub fn locate(&self, issues: &mut Issues, from: usize) {
        for issue in issues.items.iter_mut().skip(from) {
            if issue.file.is_none() {
                issue.file = Some(self.path.clone());
                if issue.line.is_none() {
                    if let Some((l, c)) = self.position(&issue.key) {
                        issue.line = Some(l);
                        issue.column = Some(c);
                    }
                }
            }
        }
    }
}

fn ignored_path(p: &serde_ignored::Path<'_>) -> String {
    match p {
        serde_ignored::Path::Root => String::new(),
        serde_ignored::Path::Seq { parent, index } => format!("{}[{index}]", ignored_path(parent)),
        serde_ignored::Path::Map { parent, key } => {
            let parent = ignored_path(parent);
            if parent.is_empty() {
                key.clone()
            } else {
                format!("{parent}.{key}")
            }
        }
        serde_ignored::Path::Some { parent }
        | serde_ignored::Path::NewtypeStruct { parent }
        | serde_ignored::Path::NewtypeVariant { parent } => ignored_path(parent),
    }
}

fn error_path(p: &serde_path_to_error::Path) -> String {
    let mut out = String::new();
    for seg in p.iter() {
        match seg {
            serde_path_to_error::Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            serde_path_to_error::Segment::Map { key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            serde_path_to_error::Segment::Enum { variant } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(variant);
            }
            serde_path_to_error::Segment::Unknown => {}
        }
    }
    out
}

/// Removes the value at a dotted path (`a.b[0].c`) from a TOML value. Returns whether it did.
fn remove_path(root: &mut toml::Value, path: &str) -> bool {
    let mut segs: Vec<String> = Vec::new();
    for part in path.split('.') {
        let mut rest = part;
        if let Some(i) = rest.find('[') {
            segs.push(rest[..i].to_string());
            rest = &rest[i..];
            while let Some(end) = rest.find(']') {
                segs.push(rest[..=end].to_string());
                rest = &rest[end + 1..];
            }
        } else {
            segs.push(rest.to_string());
        }
    }
    segs.retain(|s| !s.is_empty());
    let Some((last, parents)) = segs.split_last() else {
        return false;
    };
    let mut cur = root;
    for s in parents {
        cur = match (s.strip_prefix('[').and_then(|x| x.strip_suffix(']')), cur) {
            (Some(i), toml::Value::Array(a)) => {
                match i.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                    Some(v) => v,
                    None => return false,
                }
            }
            (None, toml::Value::Table(t)) => match t.get_mut(s.as_str()) {
                Some(v) => v,
                None => return false,
            },
            _ => return false,
        };
    }
    match (
        last.strip_prefix('[').and_then(|x| x.strip_suffix(']')),
        cur,
    ) {
        (Some(i), toml::Value::Array(a)) => match i.parse::<usize>() {
            Ok(i) if i < a.len() => {
                a.remove(i);
                true
            }
            _ => false,
        },
        (None, toml::Value::Table(t)) => t.remove(last.as_str()).is_some(),
        _ => false,
    }
}

/// `v` with its `$ref` followed into `$defs` (and, for an `anyOf`, the arm that is a table).
fn schema_resolve<'a>(
    root: &'a serde_json::Value,
    v: &'a serde_json::Value,
) -> &'a serde_json::Value {
    if let Some(r) = v.get("$ref").and_then(|r| r.as_str()) {
        let name = r.rsplit('/').next().unwrap_or_default();
        if let Some(d) = root.get("$defs").and_then(|d| d.get(name)) {
            return schema_resolve(root, d);
        }
    }
    if let Some(any) = v.get("anyOf").and_then(|a| a.as_array()) {
        if let Some(obj) = any
            .iter()
            .map(|x| schema_resolve(root, x))
            .find(|x| x.get("properties").is_some())
        {
            return obj;
        }
    }
    v
}

/// The schema of the value at a dotted path (split by [`split_path`]), unresolved.
fn schema_at<'a>(schema: &'a serde_json::Value, path: &[&str]) -> Option<&'a serde_json::Value> {
    let mut cur = schema;
    for seg in path {
        let node = schema_resolve(schema, cur);
        cur = if seg.starts_with('[') {
            node.get("items")?
        } else if let Some(p) = node.get("properties").and_then(|p| p.get(*seg)) {
            p
        } else {
            node.get("additionalProperties").filter(|a| a.is_object())?
        };
    }
    Some(cur)
}

/// The keys a JSON schema allows at a dotted path (following `$ref`s into `$defs`).
pub(crate) fn schema_keys_at(schema: &serde_json::Value, path: &[&str]) -> Vec<String> {
    schema_at(schema, path)
        .map(|v| schema_resolve(schema, v))
        .and_then(|v| v.get("properties"))
        .and_then(|p| p.as_object())
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// The words a JSON schema allows at a dotted path when the value there is one of a fixed
/// set of strings (an enum of `crate::choice`, optional or not); empty otherwise.
pub(crate) fn schema_choices_at(schema: &serde_json::Value, path: &[&str]) -> Vec<String> {
    fn words(root: &serde_json::Value, v: &serde_json::Value, out: &mut Vec<String>) {
        let v = match v.get("$ref").and_then(|r| r.as_str()) {
            Some(r) => match root
                .get("$defs")
                .and_then(|d| d.get(r.rsplit('/').next().unwrap_or_default()))
            {
                Some(d) => d,
                None => return,
            },
            None => v,
        };
        if let Some(e) = v.get("enum").and_then(|e| e.as_array()) {
            out.extend(e.iter().filter_map(|x| x.as_str()).map(str::to_string));
        }
        if let Some(c) = v.get("const").and_then(|c| c.as_str()) {
            out.push(c.to_string());
        }
        for arms in ["oneOf", "anyOf"] {
            for arm in v.get(arms).and_then(|a| a.as_array()).into_iter().flatten() {
                words(root, arm, out);
            }
        }
    }
    let mut out = Vec::new();
    if let Some(v) = schema_at(schema, path) {
        words(schema, v, &mut out);
    }
    out
}

/// The value at a dotted path (`a.b[0].c`) of a TOML value.
fn value_at<'a>(root: &'a toml::Value, path: &str) -> Option<&'a toml::Value> {
    let mut cur = root;
    for seg in split_path(path) {
        cur = match seg.strip_prefix('[').and_then(|x| x.strip_suffix(']')) {
            Some(i) => cur.as_array()?.get(i.parse::<usize>().ok()?)?,
            None => cur.as_table()?.get(&seg)?,
        };
    }
    Some(cur)
}

/// The issue for a value at `key` that is not one of `choices`: the closest word ("did you
/// mean") and every word, instead of serde's "unknown variant".
fn choice_issue(
    key: String,
    value: Option<&toml::Value>,
    choices: &[String],
    msg: String,
) -> ConfigIssue {
    let list = format!("one of: {}", choices.join(", "));
    match value.and_then(toml::Value::as_str) {
        Some(word) => {
            let hint = match closest(word, choices.iter().map(String::as_str)) {
                Some(c) => format!("did you mean `{c}`? {list}"),
                None => list,
            };
            ConfigIssue::new(key, format!("unknown value `{word}`")).with_hint(hint)
        }
        // not a string (serde's text would be "invalid type: unit variant, expected string only")
        None => match value {
            Some(v) => ConfigIssue::new(key, format!("expected a string, found {}", v.type_str()))
                .with_hint(list),
            None => ConfigIssue::new(key, msg).with_hint(list),
        },
    }
}

pub(crate) fn split_path(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let mut rest = part;
        if let Some(i) = rest.find('[') {
            if i > 0 {
                out.push(rest[..i].to_string());
            }
            rest = &rest[i..];
            while let Some(end) = rest.find(']') {
                out.push(rest[..=end].to_string());
                rest = &rest[end + 1..];
            }
        } else if !rest.is_empty() {
            out.push(rest.to_string());
        }
    }
    out
}

/// Deserializes `value` into `T`, reporting unknown keys (with "did you mean") and wrong types
/// under `prefix` (the dotted path of `value` inside its file). Wrong-typed values are removed
/// one by one and deserialization retried, so every problem is reported, not only the first.
/// Returns `None` when the value could not be deserialized at all.
pub fn deserialize_section<T: DeserializeOwned + schemars::JsonSchema>(
    value: &toml::Value,
    prefix: &str,
    issues: &mut Issues,
) -> Option<T> {
    // Generating the schema costs more than reading a small file, and it only serves the
    // "did you mean" of unknown keys: built on the first one.
    let mut schema: Option<serde_json::Value> = None;
    let join = |p: &str| -> String {
        if prefix.is_empty() {
            p.to_string()
        } else if p.is_empty() {
            prefix.to_string()
        } else if p.starts_with('[') {
            format!("{prefix}{p}")
        } else {
            format!("{prefix}.{p}")
        }
    };
    let mut value = value.clone();
    for _ in 0..64 {
        let mut unknown: Vec<String> = Vec::new();
        let result = {
            let mut cb = |p: serde_ignored::Path<'_>| {
                unknown.push(ignored_path(&p));
            };
            let ignored = serde_ignored::Deserializer::new(value.clone(), &mut cb);
            serde_path_to_error::deserialize::<_, T>(ignored)
        };
        match result {
            Ok(v) => {
                for u in unknown {
                    let segs = split_path(&u);
                    let (last, parent) = match segs.split_last() {
                        Some((l, p)) => (l.clone(), p.to_vec()),
                        None => continue,
                    };
                    let parent_refs: Vec<&str> = parent.iter().map(String::as_str).collect();
                    let schema = schema.get_or_insert_with(|| {
                        serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default()
                    });
                    let known = schema_keys_at(schema, &parent_refs);
                    let mut issue = ConfigIssue::new(join(&u), "unknown key");
                    if let Some(s) = closest(&last, known.iter().map(String::as_str)) {
                        issue = issue.with_hint(format!("did you mean `{s}`?"));
                    } else if !known.is_empty() {
                        let mut k = known.clone();
                        k.sort();
                        issue = issue.with_hint(format!("valid keys here: {}", k.join(", ")));
                    }
                    issues.push(issue);
                }
                return Some(v);
            }
            Err(e) => {
                let path = error_path(e.path());
                let inner = e.into_inner();
                let msg = inner.message().trim().to_string();
                let schema = schema.get_or_insert_with(|| {
                    serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default()
                });
                let segs = split_path(&path);
                let seg_refs: Vec<&str> = segs.iter().map(String::as_str).collect();
                let choices = schema_choices_at(schema, &seg_refs);
                issues.push(if choices.is_empty() {
                    ConfigIssue::new(join(&path), msg).with_hint("fix the value's type")
                } else {
                    choice_issue(join(&path), value_at(&value, &path), &choices, msg)
                });
                if path.is_empty() || !remove_path(&mut value, &path) {
                    return None;
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, schemars::JsonSchema, Default)]
    #[serde(default)]
    struct Inner {
        max_rounds: u32,
        min_rounds: u32,
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema, Default)]
    #[serde(default)]
    struct Outer {
        inner: Inner,
        name: String,
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema, Default)]
    #[serde(default)]
    struct Policies {
        model: String,
        on_error: crate::OnJudgmentError,
        aggregate: Option<crate::Aggregate>,
        items: Vec<Inner2>,
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema, Default)]
    #[serde(default)]
    struct Inner2 {
        policy: crate::OnMetricError,
    }

    #[test]
    fn unknown_words_name_the_closest_and_every_valid_one() {
        let doc = TomlDoc::parse(
            Path::new("j.toml"),
            "model = \"m\"\non_error = \"contine\"\naggregate = 3\n[[items]]\npolicy = \"zzz\"\n",
        )
        .expect("ok");
        let mut issues = Issues::default();
        let v: Option<Policies> =
            deserialize_section(&toml::Value::Table(doc.table.clone()), "", &mut issues);
        doc.locate(&mut issues, 0);
        let v = v.expect("the rest loads");
        assert_eq!(v.on_error, crate::OnJudgmentError::Stop);
        let rendered: Vec<String> = issues.items.iter().map(|i| i.to_string()).collect();
        assert_eq!(
            rendered,
            [
                "j.toml:2:1: `on_error`: unknown value `contine` (did you mean `continue`? one of: stop, continue, fail)",
                "j.toml:3:1: `aggregate`: expected a string, found integer (one of: median, mean)",
                "j.toml:5:1: `items[0].policy`: unknown value `zzz` (one of: fail, skip)",
            ]
        );
    }

    #[test]
    fn line_starts_match_a_scan_from_the_top() {
        let text = "a = 1\n\n日本 = \"語\"\r\nlast";
        for offset in 0..=text.len() + 2 {
            let clamped = offset.min(text.len());
            if !text.is_char_boundary(clamped) {
                continue;
            }
            let before = &text[..clamped];
            let line = before.matches('\n').count() + 1;
            let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            assert_eq!(line_col(text, offset), (line, col), "offset {offset}");
        }
        // Inside a multi-byte character: the character's own position, no panic.
        assert_eq!(line_col("日本", 1), (1, 1));
    }

    #[test]
    fn syntax_errors_have_line_and_column() {
        let err = TomlDoc::parse(Path::new("o.toml"), "a = 1\nb = [1,\n").expect_err("bad");
        assert_eq!(err.file.as_deref(), Some(Path::new("o.toml")));
        assert!(err.line.is_some(), "{err}");
    }

    #[test]
    fn positions_follow_keys_and_array_items() {
        let doc =
            TomlDoc::parse(Path::new("o.toml"), "[x]\na = 1\n\n[[x.t]]\nc = 2\n").expect("ok");
        assert_eq!(doc.position("x.a"), Some((2, 1)));
        assert_eq!(doc.position("x.t[0].c"), Some((5, 1)));
        assert_eq!(
            doc.position("x.t[0].missing"),
            Some((5, 1)).filter(|_| false).or(doc.position("x.t[0]"))
        );
    }

    #[test]
    fn unknown_keys_get_suggestions_and_all_type_errors_are_reported() {
        let doc = TomlDoc::parse(
            Path::new("o.toml"),
            "name = 3\n[inner]\nmax_round = 3\nmin_rounds = \"two\"\n",
        )
        .expect("ok");
        let mut issues = Issues::default();
        let v: Option<Outer> =
            deserialize_section(&toml::Value::Table(doc.table.clone()), "", &mut issues);
        doc.locate(&mut issues, 0);
        assert!(v.is_some());
        let rendered: Vec<String> = issues.items.iter().map(|i| i.to_string()).collect();
        assert_eq!(issues.len(), 3, "{rendered:#?}");
        assert!(
            rendered.iter().any(|r| r.contains("o.toml:1:1: `name`")),
            "{rendered:#?}"
        );
        assert!(
            rendered
                .iter()
                .any(|r| r.contains("`inner.min_rounds`") && r.contains("o.toml:4:1")),
            "{rendered:#?}"
        );
        assert!(
            rendered
                .iter()
                .any(|r| r.contains("`inner.max_round`: unknown key (did you mean `max_rounds`?)")),
            "{rendered:#?}"
        );
    }
}
