//! Structured output (seed 004): ask with the provider's native JSON-schema feature, parse,
//! validate against the schema (`jsonschema`), run the caller's check, and on failure
//! **repair** — show the model its raw output and the error and ask again, up to
//! `max_repairs` times. The final failure carries the raw output and the error kind
//! ([`Parse`](crate::ErrorKind::Parse), [`Schema`](crate::ErrorKind::Schema),
//! [`Check`](crate::ErrorKind::Check), or the transport kind of a failed call).
//!
//! One last resort before failing: an answer still cut off at the output token limit inside
//! a string is kept with that string closed, if it is then valid (see `cut_off`).

use crate::error::{ErrorKind, LlmError};
use crate::model::ChatModel;
use crate::types::{ChatRequest, ChatResponse, FinishReason, Message, ResponseSchema};
use mixseek_core::Usage;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

/// A check the caller runs on a schema-valid value; `Err(reason)` triggers a repair.
pub type CheckFn<T> = Box<dyn Fn(&T) -> Result<(), String> + Send + Sync>;

/// Options of [`generate_structured`] / [`generate_json`].
pub struct StructuredOptions<T> {
    /// Repair rounds after the first answer (default 2: at most 3 calls).
    pub max_repairs: u32,
    /// Extra check on the parsed value (e.g. a score in 0..=100).
    pub check: Option<CheckFn<T>>,
}

impl<T> Default for StructuredOptions<T> {
    fn default() -> Self {
        Self {
            max_repairs: 2,
            check: None,
        }
    }
}

impl<T> std::fmt::Debug for StructuredOptions<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StructuredOptions")
            .field("max_repairs", &self.max_repairs)
            .field("check", &self.check.is_some())
            .finish()
    }
}

impl<T> StructuredOptions<T> {
    /// The options with [`StructuredOptions::max_repairs`] set.
    pub fn with_max_repairs(mut self, n: u32) -> Self {
        self.max_repairs = n;
        self
    }
    /// The options with a check on the parsed value.
    pub fn with_check(
        mut self,
        check: impl Fn(&T) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.check = Some(Box::new(check));
        self
    }
}

/// A successful structured answer.
#[derive(Debug, Clone)]
pub struct Structured<T> {
    /// The parsed value.
    pub value: T,
    /// The validated JSON value.
    pub json: serde_json::Value,
    /// The model's raw output that was accepted.
    pub raw: String,
    /// The last (accepted) response.
    pub response: ChatResponse,
    /// Usage of all calls made (first answer and repairs).
    pub usage: Usage,
    /// HTTP attempts over all calls.
    pub attempts: u32,
    /// Repair rounds needed (0: the first answer was valid).
    pub repairs: u32,
}

/// The JSON schema of `T` as a value (schemars, draft 2020-12), generated once per type.
pub fn schema_of<T: JsonSchema + 'static>() -> serde_json::Value {
    use std::any::TypeId;
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static SCHEMAS: OnceLock<Mutex<HashMap<TypeId, serde_json::Value>>> = OnceLock::new();
    let schemas = SCHEMAS.get_or_init(Mutex::default);
    let lock = || {
        schemas
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    };
    if let Some(schema) = lock().get(&TypeId::of::<T>()) {
        return schema.clone();
    }
    let schema =
        serde_json::to_value(schemars::schema_for!(T)).unwrap_or(serde_json::Value::Bool(true));
    lock().insert(TypeId::of::<T>(), schema.clone());
    schema
}

/// Asks `model` for a `T`: the schema comes from `T`'s `JsonSchema` derive. See the module
/// docs for the repair loop. `request.response_schema` is replaced.
pub async fn generate_structured<T: JsonSchema + DeserializeOwned + 'static>(
    model: &dyn ChatModel,
    request: ChatRequest,
    options: StructuredOptions<T>,
) -> Result<Structured<T>, LlmError> {
    let schema = schema_of::<T>();
    let name = sanitize_name(&T::schema_name());
    let StructuredOptions { max_repairs, check } = options;
    let json_check = move |v: &serde_json::Value| -> Result<(), (ErrorKind, String)> {
        let t = T::deserialize(v).map_err(|e| {
            (
                ErrorKind::Schema,
                format!("does not match the expected type: {e}"),
            )
        })?;
        if let Some(c) = &check {
            c(&t).map_err(|e| (ErrorKind::Check, e))?;
        }
        Ok(())
    };
    let out = run(
        model,
        request,
        ResponseSchema { name, schema },
        max_repairs,
        &json_check,
    )
    .await?;
    let value = T::deserialize(&out.json).map_err(|e| {
        LlmError::new(
            ErrorKind::Schema,
            model.provider(),
            model_name(model),
            e.to_string(),
        )
        .with_raw_output(out.raw.clone())
    })?;
    Ok(Structured {
        value,
        json: out.json,
        raw: out.raw,
        response: out.response,
        usage: out.usage,
        attempts: out.attempts,
        repairs: out.repairs,
    })
}

