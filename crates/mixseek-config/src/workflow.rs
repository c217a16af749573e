//! Workflow TOML (`[workflow]`, `[[workflow.steps]]`, `[[workflow.steps.executors]]`): a unit
//! that plays rounds like a team but with a fixed list of steps instead of a leader. Keys,
//! defaults and messages are the original's (mixseek-core 0.1.0a16+); `python` and the
//! `command` executor type are ours.

use crate::choice::MemberType;
use crate::issues::{ConfigIssue, Issues};
use crate::team::{Instruction, MemberSettings, duplicates, python_list};
use mixseek_core::TeamId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// The default model of a workflow's agent executors (the original's since 0.1.0a18).
pub const DEFAULT_WORKFLOW_MODEL: &str = "google-gla:gemini-flash-lite-latest";

/// A workflow TOML file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(default)]
pub struct WorkflowFile {
    /// The workflow.
    pub workflow: WorkflowSettings,
}

/// The format of a workflow round's submission (`final_output_format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FinalOutputFormat {
    /// `{"steps": {step_id: [outputs…]}}` as one line of JSON.
    #[default]
    Json,
    /// Markdown headings per step and executor, then each output's text.
    Text,
}

impl FinalOutputFormat {
    /// Every value, in the order the documentation lists them.
    pub const ALL: &'static [FinalOutputFormat] =
        &[FinalOutputFormat::Json, FinalOutputFormat::Text];
    /// The word as written in a configuration file.
    pub fn as_str(&self) -> &'static str {
        match self {
            FinalOutputFormat::Json => "json",
            FinalOutputFormat::Text => "text",
        }
    }
}

impl fmt::Display for FinalOutputFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `[workflow]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct WorkflowSettings {
    /// Unique id of the workflow within an execution; used as its `team_id` everywhere.
    #[schemars(with = "String")]
    pub workflow_id: TeamId,
    /// Display name; used as its `team_name` everywhere.
    pub workflow_name: String,
    /// `provider:model` of every agent executor that sets no `model`.
    pub default_model: String,
    /// `true`: every step receives the outputs of all previous steps, and the submission shows
    /// every step; `false`: only those of the step just before, and only the last step.
    pub include_all_context: bool,
    /// `json` or `text`: the format of the round's submission.
    pub final_output_format: FinalOutputFormat,
    /// The Python interpreter of this workflow's function executors (ours; default: the
    /// `MIXSEEK_PYTHON` variable, else `python3` on `PATH`).
    pub python: Option<String>,
    /// The steps, run one after another in this order.
    pub steps: Vec<WorkflowStep>,
}

impl Default for WorkflowSettings {
    fn default() -> Self {
        Self {
            workflow_id: TeamId::default(),
            workflow_name: String::new(),
            default_model: DEFAULT_WORKFLOW_MODEL.into(),
            include_all_context: true,
            final_output_format: FinalOutputFormat::Json,
            python: None,
            steps: Vec::new(),
        }
    }
}

/// `[[workflow.steps]]`: executors that run at the same time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(default)]
pub struct WorkflowStep {
    /// The step's id (unique in the workflow); the key of its outputs.
    pub id: String,
    /// The executors, all given the same input and run concurrently.
    pub executors: Vec<ExecutorSettings>,
}

/// What an executor is (`type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExecutorType {
    /// An LLM with no tools.
    Plain,
    /// An LLM with the provider's native web search.
    WebSearch,
    /// An LLM that fetches URLs itself.
    WebFetch,
    /// An LLM with the provider's native code execution.
    CodeExecution,
    /// The original's Python agent plugins: refused with what to use instead.
    Custom,
    /// A Python function (`plugin.module` or `plugin.path`, and `plugin.function`).
    Function,
    /// An external program with the command-member contract (ours).
    Command,
}

