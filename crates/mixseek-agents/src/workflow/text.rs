//! The texts a workflow builds, byte for byte as the original builds them: the task-context
//! JSON every executor of a step receives, and the round's submission in its four forms
//! (`include_all_context` × `final_output_format`).
//!
//! The JSON is Python's `json.dumps(…, ensure_ascii=False)`: one line, `", "` and `": "` as
//! separators, keys in insertion order, non-ASCII written as is. Strings are escaped by
//! serde_json, whose escapes are Python's (`\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`, other
//! control characters as lowercase `\u00xx`).

use mixseek_config::FinalOutputFormat;
use mixseek_core::MemberStatus;

/// One executor's output, as later steps and the submission see it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StepOutput {
    pub(crate) executor_name: String,
    pub(crate) status: MemberStatus,
    /// `""` for an error.
    pub(crate) content: String,
    pub(crate) error_message: Option<String>,
}

/// A finished step: its id and its outputs in executor definition order.
pub(crate) type StepOutputs = (String, Vec<StepOutput>);

fn push_str(out: &mut String, s: &str) {
    // Serializing a &str cannot fail.
    out.push_str(&serde_json::to_string(s).unwrap_or_else(|_| String::from("\"\"")));
}

fn status_word(s: MemberStatus) -> &'static str {
    match s {
        MemberStatus::Success => "SUCCESS",
        MemberStatus::Error => "ERROR",
        MemberStatus::Warning => "WARNING",
    }
}

/// `{"step": [{"executor_name": …, "status": …, "content": …, "error_message": …}, …], …}`
fn push_steps(out: &mut String, steps: &[&StepOutputs]) {
    out.push('{');
    for (i, (id, outputs)) in steps.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        push_str(out, id);
        out.push_str(": [");
        for (j, o) in outputs.iter().enumerate() {
            if j > 0 {
                out.push_str(", ");
            }
            out.push_str("{\"executor_name\": ");
            push_str(out, &o.executor_name);
            out.push_str(", \"status\": ");
            push_str(out, status_word(o.status));
            out.push_str(", \"content\": ");
            push_str(out, &o.content);
            out.push_str(", \"error_message\": ");
            match &o.error_message {
                Some(m) => push_str(out, m),
                None => out.push_str("null"),
            }
            out.push('}');
        }
        out.push(']');
    }
    out.push('}');
}

/// The steps a step (or the submission) sees: all finished ones, or only the last.
fn visible(done: &[StepOutputs], include_all: bool) -> Vec<&StepOutputs> {
    if include_all {
        done.iter().collect()
    } else {
        done.last().into_iter().collect()
    }
}

/// The input of the next step: `{"user_prompt": …, "previous_steps": {…}}`.
pub(crate) fn task_context(user_prompt: &str, done: &[StepOutputs], include_all: bool) -> String {
    let mut out = String::with_capacity(user_prompt.len() + 64);
    out.push_str("{\"user_prompt\": ");
    push_str(&mut out, user_prompt);
    out.push_str(", \"previous_steps\": ");
    push_steps(&mut out, &visible(done, include_all));
    out.push('}');
    out
}

fn executor_text(o: &StepOutput, heading: &str) -> String {
    let header = if o.status == MemberStatus::Error {
        format!(
            "{heading} {} (ERROR: {})",
            o.executor_name,
            o.error_message.as_deref().unwrap_or("None")
        )
    } else {
        format!("{heading} {}", o.executor_name)
    };
    format!("{header}\n\n{}", o.content)
}