/// Asks `model` for a JSON value following `schema` (e.g. a user's `--schema` file).
pub async fn generate_json(
    model: &dyn ChatModel,
    request: ChatRequest,
    name: &str,
    schema: serde_json::Value,
    options: StructuredOptions<serde_json::Value>,
) -> Result<Structured<serde_json::Value>, LlmError> {
    let StructuredOptions { max_repairs, check } = options;
    let json_check = move |v: &serde_json::Value| -> Result<(), (ErrorKind, String)> {
        if let Some(c) = &check {
            c(v).map_err(|e| (ErrorKind::Check, e))?;
        }
        Ok(())
    };
    let out = run(
        model,
        request,
        ResponseSchema {
            name: sanitize_name(name),
            schema,
        },
        max_repairs,
        &json_check,
    )
    .await?;
    Ok(Structured {
        value: out.json.clone(),
        json: out.json,
        raw: out.raw,
        response: out.response,
        usage: out.usage,
        attempts: out.attempts,
        repairs: out.repairs,
    })
}

struct RunOutput {
    json: serde_json::Value,
    raw: String,
    response: ChatResponse,
    usage: Usage,
    attempts: u32,
    repairs: u32,
}

type JsonCheck<'a> =
    dyn Fn(&serde_json::Value) -> Result<(), (ErrorKind, String)> + Send + Sync + 'a;

fn model_name(model: &dyn ChatModel) -> String {
    mixseek_core::model_id::model_of(model.id()).to_string()
}

async fn run(
    model: &dyn ChatModel,
    mut request: ChatRequest,
    schema: ResponseSchema,
    max_repairs: u32,
    check: &JsonCheck<'_>,
) -> Result<RunOutput, LlmError> {
    let validator = crate::validators::validator(&schema.schema).map_err(|e| {
        LlmError::new(
            ErrorKind::Config,
            model.provider(),
            model_name(model),
            format!("invalid response schema `{}`: {e}", schema.name),
        )
    })?;
    request.response_schema = Some(schema);
    // a repair goes after the request's own messages (not after the earlier repairs)
    let base_messages = request.messages.len();
    let mut usage = Usage::default();
    let mut attempts = 0u32;
    let mut repairs = 0u32;
    loop {
        let response = match model.chat(&request).await {
            Ok(r) => r,
            Err(e) => {
                let total = attempts + e.attempts;
                return Err(e.with_attempts(total));
            }
        };
        usage += response.usage;
        attempts += response.attempts;
        let raw = response.text_or_empty().to_string();
        let verdict = match answer_json(&raw, &response)
            .and_then(|json| accept(&validator, check, json))
        {
            // The last resort once the repairs are used up (see `cut_off`).
            Err((kind, message)) if repairs >= max_repairs => {
                match salvage_cut_off(&raw, kind, &response, &validator, check) {
                    Some(json) => {
                        tracing::warn!(
                            model = model.id(),
                            repairs,
                            "the answer was cut off at the output token limit (max_tokens) after every repair; kept it with its last string closed (it ends in `…`): raise max_tokens for complete answers"
                        );
                        Ok(json)
                    }
                    None => Err((kind, message)),
                }
            }
            v => v,
        };
        match verdict {
            Ok(json) => {
                return Ok(RunOutput {
                    json,
                    raw,
                    response,
                    usage,
                    attempts,
                    repairs,
                });
            }
            Err((kind, mut message)) => {
                if kind == ErrorKind::Parse && response.finish_reason == FinishReason::Length {
                    message.push_str(CUT_OFF);
                }
                if repairs >= max_repairs {
                    let provider = response
                        .model
                        .split_once(':')
                        .map_or("", |(p, _)| p)
                        .to_string();
                    let name = response
                        .model
                        .split_once(':')
                        .map_or(response.model.as_str(), |(_, m)| m)
                        .to_string();
                    let mut err = LlmError::new(kind, provider, name, message)
                        .with_raw_output(raw)
                        .with_attempts(attempts);
                    if repairs > 0 {
                        err.message = format!("{} (after {repairs} repair attempts)", err.message);
                    }
                    return Err(err);
                }
                repairs += 1;
                tracing::debug!(model = model.id(), kind = %kind, repair = repairs, "structured output invalid, asking for a repair");
                request.messages.truncate(base_messages);
                request.messages.push(Message::assistant(raw));
                request
                    .messages
                    .push(Message::user(repair_instruction(kind, &message)));
            }
        }
    }
}