impl ExecutorType {
    /// Every value, in the order the documentation lists them.
    pub const ALL: &'static [ExecutorType] = &[
        ExecutorType::Plain,
        ExecutorType::WebSearch,
        ExecutorType::WebFetch,
        ExecutorType::CodeExecution,
        ExecutorType::Custom,
        ExecutorType::Function,
        ExecutorType::Command,
    ];
    /// The word as written in a configuration file.
    pub fn as_str(&self) -> &'static str {
        match self {
            ExecutorType::Plain => "plain",
            ExecutorType::WebSearch => "web_search",
            ExecutorType::WebFetch => "web_fetch",
            ExecutorType::CodeExecution => "code_execution",
            ExecutorType::Custom => "custom",
            ExecutorType::Function => "function",
            ExecutorType::Command => "command",
        }
    }
    /// The member type of an agent executor (`None` for a function).
    pub fn member_type(&self) -> Option<MemberType> {
        match self {
            ExecutorType::Plain => Some(MemberType::Plain),
            ExecutorType::WebSearch => Some(MemberType::WebSearch),
            ExecutorType::WebFetch => Some(MemberType::WebFetch),
            ExecutorType::CodeExecution => Some(MemberType::CodeExecution),
            ExecutorType::Custom => Some(MemberType::Custom),
            ExecutorType::Command => Some(MemberType::Command),
            ExecutorType::Function => None,
        }
    }
    /// An LLM agent (calls a model).
    pub fn is_llm(&self) -> bool {
        !matches!(
            self,
            ExecutorType::Function | ExecutorType::Command | ExecutorType::Custom
        )
    }
}

impl fmt::Display for ExecutorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `plugin` table of an executor: a function's `module` or `path` and `function`, or a
/// custom agent's `agent_module` / `path` / `agent_class`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(default)]
pub struct PluginSettings {
    /// Function: a module on Python's import path (`my_pkg.formatters`).
    pub module: Option<String>,
    /// Function or custom agent: a Python file (relative paths: from the current directory).
    pub path: Option<String>,
    /// Function: the name of the callable in the module or file.
    pub function: Option<String>,
    /// Custom agent: its module.
    pub agent_module: Option<String>,
    /// Custom agent: its class.
    pub agent_class: Option<String>,
}

/// `[[workflow.steps.executors]]`: an agent (`plain`, `web_search`, `web_fetch`,
/// `code_execution`), a Python function (`function`) or a program (`command`). Each type
/// accepts only its own keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(default)]
pub struct ExecutorSettings {
    /// The executor's name (letters, digits, `-`, `_`, `.`; unique in its step).
    pub name: String,
    /// `plain`, `web_search`, `web_fetch`, `code_execution`, `function` or `command`.
    #[serde(rename = "type")]
    pub executor_type: Option<ExecutorType>,
    /// Agents: `provider:model`; unset ⇒ the workflow's `default_model`.
    pub model: Option<String>,
    /// Agents: system instruction; unset ⇒ the bundled default of the type.
    pub system_instruction: Option<String>,
    /// Agents: an additional system prompt.
    pub system_prompt: Option<String>,
    /// Agents: sampling temperature (0.0..=2.0).
    pub temperature: Option<f64>,
    /// Agents: output token limit (> 0).
    pub max_tokens: Option<u64>,
    /// Agents: per-request timeout; functions and commands: the time limit of one call (≥ 1).
    pub timeout_seconds: Option<u64>,
    /// Agents: retries of invalid tool calls (default 3).
    pub max_retries: Option<u32>,
    /// Agents: stop sequences.
    pub stop_sequences: Option<Vec<String>>,
    /// Agents: nucleus sampling (0.0..=1.0).
    pub top_p: Option<f64>,
    /// Agents: sampling seed.
    pub seed: Option<i64>,
    /// Agents: settings passed through to the model request.
    pub model_settings: Option<serde_json::Map<String, serde_json::Value>>,
    /// Agents: settings passed through to Google models only.
    pub google_model_settings: Option<serde_json::Map<String, serde_json::Value>>,
    /// Functions: `module` or `path`, and `function`.
    pub plugin: Option<PluginSettings>,
    /// Agents: per-type tool settings, as for members.
    pub tool_settings: BTreeMap<String, serde_json::Value>,
    /// Agents and commands: free-form metadata.
    pub metadata: Option<serde_json::Value>,
    /// The original's informational `dev` / `staging` / `prod`; no effect.
    pub environment: Option<crate::Environment>,
    /// Commands: the program and its arguments (ours; the command-member contract).
    pub command: Option<Vec<String>>,
    /// Functions: the Python interpreter (ours; default: the workflow's `python`, then
    /// `MIXSEEK_PYTHON`, then `python3`).
    pub python: Option<String>,
    /// Agents: models tried in order when the primary model keeps failing (ours).
    pub fallback_models: Vec<String>,
}

