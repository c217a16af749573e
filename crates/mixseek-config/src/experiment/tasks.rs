//! An experiment's task set: JSON Lines (one object per line, blank lines skipped) or CSV
//! (a header row). Read as a stream, so a large file costs one pass and the tasks themselves;
//! every problem is reported with the task file's line (a CSV record's first line).

use super::Task;
use crate::issues::{ConfigIssue, closest};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// The most tasks a task set may hold.
pub const MAX_TASKS: usize = 1_000_000;

/// The most problems of one task set reported one by one; the rest are counted.
const MAX_REPORTED: usize = 100;

/// The fields of a task; any other JSON key or CSV column goes into its metadata.
const FIELDS: &[&str] = &["id", "prompt", "domain_context", "attachments", "metadata"];

/// The format of a task set, by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// `.jsonl`: one JSON object per line.
    JsonLines,
    /// `.csv`: a header row, then one task per record.
    Csv,
}

impl Format {
    /// The format of `path`, from its extension (any case).
    pub(crate) fn of(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "jsonl" => Some(Self::JsonLines),
            "csv" => Some(Self::Csv),
            _ => None,
        }
    }
}

/// What reading a task set found.
#[derive(Debug, Default)]
pub(crate) struct TaskSet {
    /// The valid tasks, in file order.
    pub tasks: Vec<Task>,
    /// Every problem (at most [`MAX_REPORTED`] one by one, then a count).
    pub issues: Vec<ConfigIssue>,
}

/// Collects the tasks and the problems of one file.
struct Reader<'a> {
    file: &'a Path,
    /// The folder attachment paths are relative to.
    dir: PathBuf,
    out: TaskSet,
    /// Problems beyond [`MAX_REPORTED`].
    suppressed: usize,
    /// Task id → the line it was first given on.
    seen: HashMap<String, usize>,
    /// Attachment path → its canonical path, or why it cannot be used.
    attachments: HashMap<PathBuf, Result<PathBuf, String>>,
    /// Task records read (valid or not).
    records: usize,
}

/// One task's fields before checks, with the key each came from.
#[derive(Default)]
struct Fields {
    id: Option<String>,
    prompt: Option<String>,
    domain_context: Option<String>,
    attachments: Vec<String>,
    metadata: serde_json::Map<String, serde_json::Value>,
}

impl<'a> Reader<'a> {
    fn new(file: &'a Path) -> Self {
        Self {
            file,
            dir: file.parent().map(Path::to_path_buf).unwrap_or_default(),
            out: TaskSet::default(),
            suppressed: 0,
            seen: HashMap::new(),
            attachments: HashMap::new(),
            records: 0,
        }
    }

    fn push(&mut self, issue: ConfigIssue) {
        if self.out.issues.len() < MAX_REPORTED {
            self.out.issues.push(issue.in_file(self.file));
        } else {
            self.suppressed += 1;
        }
    }

    /// A problem at `line` (and `column`, when known) about `key` of the task `id`.
    fn error(
        &mut self,
        line: usize,
        column: Option<usize>,
        key: &str,
        message: String,
        hint: Option<&str>,
    ) {
        let mut issue = ConfigIssue::new(key, message).at(line, column.unwrap_or(1));
        if column.is_none() {
            issue.column = None;
        }
        if let Some(h) = hint {
            issue = issue.with_hint(h);
        }
        self.push(issue);
    }

    /// Counts one more task record; false (with the error) beyond [`MAX_TASKS`].
    fn count_record(&mut self, line: usize) -> bool {
        self.records += 1;
        if self.records > MAX_TASKS {
            self.error(
                line,
                None,
                "",
                format!("the task set holds more than {MAX_TASKS} tasks"),
                Some("split it into several experiments"),
            );
            return false;
        }
        true
    }

