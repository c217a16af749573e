//! The four formats of `mixseek member`'s result, as the original prints them (without its
//! colours): `structured`, `json`, `text` and `csv` (which, unlike the original's, quotes its
//! fields per RFC 4180).

use mixseek_agents::MemberRun;
use mixseek_core::MemberStatus;
use serde_json::{Map, Value, json};
use std::fmt::Write as _;

/// An output format of `mixseek member`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Structured,
    Json,
    Text,
    Csv,
}

impl Format {
    /// The format named `name`; `Err` is the original's message.
    pub(crate) fn parse(name: &str) -> Result<Self, String> {
        match name {
            "structured" => Ok(Format::Structured),
            "json" => Ok(Format::Json),
            "text" => Ok(Format::Text),
            "csv" => Ok(Format::Csv),
            other => Err(format!(
                "Unknown format '{other}'. Available formats: structured, json, text, csv"
            )),
        }
    }
}

/// `success`, `warning`, `error` (the original's result status values).
fn status_word(s: MemberStatus) -> &'static str {
    match s {
        MemberStatus::Success => "success",
        MemberStatus::Warning => "warning",
        MemberStatus::Error => "error",
    }
}

/// The result in `format`, ending with a newline.
pub(crate) fn render(run: &MemberRun, format: Format, verbose: bool) -> String {
    match format {
        Format::Structured => structured(run, verbose),
        Format::Json => format!("{}\n", json_text(run)),
        Format::Text => {
            let o = &run.output;
            if !o.content.is_empty() {
                format!("{}\n", o.content)
            } else if let Some(e) = o.error_message.as_deref().filter(|e| !e.is_empty()) {
                format!("Error: {e}\n")
            } else {
                "(No content)\n".into()
            }
        }
        Format::Csv => csv(run),
    }
}

fn elapsed_ms(run: &MemberRun) -> u64 {
    u64::try_from(run.elapsed.as_millis()).unwrap_or(u64::MAX)
}

fn iso(run: &MemberRun) -> String {
    run.timestamp
        .to_rfc3339_opts(chrono::SecondsFormat::Micros, false)
}

fn json_text(run: &MemberRun) -> String {
    let o = &run.output;
    let mut m = Map::new();
    m.insert("status".into(), json!(status_word(o.status)));
    m.insert("agent_name".into(), json!(run.name()));
    m.insert("agent_type".into(), json!(run.agent_type()));
    m.insert("content".into(), json!(o.content));
    m.insert("execution_time_ms".into(), json!(elapsed_ms(run)));
    m.insert("timestamp".into(), json!(iso(run)));
    if o.status == MemberStatus::Warning
        && let Some(w) = o.error_message.as_deref().filter(|w| !w.is_empty())
    {
        m.insert("warning_message".into(), json!(w));
    }
    if o.status == MemberStatus::Error
        && let Some(e) = o.error_message.as_deref().filter(|e| !e.is_empty())
    {
        m.insert("error_message".into(), json!(e));
    }
    if let Some(u) = run.usage_info() {
        m.insert("usage_info".into(), u);
    }
    m.insert("metadata".into(), run.metadata());
    if !o.messages.is_empty() {
        m.insert("all_messages".into(), Value::Array(o.messages.clone()));
    }
    crate::output::to_json_pretty(&Value::Object(m))
}