/// The round's submission (never containing the user prompt, so that later rounds' prompts
/// do not grow with it).
pub(crate) fn submission(
    done: &[StepOutputs],
    include_all: bool,
    format: FinalOutputFormat,
) -> String {
    match format {
        FinalOutputFormat::Json => {
            let mut out = String::from("{\"steps\": ");
            push_steps(&mut out, &visible(done, include_all));
            out.push('}');
            out
        }
        FinalOutputFormat::Text if include_all => done
            .iter()
            .map(|(id, outputs)| {
                let body: Vec<String> = outputs.iter().map(|o| executor_text(o, "###")).collect();
                format!("## {id}\n\n{}", body.join("\n\n"))
            })
            .collect::<Vec<_>>()
            .join("\n\n"),
        FinalOutputFormat::Text => done
            .last()
            .map(|(_, outputs)| {
                outputs
                    .iter()
                    .map(|o| executor_text(o, "##"))
                    .collect::<Vec<_>>()
                    .join("\n\n")
            })
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(name: &str, status: MemberStatus, content: &str, err: Option<&str>) -> StepOutput {
        StepOutput {
            executor_name: name.into(),
            status,
            content: content.into(),
            error_message: err.map(str::to_string),
        }
    }

    /// The two steps of the reference's examples (§1.8, §1.12).
    fn example() -> Vec<StepOutputs> {
        vec![
            (
                "research".into(),
                vec![
                    out("web", MemberStatus::Success, "結果A\n- item", None),
                    out("plain1", MemberStatus::Error, "", Some("boom")),
                ],
            ),
            (
                "format".into(),
                vec![out("fmt", MemberStatus::Success, "# 最終\n本文", None)],
            ),
        ]
    }

    #[test]
    fn task_context_is_pythons_json() {
        let steps = example();
        let prompt = "ユーザ\"タスク\"";
        assert_eq!(
            task_context(prompt, &[], true),
            r#"{"user_prompt": "ユーザ\"タスク\"", "previous_steps": {}}"#
        );
        let want = r#"{"user_prompt": "ユーザ\"タスク\"", "previous_steps": {"research": [{"executor_name": "web", "status": "SUCCESS", "content": "結果A\n- item", "error_message": null}, {"executor_name": "plain1", "status": "ERROR", "content": "", "error_message": "boom"}]}}"#;
        assert_eq!(task_context(prompt, &steps[..1], true), want);
        assert_eq!(task_context(prompt, &steps[..1], false), want);
        // after two steps, `false` shows only the second
        let only_last = task_context(prompt, &steps, false);
        assert!(only_last.contains("\"format\"") && !only_last.contains("\"research\""));
    }

    #[test]
    fn escapes_are_pythons() {
        let s = task_context("a\u{1}\u{7f}\u{2028}\t\\é", &[], true);
        assert_eq!(
            s,
            "{\"user_prompt\": \"a\\u0001\u{7f}\u{2028}\\t\\\\é\", \"previous_steps\": {}}"
        );
    }

    #[test]
    fn the_four_submissions() {
        let steps = example();
        assert_eq!(
            submission(&steps, true, FinalOutputFormat::Json),
            r##"{"steps": {"research": [{"executor_name": "web", "status": "SUCCESS", "content": "結果A\n- item", "error_message": null}, {"executor_name": "plain1", "status": "ERROR", "content": "", "error_message": "boom"}], "format": [{"executor_name": "fmt", "status": "SUCCESS", "content": "# 最終\n本文", "error_message": null}]}}"##
        );
        assert_eq!(
            submission(&steps, false, FinalOutputFormat::Json),
            r##"{"steps": {"format": [{"executor_name": "fmt", "status": "SUCCESS", "content": "# 最終\n本文", "error_message": null}]}}"##
        );
        assert_eq!(
            submission(&steps, true, FinalOutputFormat::Text),
            "## research\n\n### web\n\n結果A\n- item\n\n### plain1 (ERROR: boom)\n\n\n\n## format\n\n### fmt\n\n# 最終\n本文"
        );
        assert_eq!(
            submission(&steps, false, FinalOutputFormat::Text),
            "## fmt\n\n# 最終\n本文"
        );
        let none = vec![(
            "s".to_string(),
            vec![out("x", MemberStatus::Error, "", None)],
        )];
        assert_eq!(
            submission(&none, false, FinalOutputFormat::Text),
            "## x (ERROR: None)\n\n"
        );
    }

    /// The reference's golden (§1.8): the step-1 input of the default template, user prompt
    /// `最新のAIニュースを要約してください`, round 1, 2026-09-15T10:00:00+09:00.
    #[test]
    fn the_first_steps_input_matches_the_originals_golden() {
        use chrono::TimeZone;
        use mixseek_prompt::{FixedClock, PromptBuilder, PromptBuilderSettings, PromptContext};
        use sha2::{Digest, Sha256};
        let now = chrono::Utc
            .with_ymd_and_hms(2026, 9, 15, 1, 0, 0)
            .single()
            .expect("a time");
        let builder =
            PromptBuilder::with_zone(&PromptBuilderSettings::default(), chrono_tz::Asia::Tokyo)
                .expect("builder")
                .with_clock(std::sync::Arc::new(FixedClock(now)));
        let prompt = builder
            .render_team(&PromptContext {
                user_prompt: "最新のAIニュースを要約してください".into(),
                round_number: 1,
                team_id: "wf".into(),
                team_name: "WF".into(),
                ..Default::default()
            })
            .expect("render");
        let input = task_context(&prompt, &[], true);
        assert_eq!((input.chars().count(), input.len()), (785, 1651));
        let sha: String = Sha256::digest(input.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            sha,
            "35ebf43399353b554f65d0988c04c79d8ffc034fa06b2f29c61487c952b3e33a"
        );
    }
}