    /// Checks one task's fields and keeps it when they are valid.
    fn finish(&mut self, line: usize, f: Fields) {
        let mut ok = true;
        let label = match &f.id {
            Some(id) => format!("task `{id}`"),
            None => "a task".to_string(),
        };
        match &f.id {
            None => {
                ok = false;
                self.error(
                    line,
                    None,
                    "id",
                    "a task without `id`".into(),
                    Some("give every task a unique `id` (a string or an integer)"),
                );
            }
            Some(id) if id.trim().is_empty() => {
                ok = false;
                self.error(line, None, "id", "the task id is empty".into(), None);
            }
            Some(id) if id.chars().any(char::is_control) => {
                ok = false;
                self.error(
                    line,
                    None,
                    "id",
                    format!("the task id {id:?} holds a control character"),
                    Some("ids are one line of printable text"),
                );
            }
            Some(id) => {
                if let Some(first) = self.seen.get(id).copied() {
                    ok = false;
                    self.error(
                        line,
                        None,
                        "id",
                        format!("duplicate task id `{id}` (first on line {first})"),
                        Some("give every task a unique id"),
                    );
                } else {
                    self.seen.insert(id.clone(), line);
                }
            }
        }
        match &f.prompt {
            None => {
                ok = false;
                self.error(
                    line,
                    None,
                    "prompt",
                    format!("{label} has no `prompt`"),
                    Some("every task needs the prompt the teams answer"),
                );
            }
            Some(p) if p.trim().is_empty() => {
                ok = false;
                self.error(
                    line,
                    None,
                    "prompt",
                    format!("{label} has an empty prompt"),
                    None,
                );
            }
            Some(_) => {}
        }
        let mut attachments = Vec::with_capacity(f.attachments.len());
        for (i, a) in f.attachments.iter().enumerate() {
            match self.attachment(a) {
                Ok(p) => attachments.push(p),
                Err(why) => {
                    ok = false;
                    let hint = format!(
                        "attachment paths are relative to the task file's folder ({})",
                        self.dir.display()
                    );
                    self.error(
                        line,
                        None,
                        &format!("attachments[{i}]"),
                        format!("{label}: {why}"),
                        Some(&hint),
                    );
                }
            }
        }
        if let (true, Some(id), Some(prompt)) = (ok, f.id, f.prompt) {
            self.out.tasks.push(Task {
                id,
                prompt,
                domain_context: f.domain_context,
                attachments,
                metadata: f.metadata,
                line,
            });
        }
    }

    /// The canonical path of an attachment (relative paths: to the task file's folder).
    fn attachment(&mut self, given: &str) -> Result<PathBuf, String> {
        if given.trim().is_empty() {
            return Err("an empty attachment path".into());
        }
        let path = self.dir.join(given);
        self.attachments
            .entry(path.clone())
            .or_insert_with(|| match std::fs::metadata(&path) {
                Ok(m) if m.is_dir() => Err(format!(
                    "attachment `{given}` is a directory: {}",
                    path.display()
                )),
                Ok(_) => Ok(std::fs::canonicalize(&path).unwrap_or(path.clone())),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
                    "attachment `{given}` not found: {}",
                    path.display()
                )),
                Err(e) => Err(format!(
                    "attachment `{given}` cannot be read ({e}): {}",
                    path.display()
                )),
            })
            .clone()
    }

    fn done(mut self) -> TaskSet {
        if self.records == 0 && self.out.issues.is_empty() {
            self.push(ConfigIssue::new("", "the task set is empty").with_hint(
                "a .jsonl task set holds one JSON object per line, a .csv one a header row and one row per task, each with at least `id` and `prompt`",
            ));
        }
        if self.suppressed > 0 {
            let n = self.suppressed;
            self.out.issues.push(
                ConfigIssue::new("", format!("{n} more problems in the task set, not shown"))
                    .in_file(self.file),
            );
        }
        self.out
    }
}

/// The name of a JSON value's type, for messages.
fn json_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// serde_json's message without its " at line 1 column 5" (the issue carries the position).
fn json_message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Reads a task set. `path` must exist (the caller reports a missing file at its key).
pub(crate) fn read(path: &Path, format: Format) -> TaskSet {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => {
            let mut r = Reader::new(path);
            r.push(ConfigIssue::new(
                "",
                format!("cannot read the task file: {e}"),
            ));
            return r.out;
        }
    };
    match format {
        Format::JsonLines => read_jsonl(path, BufReader::with_capacity(1 << 16, file)),
        Format::Csv => read_csv(path, LineMarks::new(file)),
    }
}

/// A reader that remembers which lines are empty. The csv crate skips empty lines but reports
/// the record after them at the first one's line (BurntSushi/rust-csv#208): its line is moved
/// past them.
struct LineMarks<R> {
    inner: R,
    /// Per line read so far (line 1 first): whether it is empty (`\r` aside).
    empty: Vec<bool>,
    /// Bytes of the current line so far (`\r` aside).
    current: usize,
}

impl<R> LineMarks<R> {
    fn new(inner: R) -> Self {
        Self {
            inner,
            empty: Vec::new(),
            current: 0,
        }
    }

    /// `line` (1-based) moved past the empty lines it may point at.
    fn fix(&self, line: u64) -> usize {
        let mut l = usize::try_from(line).unwrap_or(usize::MAX).max(1);
        while self.empty.get(l - 1).copied().unwrap_or(false) {
            l += 1;
        }
        l
    }
}

impl<R: Read> Read for LineMarks<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        for &b in buf.get(..n).unwrap_or_default() {
            match b {
                b'\n' => {
                    self.empty.push(self.current == 0);
                    self.current = 0;
                }
                b'\r' => {}
                _ => self.current += 1,
            }
        }
        Ok(n)
    }
}