/// `json` when it follows the schema and passes the caller's check.
fn accept(
    validator: &jsonschema::Validator,
    check: &JsonCheck<'_>,
    json: serde_json::Value,
) -> Result<serde_json::Value, (ErrorKind, String)> {
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .take(5)
        .map(|e| {
            let path = e.instance_path().to_string();
            if path.is_empty() {
                e.to_string()
            } else {
                format!("at `{path}`: {e}")
            }
        })
        .collect();
    if !errors.is_empty() {
        return Err((
            ErrorKind::Schema,
            format!("does not follow the schema: {}", errors.join("; ")),
        ));
    }
    check(&json)?;
    Ok(json)
}

/// The last resort for an answer that is still cut off at the output token limit when the
/// repairs are used up: its last string closed (see [`crate::cut_off`]), if that is then a
/// valid answer.
fn salvage_cut_off(
    raw: &str,
    kind: ErrorKind,
    response: &ChatResponse,
    validator: &jsonschema::Validator,
    check: &JsonCheck<'_>,
) -> Option<serde_json::Value> {
    if kind != ErrorKind::Parse || response.finish_reason != FinishReason::Length {
        return None;
    }
    let escaped = escape_controls_in_strings(raw);
    let closed = crate::cut_off::close(escaped.as_deref().unwrap_or(raw))?;
    let json = serde_json::from_str(&closed).ok()?;
    accept(validator, check, json).ok()
}

/// Added to the parse error of an answer that stopped at the output token limit: the JSON is
/// most likely incomplete, and the repair asks for a shorter answer.
const CUT_OFF: &str =
    "; the answer was cut off at the output token limit (max_tokens): answer with shorter strings";

/// The JSON of an answer's text; an answer without text that called tools instead says so.
fn answer_json(
    raw: &str,
    response: &ChatResponse,
) -> Result<serde_json::Value, (ErrorKind, String)> {
    if raw.trim().is_empty() && !response.tool_calls.is_empty() {
        let names: Vec<String> = response
            .tool_calls
            .iter()
            .map(|c| format!("`{}`", c.name))
            .collect();
        return Err((
            ErrorKind::Parse,
            format!(
                "the answer had no text: the model called {} instead of answering with the JSON object",
                names.join(", ")
            ),
        ));
    }
    parse_json(raw)
}

/// The message asking the model to fix its previous answer.
pub(crate) fn repair_instruction(kind: ErrorKind, error: &str) -> String {
    let what = match kind {
        ErrorKind::Parse => "was not valid JSON",
        ErrorKind::Schema => "did not follow the required JSON schema",
        _ => "was rejected",
    };
    format!(
        "Your previous answer {what}: {error}\n\nAnswer again with only the corrected JSON object: no explanation, no code fences, following the JSON schema exactly."
    )
}

/// Parses a model's JSON answer, tolerating code fences, text around one object, and raw
/// control characters (line breaks, tabs) inside strings.
///
/// The last one is what grammar-constrained servers produce: llama-cpp-python 0.3.x turns a
/// `response_format` schema into a grammar whose strings allow any character but `"` and `\`,
/// so a small model writes a multi-line comment as literal line breaks. That is not JSON, but
/// its meaning is unambiguous: such characters are read as if escaped. Everything else stays
/// strict (no `NaN`, no single quotes, no trailing commas).
pub fn parse_json(raw: &str) -> Result<serde_json::Value, (ErrorKind, String)> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err((ErrorKind::Parse, "the answer was empty".to_string()));
    }
    let first_err = match parse_lenient(trimmed) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    let unfenced = strip_fences(trimmed);
    if let Some(inner) = unfenced
        && let Ok(v) = parse_lenient(inner.trim())
    {
        return Ok(v);
    }
    if let (Some(start), Some(end)) = (trimmed.find('{'), trimmed.rfind('}'))
        && start < end
        && let Ok(v) = parse_lenient(&trimmed[start..=end])
    {
        return Ok(v);
    }
    Err((ErrorKind::Parse, format!("not valid JSON: {first_err}")))
}