fn truncated(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

fn structured(run: &MemberRun, verbose: bool) -> String {
    let o = &run.output;
    let mut s = String::new();
    let rule = "=".repeat(60);
    let _ = writeln!(s, "{rule}\nMEMBER AGENT EXECUTION RESULT\n{rule}\n");
    let _ = writeln!(s, "Status: {}", status_word(o.status).to_uppercase());
    let _ = writeln!(s, "Agent: {} ({})", run.name(), run.agent_type());
    let _ = writeln!(s, "Execution Time: {}ms", elapsed_ms(run));
    let _ = writeln!(
        s,
        "Timestamp: {}",
        run.timestamp.format("%Y-%m-%d %H:%M:%S UTC")
    );
    let _ = writeln!(s, "\nResponse:\n{}", "-".repeat(40));
    if o.content.is_empty() {
        s.push_str("(No content)\n");
    } else {
        let _ = writeln!(s, "{}", o.content);
    }
    if o.status == MemberStatus::Warning
        && let Some(w) = o.error_message.as_deref().filter(|w| !w.is_empty())
    {
        let _ = writeln!(s, "\n⚠️  Warning:\n{w}");
    }
    if o.status == MemberStatus::Error
        && let Some(e) = o.error_message.as_deref().filter(|e| !e.is_empty())
    {
        let _ = writeln!(s, "\n❌ Error Details:\n{e}");
    }
    if verbose {
        let _ = writeln!(s, "\nExecution Details:\n{}", "-".repeat(40));
        let meta = run.metadata();
        let shown = |v: &Value| match v {
            Value::Null => "None".to_string(),
            Value::String(t) => t.clone(),
            other => other.to_string(),
        };
        let _ = writeln!(s, "  Model: {}", shown(&meta["model_id"]));
        let _ = writeln!(s, "  Temperature: {}", shown(&meta["temperature"]));
        let _ = writeln!(s, "  Max Tokens: {}", shown(&meta["max_tokens"]));
        if let Some(Value::Object(u)) = run.usage_info() {
            s.push_str("  Usage:\n");
            for (k, v) in u {
                let _ = writeln!(s, "    {k}: {v}");
            }
        }
        if !o.messages.is_empty() {
            let _ = writeln!(s, "\nMessage History:\n{}", "-".repeat(40));
            message_history(&mut s, &o.messages);
        }
    }
    let _ = writeln!(s, "\n{rule}");
    s
}

/// The original's verbose message history, from the stored pydantic-ai message JSON.
fn message_history(s: &mut String, messages: &[Value]) {
    let text = |v: &Value| match v {
        Value::String(t) => t.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    for (i, m) in messages.iter().enumerate() {
        let request = m["kind"] == "request";
        let _ = writeln!(
            s,
            "\n  [{}] {}",
            i + 1,
            if request {
                "ModelRequest"
            } else {
                "ModelResponse"
            }
        );
        if request {
            let _ = writeln!(
                s,
                "      Instructions: {}",
                truncated(&text(&m["instructions"]), 100)
            );
        } else {
            let _ = writeln!(s, "      Model: {}", text(&m["model_name"]));
            if m["usage"].is_object() {
                let _ = writeln!(
                    s,
                    "      Usage: input={}, output={}",
                    m["usage"]["input_tokens"], m["usage"]["output_tokens"]
                );
            }
        }
        for part in m["parts"].as_array().into_iter().flatten() {
            let kind = match part["part_kind"].as_str().unwrap_or_default() {
                "user-prompt" => "UserPromptPart",
                "tool-return" => "ToolReturnPart",
                "text" => "TextPart",
                "tool-call" => "ToolCallPart",
                "system-prompt" => "SystemPromptPart",
                other => other,
            }
            .to_string();
            let _ = writeln!(s, "      Part: {kind}");
            match kind.as_str() {
                "ToolCallPart" => {
                    let _ = writeln!(s, "        Tool: {}", text(&part["tool_name"]));
                    let args = crate::output::to_json_pretty(&part["args"]);
                    let indented: Vec<String> =
                        args.lines().map(|l| format!("          {l}")).collect();
                    let _ = writeln!(s, "        Args:\n{}", indented.join("\n"));
                }
                "ToolReturnPart" => {
                    let _ = writeln!(s, "        Tool Return: {}", text(&part["tool_name"]));
                    let _ = writeln!(
                        s,
                        "        Content: {}",
                        truncated(&text(&part["content"]), 200)
                    );
                }
                _ => {
                    let _ = writeln!(
                        s,
                        "        Content: {}",
                        truncated(&text(&part["content"]), 200)
                    );
                }
            }
        }
    }
}

/// One CSV field, quoted when it needs to be (RFC 4180).
fn csv_field(f: &str) -> String {
    if f.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", f.replace('"', "\"\""))
    } else {
        f.to_string()
    }
}

fn csv(run: &MemberRun) -> String {
    let fields = [
        iso(run),
        run.name().to_string(),
        run.agent_type(),
        status_word(run.output.status).to_string(),
        elapsed_ms(run).to_string(),
        run.output.content.chars().count().to_string(),
        String::new(),
    ];
    let row: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
    format!(
        "timestamp,agent_name,agent_type,status,execution_time_ms,content_length,error_code\n{}\n",
        row.join(",")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use mixseek_agents::MemberOutput;
    use mixseek_core::Usage;

    fn run(output: MemberOutput) -> MemberRun {
        MemberRun {
            settings: toml::from_str(
                "name = \"a,b\"\ntype = \"plain\"\nmodel = \"mock:x\"\ntemperature = 0.7",
            )
            .expect("settings"),
            output,
            elapsed: std::time::Duration::from_millis(1234),
            timestamp: chrono::DateTime::parse_from_rfc3339("2026-11-27T10:00:00Z")
                .expect("time")
                .with_timezone(&chrono::Utc),
        }
    }

    #[test]
    fn the_four_formats() {
        let ok = run(MemberOutput::success(
            "Hello \"world\"",
            Usage {
                input_tokens: 10,
                output_tokens: 5,
                requests: 1,
                ..Usage::default()
            },
            vec![],
        ));
        let s = render(&ok, Format::Structured, false);
        assert!(s.starts_with(&format!(
            "{r}\nMEMBER AGENT EXECUTION RESULT\n{r}\n\nStatus: SUCCESS\nAgent: a,b (plain)\nExecution Time: 1234ms\nTimestamp: 2026-11-27 10:00:00 UTC\n\nResponse:\n{d}\nHello \"world\"\n",
            r = "=".repeat(60),
            d = "-".repeat(40)
        )), "{s}");
        assert!(s.ends_with(&format!("\n\n{}\n", "=".repeat(60))), "{s}");
        let j: Value = serde_json::from_str(&render(&ok, Format::Json, false)).expect("json");
        assert_eq!(j["status"], "success");
        assert_eq!(j["execution_time_ms"], 1234);
        assert_eq!(j["timestamp"], "2026-11-27T10:00:00.000000+00:00");
        assert_eq!(
            j["usage_info"],
            json!({"total_tokens": 15, "prompt_tokens": 10, "completion_tokens": 5, "requests": 1})
        );
        assert_eq!(j["metadata"]["model_id"], "mock:x");
        assert!(j.get("error_message").is_none() && j.get("all_messages").is_none());
        assert_eq!(render(&ok, Format::Text, false), "Hello \"world\"\n");
        assert_eq!(
            render(&ok, Format::Csv, false),
            "timestamp,agent_name,agent_type,status,execution_time_ms,content_length,error_code\n2026-11-27T10:00:00.000000+00:00,\"a,b\",plain,success,1234,13,\n"
        );
        let err = run(MemberOutput::error(
            "Execution timeout after 3s",
            Usage::default(),
            vec![],
        ));
        let s = render(&err, Format::Structured, false);
        assert!(
            s.contains("Status: ERROR\n")
                && s.contains("(No content)\n\n❌ Error Details:\nExecution timeout after 3s\n"),
            "{s}"
        );
        assert_eq!(
            render(&err, Format::Text, false),
            "Error: Execution timeout after 3s\n"
        );
        assert!(Format::parse("yaml").is_err_and(
            |e| e == "Unknown format 'yaml'. Available formats: structured, json, text, csv"
        ));
    }
}