fn read_jsonl(path: &Path, mut input: impl BufRead) -> TaskSet {
    let mut r = Reader::new(path);
    let mut buf = Vec::new();
    let mut line_no = 0usize;
    loop {
        buf.clear();
        match input.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                r.error(
                    line_no + 1,
                    None,
                    "",
                    format!("cannot read the task file: {e}"),
                    None,
                );
                break;
            }
        }
        line_no += 1;
        let mut bytes: &[u8] = &buf;
        if line_no == 1 {
            bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        }
        while let Some((last, rest)) = bytes.split_last() {
            if *last == b'\n' || *last == b'\r' {
                bytes = rest;
            } else {
                break;
            }
        }
        let text = match std::str::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => {
                let col = String::from_utf8_lossy(&bytes[..e.valid_up_to()])
                    .chars()
                    .count()
                    + 1;
                r.error(
                    line_no,
                    Some(col),
                    "",
                    "the line is not UTF-8 text".into(),
                    Some("save the task file as UTF-8"),
                );
                continue;
            }
        };
        if text.trim().is_empty() {
            continue;
        }
        if !r.count_record(line_no) {
            break;
        }
        let value: serde_json::Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                r.error(
                    line_no,
                    Some(e.column().max(1)),
                    "",
                    format!("invalid JSON: {}", json_message(&e)),
                    Some("each line of a .jsonl task set is one JSON object"),
                );
                continue;
            }
        };
        let serde_json::Value::Object(obj) = value else {
            r.error(
                line_no,
                None,
                "",
                format!("expected a JSON object, found {}", json_type(&value)),
                Some("each line is one task: {\"id\": ..., \"prompt\": ...}"),
            );
            continue;
        };
        if let Some(f) = jsonl_fields(&mut r, line_no, obj) {
            r.finish(line_no, f);
        }
    }
    r.done()
}

/// The fields of one JSON object; None (with the errors) when one has a wrong type.
fn jsonl_fields(
    r: &mut Reader<'_>,
    line: usize,
    obj: serde_json::Map<String, serde_json::Value>,
) -> Option<Fields> {
    use serde_json::Value;
    let mut f = Fields::default();
    let mut ok = true;
    let mut extra = serde_json::Map::new();
    let bad = |r: &mut Reader<'_>, key: &str, expected: &str, v: &Value| {
        r.error(
            line,
            None,
            key,
            format!("expected {expected}, found {}", json_type(v)),
            Some("fix the value's type"),
        );
    };
    for (k, v) in obj {
        match (k.as_str(), v) {
            (_, Value::Null) if FIELDS.contains(&k.as_str()) && k != "id" && k != "prompt" => {}
            ("id", Value::String(s)) => f.id = Some(s),
            ("id", Value::Number(n)) if n.is_i64() || n.is_u64() => f.id = Some(n.to_string()),
            ("id", v) => {
                ok = false;
                bad(r, "id", "a string or an integer", &v);
            }
            ("prompt", Value::String(s)) => f.prompt = Some(s),
            ("prompt", v) => {
                ok = false;
                bad(r, "prompt", "a string", &v);
            }
            ("domain_context", Value::String(s)) => f.domain_context = Some(s),
            ("domain_context", v) => {
                ok = false;
                bad(r, "domain_context", "a string", &v);
            }
            ("attachments", Value::Array(items)) => {
                for (i, item) in items.into_iter().enumerate() {
                    match item {
                        Value::String(s) => f.attachments.push(s),
                        other => {
                            ok = false;
                            bad(r, &format!("attachments[{i}]"), "a path (a string)", &other);
                        }
                    }
                }
            }
            ("attachments", v) => {
                ok = false;
                bad(r, "attachments", "an array of paths", &v);
            }
            ("metadata", Value::Object(m)) => f.metadata = m,
            ("metadata", v) => {
                ok = false;
                bad(r, "metadata", "an object", &v);
            }
            (_, v) => {
                extra.insert(k, v);
            }
        }
    }
    // An explicit `metadata` key wins over a top-level key of the same name.
    for (k, v) in extra {
        f.metadata.entry(k).or_insert(v);
    }
    if !ok {
        // The id still counts, so a later duplicate is reported.
        if let Some(id) = f.id {
            r.seen.entry(id).or_insert(line);
        }
        return None;
    }
    Some(f)
}