/// The keys each executor kind accepts, besides `name`, `type` and `environment`.
const AGENT_KEYS: &[&str] = &[
    "model",
    "system_instruction",
    "system_prompt",
    "temperature",
    "max_tokens",
    "timeout_seconds",
    "max_retries",
    "stop_sequences",
    "top_p",
    "seed",
    "model_settings",
    "google_model_settings",
    "plugin",
    "tool_settings",
    "metadata",
    "fallback_models",
];
const FUNCTION_KEYS: &[&str] = &["plugin", "timeout_seconds", "python"];
const COMMAND_KEYS: &[&str] = &["command", "timeout_seconds", "metadata"];

impl ExecutorSettings {
    /// The keys written in this executor (those the types tell apart).
    fn written_keys(&self) -> Vec<&'static str> {
        let mut k = Vec::new();
        let mut add = |set: bool, key: &'static str| {
            if set {
                k.push(key);
            }
        };
        add(self.model.is_some(), "model");
        add(self.system_instruction.is_some(), "system_instruction");
        add(self.system_prompt.is_some(), "system_prompt");
        add(self.temperature.is_some(), "temperature");
        add(self.max_tokens.is_some(), "max_tokens");
        add(self.timeout_seconds.is_some(), "timeout_seconds");
        add(self.max_retries.is_some(), "max_retries");
        add(self.stop_sequences.is_some(), "stop_sequences");
        add(self.top_p.is_some(), "top_p");
        add(self.seed.is_some(), "seed");
        add(self.model_settings.is_some(), "model_settings");
        add(
            self.google_model_settings.is_some(),
            "google_model_settings",
        );
        add(self.plugin.is_some(), "plugin");
        add(!self.tool_settings.is_empty(), "tool_settings");
        add(self.metadata.is_some(), "metadata");
        add(self.command.is_some(), "command");
        add(self.python.is_some(), "python");
        add(!self.fallback_models.is_empty(), "fallback_models");
        k
    }

    /// The model an agent executor calls: its own, else the workflow's default.
    pub fn effective_model(&self, default_model: &str) -> String {
        self.model
            .clone()
            .unwrap_or_else(|| default_model.to_string())
    }

    /// The member settings an agent or command executor runs with (the member
    /// implementations are shared with team mode). `None` for a function.
    pub fn to_member(&self, default_model: &str) -> Option<MemberSettings> {
        let member_type = self.executor_type?.member_type()?;
        let is_command = member_type == MemberType::Command;
        Some(MemberSettings {
            name: Some(self.name.clone()),
            agent_type: Some(member_type),
            model: (!is_command).then(|| self.effective_model(default_model)),
            system_instruction: self.system_instruction.clone().map(Instruction),
            system_prompt: self.system_prompt.clone(),
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            timeout_seconds: self.timeout_seconds,
            max_retries: self.max_retries,
            stop_sequences: self.stop_sequences.clone(),
            top_p: self.top_p,
            seed: self.seed,
            tool_settings: self.tool_settings.clone(),
            metadata: self.metadata.clone(),
            command: self.command.clone(),
            fallback_models: self.fallback_models.clone(),
            model_settings: self.model_settings.clone(),
            google_model_settings: self.google_model_settings.clone(),
            ..MemberSettings::default()
        })
    }

    /// Adds this executor's problems to `issues`, keys under `prefix`.
    fn validate(&self, prefix: &str, issues: &mut Issues) {
        if !valid_executor_name(&self.name) {
            issues.error_hint(
                prefix,
                "name",
                format!(
                    "Executor 名 '{}' が不正です。英数字・ハイフン・アンダースコア・ドットのみ使用可能",
                    self.name
                ),
                "use letters, digits, `-`, `_` and `.` (e.g. name = \"formatter\")",
            );
        }
        let Some(t) = self.executor_type else {
            issues.error_hint(
                prefix,
                "type",
                "Unable to extract tag using discriminator 'type'",
                format!(
                    "every executor names its type: one of {}",
                    crate::choice::one_of(ExecutorType::ALL)
                ),
            );
            return;
        };
        let allowed = match t {
            ExecutorType::Function => FUNCTION_KEYS,
            ExecutorType::Command => COMMAND_KEYS,
            _ => AGENT_KEYS,
        };
        for key in self.written_keys() {
            if !allowed.contains(&key) {
                let mut keys: Vec<&str> = allowed.to_vec();
                keys.sort_unstable();
                issues.error_hint(
                    prefix,
                    key,
                    format!(
                        "`{key}` is not a key of a `{t}` executor (Extra inputs are not permitted)"
                    ),
                    format!(
                        "a `{t}` executor accepts name, type, environment, {}",
                        keys.join(", ")
                    ),
                );
            }
        }
        match t {
            ExecutorType::Function => self.validate_function(prefix, issues),
            ExecutorType::Command => {
                if self
                    .command
                    .as_ref()
                    .is_none_or(|c| c.first().is_none_or(|p| p.trim().is_empty()))
                {
                    issues.error_hint(
                        prefix,
                        "command",
                        "type = \"command\" needs a command",
                        "command = [\"python3\", \"step.py\"]",
                    );
                }
            }
            ExecutorType::Custom => issues.error_hint(
                prefix,
                "type",
                "type = \"custom\" (Python agent plugins) is not supported",
                "write the agent as a program and use type = \"command\" with command = [\"python3\", \"agent.py\"], or a Python function with type = \"function\"",
            ),
            _ => {
                if let Some(m) = &self.model
                    && !m.contains(':')
                {
                    issues.error_hint(
                        prefix,
                        "model",
                        format!("Invalid model format: '{m}'. Expected format: 'provider:model-name'"),
                        "model = \"provider:model\" (e.g. \"openai:gpt-4o\")",
                    );
                }
            }
        }
        issues.opt_range_f64(prefix, "temperature", self.temperature, 0.0, 2.0);
        issues.opt_range_f64(prefix, "top_p", self.top_p, 0.0, 1.0);
        if self.max_tokens == Some(0) {
            issues.error(prefix, "max_tokens", "must be > 0");
        }
        if self.timeout_seconds == Some(0) {
            issues.error_hint(
                prefix,
                "timeout_seconds",
                "must be ≥ 1",
                "remove it for no limit (functions) or the default (agents)",
            );
        }
    }

    fn validate_function(&self, prefix: &str, issues: &mut Issues) {
        let Some(p) = &self.plugin else {
            issues.error_hint(
                prefix,
                "plugin",
                "a function executor needs a plugin table",
                "[workflow.steps.executors.plugin] with module = \"my_pkg.steps\" (or path = \"steps.py\") and function = \"run\"",
            );
            return;
        };
        let at = format!("{prefix}.plugin");
        match (&p.module, &p.path) {
            (None, None) => issues.error_hint(
                &at,
                "module",
                "FunctionPluginMetadata は 'module' または 'path' のいずれかが必須です",
                "set module = \"my_pkg.steps\" or path = \"steps.py\"",
            ),
            (Some(_), Some(_)) => issues.error_hint(
                &at,
                "path",
                "FunctionPluginMetadata の 'module' と 'path' は同時指定できません（排他）",
                "keep either module or path",
            ),
            _ => {}
        }
        if p.function.is_none() {
            issues.error_hint(
                &at,
                "function",
                "a function plugin needs `function`",
                "function = \"run\" (the callable's name in the module or file)",
            );
        }
        for (key, set) in [
            ("agent_module", p.agent_module.is_some()),
            ("agent_class", p.agent_class.is_some()),
        ] {
            if set {
                issues.error_hint(
                    &at,
                    key,
                    format!(
                        "`{key}` is not a key of a function plugin (Extra inputs are not permitted)"
                    ),
                    "a function plugin has module or path, and function",
                );
            }
        }
    }
}