/// `text` as JSON; when that fails, once more with the control characters inside its strings
/// escaped. The error is that of the last parse: once the control characters are escaped it
/// names what is still wrong (an answer cut off inside a string, say).
fn parse_lenient(text: &str) -> Result<serde_json::Value, serde_json::Error> {
    match serde_json::from_str(text) {
        Ok(v) => Ok(v),
        Err(e) => match escape_controls_in_strings(text) {
            Some(escaped) => serde_json::from_str(&escaped),
            None => Err(e),
        },
    }
}

/// `text` with every control character (U+0000..=U+001F) that stands inside a JSON string
/// literal written as its escape (`\n`, `\t`, `\u001b`, ...); `None` when there is none.
/// Control characters between tokens (whitespace) are left alone.
fn escape_controls_in_strings(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 16);
    let (mut in_string, mut escaped, mut changed) = (false, false, false);
    for c in text.chars() {
        if !in_string {
            in_string = c == '"';
            out.push(c);
            continue;
        }
        if escaped {
            escaped = false;
            out.push(c);
            continue;
        }
        match c {
            '\\' => {
                escaped = true;
                out.push(c);
            }
            '"' => {
                in_string = false;
                out.push(c);
            }
            '\n' => {
                changed = true;
                out.push_str("\\n");
            }
            '\r' => {
                changed = true;
                out.push_str("\\r");
            }
            '\t' => {
                changed = true;
                out.push_str("\\t");
            }
            c if u32::from(c) < 0x20 => {
                changed = true;
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    changed.then_some(out)
}

fn strip_fences(s: &str) -> Option<&str> {
    let start = s.find("```")?;
    let after = &s[start + 3..];
    let after = after
        .strip_prefix("json")
        .or_else(|| after.strip_prefix("JSON"))
        .unwrap_or(after);
    let end = after.rfind("```")?;
    Some(&after[..end])
}

fn sanitize_name(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if s.is_empty() {
        "response".to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_json_tolerates_fences_and_chatter() {
        assert_eq!(
            parse_json("{\"a\":1}").ok(),
            Some(serde_json::json!({"a":1}))
        );
        assert_eq!(
            parse_json("```json\n{\"a\":1}\n```").ok(),
            Some(serde_json::json!({"a":1}))
        );
        assert_eq!(
            parse_json("Sure! {\"a\": 2} hope it helps").ok(),
            Some(serde_json::json!({"a":2}))
        );
        assert_eq!(
            parse_json("nope").err().map(|e| e.0),
            Some(ErrorKind::Parse)
        );
        assert_eq!(parse_json("  ").err().map(|e| e.0), Some(ErrorKind::Parse));
    }

    /// llama-cpp-python's schema grammar lets a model write raw line breaks (and other control
    /// characters) inside strings: read as escaped, wherever the object is in the answer.
    #[test]
    fn raw_control_characters_inside_strings_are_read_as_escaped() {
        let raw = "{\"score\": 0, \"evaluator_comment\": \"line one\nline\ttwo\r\u{1b}end \\\"q\\\" \\\\\"}";
        assert_eq!(
            parse_json(raw).ok(),
            Some(
                serde_json::json!({"score": 0, "evaluator_comment": "line one\nline\ttwo\r\u{1b}end \"q\" \\"})
            )
        );
        let fenced = format!("```json\n{raw}\n```");
        assert_eq!(parse_json(&fenced).ok(), parse_json(raw).ok());
        let chatter = format!("Here:\n{raw}\nDone.");
        assert_eq!(parse_json(&chatter).ok(), parse_json(raw).ok());
        // Line breaks between tokens are whitespace, as always.
        assert_eq!(
            parse_json("{\n\"a\":\n\"x\ny\"\n}").ok(),
            Some(serde_json::json!({"a": "x\ny"}))
        );
        // Still strict otherwise, and the error names what is still wrong.
        let err = parse_json("{\"a\": \"x\ny\",}").err();
        assert_eq!(err.as_ref().map(|e| e.0), Some(ErrorKind::Parse));
        assert!(
            err.is_some_and(|e| e.1.contains("trailing comma")),
            "not the control character"
        );
        let cut = parse_json("{\"score\": 0, \"evaluator_comment\": \"one\ntwo").err();
        assert!(
            cut.is_some_and(|e| e.1.contains("EOF while parsing a string")),
            "an answer cut off inside a string says so"
        );
        assert_eq!(escape_controls_in_strings("{\"a\": \"b\"}\n"), None);
    }

    #[test]
    fn names_are_made_safe_for_openai() {
        assert_eq!(sanitize_name("Judgment Result<x>"), "Judgment_Result_x_");
        assert_eq!(sanitize_name(""), "response");
    }
}