fn read_csv<R: Read>(path: &Path, input: LineMarks<R>) -> TaskSet {
    let mut r = Reader::new(path);
    let mut csv = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .buffer_capacity(1 << 16)
        .from_reader(input);
    let headers = match csv.headers() {
        Ok(h) => h.clone(),
        Err(e) => {
            csv_error(&mut r, &e, csv.get_ref());
            return r.done();
        }
    };
    let names: Vec<String> = headers
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let h = if i == 0 {
                h.trim_start_matches('\u{feff}')
            } else {
                h
            };
            h.trim().to_string()
        })
        .collect();
    if names.iter().all(String::is_empty) {
        return r.done();
    }
    let mut header_ok = true;
    for (i, n) in names.iter().enumerate() {
        if n.is_empty() {
            header_ok = false;
            r.error(
                1,
                None,
                "",
                format!("column {} has no name", i + 1),
                Some("the first row names every column: id, prompt and any others"),
            );
        } else if names[..i].contains(n) {
            header_ok = false;
            r.error(
                1,
                None,
                n,
                format!("the column `{n}` is given twice"),
                Some("name every column once"),
            );
        }
    }
    let col = |name: &str| names.iter().position(|n| n == name);
    for required in ["id", "prompt"] {
        if col(required).is_none() {
            header_ok = false;
            let others = names.iter().filter(|n| !FIELDS.contains(&n.as_str()));
            let hint = match closest(required, others.map(String::as_str)) {
                Some(c) => format!("did you mean `{c}`? The header row names the columns"),
                None => format!(
                    "the header row names the columns; found: {}",
                    names.join(", ")
                ),
            };
            r.error(
                1,
                None,
                required,
                format!("the task set has no `{required}` column"),
                Some(&hint),
            );
        }
    }
    if !header_ok {
        return r.done();
    }
    let (id_col, prompt_col) = (col("id"), col("prompt"));
    let (context_col, attach_col, meta_col) =
        (col("domain_context"), col("attachments"), col("metadata"));
    let mut record = csv::StringRecord::new();
    let mut last_line = 0u64;
    loop {
        match csv.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => {
                let line = e.position().map(|p| p.line());
                csv_error(&mut r, &e, csv.get_ref());
                // An error that does not move on (a read failure) ends the file.
                match line {
                    Some(l) if l > last_line && !e.is_io_error() => {
                        last_line = l;
                        continue;
                    }
                    _ => break,
                }
            }
        }
        let line = csv
            .get_ref()
            .fix(record.position().map_or(last_line + 1, |p| p.line()));
        last_line = line as u64;
        if record.iter().all(|f| f.trim().is_empty()) {
            continue;
        }
        if !r.count_record(line) {
            break;
        }
        let field = |c: Option<usize>| c.and_then(|c| record.get(c));
        let mut f = Fields {
            id: field(id_col).map(|s| s.trim().to_string()),
            prompt: field(prompt_col).map(str::to_string),
            domain_context: field(context_col)
                .filter(|s| !s.trim().is_empty())
                .map(str::to_string),
            attachments: field(attach_col)
                .map(|s| {
                    s.split(';')
                        .map(str::trim)
                        .filter(|a| !a.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            metadata: serde_json::Map::new(),
        };
        let mut ok = true;
        if let Some(m) = field(meta_col).filter(|s| !s.trim().is_empty()) {
            match serde_json::from_str::<serde_json::Value>(m) {
                Ok(serde_json::Value::Object(obj)) => f.metadata = obj,
                Ok(other) => {
                    ok = false;
                    r.error(
                        line,
                        None,
                        "metadata",
                        format!("expected a JSON object, found {}", json_type(&other)),
                        Some("the metadata column holds a JSON object, or is empty"),
                    );
                }
                Err(e) => {
                    ok = false;
                    r.error(
                        line,
                        None,
                        "metadata",
                        format!("invalid JSON: {}", json_message(&e)),
                        Some("the metadata column holds a JSON object, or is empty"),
                    );
                }
            }
        }
        for (i, name) in names.iter().enumerate() {
            if !FIELDS.contains(&name.as_str()) {
                let v = record.get(i).unwrap_or_default();
                f.metadata
                    .entry(name.clone())
                    .or_insert_with(|| serde_json::Value::String(v.to_string()));
            }
        }
        if ok {
            r.finish(line, f);
        } else if let Some(id) = f.id {
            r.seen.entry(id).or_insert(line);
        }
    }
    r.done()
}

/// A CSV error at its record's line.
fn csv_error<R>(r: &mut Reader<'_>, e: &csv::Error, marks: &LineMarks<R>) {
    let line = e.position().map_or(1, |p| marks.fix(p.line()));
    let (message, hint) = match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => (
            format!("the row has {len} fields, the header {expected_len}"),
            "quote a field that holds a comma: \"a, b\"",
        ),
        csv::ErrorKind::Utf8 { .. } => (
            "the row is not UTF-8 text".to_string(),
            "save the task file as UTF-8",
        ),
        _ => (format!("invalid CSV: {e}"), "fix the row"),
    };
    r.error(line, None, "", message, Some(hint));
}