/// The original's rule `^[A-Za-z0-9_\-\.]+$`, whose `$` also accepts one final newline.
fn valid_executor_name(name: &str) -> bool {
    let core = name.strip_suffix('\n').unwrap_or(name);
    !core.is_empty()
        && core
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

impl WorkflowSettings {
    /// Validates the workflow, keys under `prefix` (`workflow`).
    pub fn validate(&self, prefix: &str, issues: &mut Issues) {
        for (key, value) in [
            ("workflow_id", self.workflow_id.as_str()),
            ("workflow_name", self.workflow_name.as_str()),
        ] {
            if value.trim().is_empty() {
                issues.error_hint(
                    prefix,
                    key,
                    "workflow_id / workflow_name は空にできません",
                    format!("set {key} = \"...\""),
                );
            }
        }
        if !self.default_model.contains(':') {
            issues.error_hint(
                prefix,
                "default_model",
                format!(
                    "Invalid model format: '{}'. Expected format: 'provider:model-name'",
                    self.default_model
                ),
                "default_model = \"provider:model\"",
            );
        }
        if self.steps.is_empty() {
            issues.error_hint(
                prefix,
                "steps",
                "List should have at least 1 item after validation, not 0",
                "add a [[workflow.steps]] table with an id and at least one [[workflow.steps.executors]]",
            );
        }
        let ids = duplicates(self.steps.iter().map(|s| s.id.as_str()));
        if !ids.is_empty() {
            issues.error(
                prefix,
                "steps",
                format!("ステップIDに重複があります: {}", python_list(&ids)),
            );
        }
        for (i, step) in self.steps.iter().enumerate() {
            let at = format!("{prefix}.steps[{i}]");
            if step.id.trim().is_empty() {
                issues.error_hint(&at, "id", "ステップIDは空にできません", "id = \"research\"");
            }
            if step.executors.is_empty() {
                issues.error_hint(
                    &at,
                    "executors",
                    "List should have at least 1 item after validation, not 0",
                    "add a [[workflow.steps.executors]] table after the step",
                );
            }
            let names = duplicates(step.executors.iter().map(|e| e.name.as_str()));
            if !names.is_empty() {
                issues.error(
                    &at,
                    "executors",
                    format!(
                        "ステップ '{}' 内の Executor 名に重複があります: {}",
                        step.id,
                        python_list(&names)
                    ),
                );
            }
            for (j, e) in step.executors.iter().enumerate() {
                e.validate(&format!("{at}.executors[{j}]"), issues);
            }
        }
    }

    /// Every model id the workflow may call: each LLM agent executor's model (its own, else
    /// `default_model`) and fallbacks. Unlike the original's preflight, an unused
    /// `default_model` is not listed: a workflow of functions needs no Google key.
    pub fn model_ids(&self) -> Vec<String> {
        let mut ids = Vec::new();
        for e in self.steps.iter().flat_map(|s| &s.executors) {
            if e.executor_type.is_some_and(|t| t.is_llm()) {
                ids.push(e.effective_model(&self.default_model));
                ids.extend(e.fallback_models.iter().cloned());
            }
        }
        ids
    }
}

/// Moves the unknown keys of `[workflow]` itself from `errors` to `warnings`: the original
/// reads six keys there and ignores the rest, so such a file must still load. Unknown keys of
/// steps, executors and plugins stay errors (the original rejects them too).
pub(crate) fn soften_unknown_workflow_keys(errors: &mut Issues, warnings: &mut Issues) {
    let (soft, hard): (Vec<ConfigIssue>, Vec<ConfigIssue>) = std::mem::take(&mut errors.items)
        .into_iter()
        .partition(|i| {
            i.message.starts_with("unknown key")
                && i.env_var.is_none()
                && i.key
                    .strip_prefix("workflow.")
                    .is_some_and(|k| !k.contains(['.', '[']))
        });
    errors.items = hard;
    for mut w in soft {
        w.message = "ignored key".into();
        let note = "the original MixSeek ignores unknown keys of [workflow]; so does mixseek";
        w.hint = Some(match w.hint.take() {
            Some(h) => format!("{h} ({note})"),
            None => note.to_string(),
        });
        warnings.push(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wf(src: &str) -> WorkflowSettings {
        toml::from_str::<WorkflowFile>(src).expect("toml").workflow
    }

    fn messages(s: &WorkflowSettings) -> Vec<String> {
        let mut issues = Issues::default();
        s.validate("workflow", &mut issues);
        issues
            .items
            .iter()
            .map(|i| format!("{}: {}", i.key, i.message))
            .collect()
    }

    const OK: &str = r#"
[workflow]
workflow_id = "wf"
workflow_name = "WF"
[[workflow.steps]]
id = "a"
[[workflow.steps.executors]]
name = "p"
type = "plain"
[[workflow.steps.executors]]
name = "f"
type = "function"
timeout_seconds = 5
[workflow.steps.executors.plugin]
module = "m"
function = "run"
"#;

    #[test]
    fn defaults_are_the_originals() {
        let s = wf(OK);
        assert_eq!(s.default_model, "google-gla:gemini-flash-lite-latest");
        assert!(s.include_all_context);
        assert_eq!(s.final_output_format, FinalOutputFormat::Json);
        assert!(messages(&s).is_empty(), "{:?}", messages(&s));
        assert_eq!(s.model_ids(), vec!["google-gla:gemini-flash-lite-latest"]);
        let functions_only = WorkflowSettings {
            steps: vec![WorkflowStep {
                id: "a".into(),
                executors: vec![s.steps[0].executors[1].clone()],
            }],
            ..s.clone()
        };
        assert!(functions_only.model_ids().is_empty());
        let m = s.steps[0].executors[0]
            .to_member(&s.default_model)
            .expect("agent");
        assert_eq!(
            m.model.as_deref(),
            Some("google-gla:gemini-flash-lite-latest")
        );
        assert_eq!(m.agent_type, Some(MemberType::Plain));
        assert!(s.steps[0].executors[1].to_member("x:y").is_none());
    }

    #[test]
    fn the_originals_messages() {
        let s = wf(r#"
[workflow]
workflow_id = " "
workflow_name = "W"
default_model = "nocolon"
[[workflow.steps]]
id = "a"
[[workflow.steps.executors]]
name = "x y"
type = "plain"
model = "bad"
[[workflow.steps.executors]]
name = "x y"
type = "function"
temperature = 0.5
[workflow.steps.executors.plugin]
module = "m"
path = "p.py"
function = "f"
[[workflow.steps]]
id = "a"
"#);
        let m = messages(&s);
        let want = [
            "workflow.workflow_id: workflow_id / workflow_name は空にできません",
            "workflow.default_model: Invalid model format: 'nocolon'. Expected format: 'provider:model-name'",
            "workflow.steps: ステップIDに重複があります: ['a']",
            "workflow.steps[0].executors: ステップ 'a' 内の Executor 名に重複があります: ['x y']",
            "workflow.steps[0].executors[0].name: Executor 名 'x y' が不正です。英数字・ハイフン・アンダースコア・ドットのみ使用可能",
            "workflow.steps[0].executors[0].model: Invalid model format: 'bad'. Expected format: 'provider:model-name'",
            "workflow.steps[0].executors[1].temperature: `temperature` is not a key of a `function` executor (Extra inputs are not permitted)",
            "workflow.steps[0].executors[1].plugin.path: FunctionPluginMetadata の 'module' と 'path' は同時指定できません（排他）",
            "workflow.steps[1].executors: List should have at least 1 item after validation, not 0",
        ];
        for w in want {
            assert!(m.iter().any(|x| x == w), "missing {w:?} in {m:#?}");
        }
    }

    #[test]
    fn executor_names_follow_the_python_rule() {
        assert!(valid_executor_name("a-b_c.1"));
        assert!(valid_executor_name("abc\n"));
        assert!(!valid_executor_name("abc\n\n"));
        assert!(!valid_executor_name(""));
        assert!(!valid_executor_name("日本"));
    }

    #[test]
    fn function_plugins_need_module_or_path_and_a_function() {
        let s = wf(r#"
[workflow]
workflow_id = "w"
workflow_name = "W"
[[workflow.steps]]
id = "a"
[[workflow.steps.executors]]
name = "f"
type = "function"
[workflow.steps.executors.plugin]
agent_class = "X"
[[workflow.steps.executors]]
name = "g"
type = "function"
[[workflow.steps.executors]]
name = "c"
type = "command"
"#);
        let m = messages(&s);
        assert!(
            m.iter().any(|x| x.ends_with(
                "FunctionPluginMetadata は 'module' または 'path' のいずれかが必須です"
            )),
            "{m:#?}"
        );
        assert!(
            m.iter()
                .any(|x| x.contains("plugin.function: a function plugin needs `function`")),
            "{m:#?}"
        );
        assert!(m.iter().any(|x| x.contains("plugin.agent_class")), "{m:#?}");
        assert!(
            m.iter().any(
                |x| x.contains("executors[1].plugin: a function executor needs a plugin table")
            ),
            "{m:#?}"
        );
        assert!(
            m.iter()
                .any(|x| x.contains("executors[2].command: type = \"command\" needs a command")),
            "{m:#?}"
        );
    }

    #[test]
    fn unknown_workflow_keys_are_warnings() {
        let mut errors = Issues::default();
        errors.push(
            ConfigIssue::new("workflow.default_modle", "unknown key")
                .with_hint("did you mean `default_model`?"),
        );
        errors.push(ConfigIssue::new("workflow.steps[0].idd", "unknown key"));
        let mut warnings = Issues::default();
        soften_unknown_workflow_keys(&mut errors, &mut warnings);
        assert_eq!(errors.items.len(), 1);
        assert_eq!(errors.items[0].key, "workflow.steps[0].idd");
        assert_eq!(warnings.items[0].message, "ignored key");
        assert!(
            warnings.items[0]
                .hint
                .as_deref()
                .is_some_and(|h| h.starts_with("did you mean `default_model`?"))
        );
    }
}
