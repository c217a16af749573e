//! Team TOML (`[team]`, `[team.leader]`, `[[team.members]]`) and member agent TOML (`[agent]`).

use crate::choice::MemberType;
use crate::issues::Issues;
use mixseek_core::TeamId;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

/// A system instruction written as a string or as a table `{ text = "..." }`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct Instruction(pub String);

impl<'de> Deserialize<'de> for Instruction {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Instruction;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or a table { text = \"...\" }")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Instruction, E> {
                Ok(Instruction(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Instruction, A::Error> {
                let mut text = None;
                while let Some(k) = map.next_key::<String>()? {
                    if k == "text" {
                        text = Some(map.next_value::<String>()?);
                    } else {
                        return Err(serde::de::Error::unknown_field(&k, &["text"]));
                    }
                }
                text.map(Instruction)
                    .ok_or_else(|| serde::de::Error::missing_field("text"))
            }
        }
        d.deserialize_any(V)
    }
}

/// `[team.leader]`: the leader agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LeaderSettings {
    /// `provider:model` of the leader.
    pub model: String,
    /// System instruction; unset ⇒ the built-in leader instruction; `""` ⇒ none at all.
    pub system_instruction: Option<String>,
    /// An additional system prompt (both may be set).
    pub system_prompt: Option<String>,
    /// Sampling temperature (0.0..=2.0); unset ⇒ the model's default.
    pub temperature: Option<f64>,
    /// Output token limit (> 0); unset ⇒ the model's default.
    pub max_tokens: Option<u64>,
    /// Per-request timeout in seconds (10..=600).
    pub timeout_seconds: u64,
    /// Retries of invalid tool arguments / structured output.
    pub max_retries: u32,
    /// Stop sequences.
    pub stop_sequences: Option<Vec<String>>,
    /// Nucleus sampling (0.0..=1.0).
    pub top_p: Option<f64>,
    /// Sampling seed (ignored by Anthropic).
    pub seed: Option<i64>,
    /// Models tried in order when the primary model keeps failing.
    pub fallback_models: Vec<String>,
    /// Request settings passed through to the model as they are (the original's
    /// `model_settings`; e.g. `presence_penalty`, `openai_reasoning_effort`, `extra_body`). The
    /// individual keys above win over the same keys here.
    pub model_settings: Option<serde_json::Map<String, serde_json::Value>>,
    /// As `model_settings`, for Google models only (ignored, with a warning, for any other
    /// model); wins over `model_settings`.
    pub google_model_settings: Option<serde_json::Map<String, serde_json::Value>>,
}

impl Default for LeaderSettings {
    fn default() -> Self {
        Self {
            model: "google-gla:gemini-flash-lite-latest".into(),
            system_instruction: None,
            system_prompt: None,
            temperature: None,
            max_tokens: None,
            timeout_seconds: 300,
            max_retries: 3,
            stop_sequences: None,
            top_p: None,
            seed: None,
            fallback_models: Vec::new(),
            model_settings: None,
            google_model_settings: None,
        }
    }
}

impl LeaderSettings {
    /// Adds this section's range and consistency problems to `issues`, keys under `prefix`.
    pub fn validate(&self, prefix: &str, issues: &mut Issues) {
        issues.non_blank(prefix, "model", &self.model);
        issues.opt_range_f64(prefix, "temperature", self.temperature, 0.0, 2.0);
        issues.opt_range_f64(prefix, "top_p", self.top_p, 0.0, 1.0);
        issues.range_i64(
            prefix,
            "timeout_seconds",
            self.timeout_seconds as i64,
            10,
            600,
        );
        if self.max_tokens == Some(0) {
            issues.error_hint(
                prefix,
                "max_tokens",
                "must be > 0",
                "remove it for the model's default",
            );
        }
    }
}

/// A member agent: an inline `[[team.members]]` entry, the `[agent]` table of a member file,
/// or a reference (`config = "member.toml"`, where only `tool_name` / `tool_description` may
/// be overridden).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(default)]
pub struct MemberSettings {
    /// Reference form: path of a member TOML whose `[agent]` table defines this member.
    pub config: Option<String>,
    /// Agent name (letters, digits, `-`, `_`, `.`). Legacy alias: `agent_name`.
    #[serde(alias = "agent_name")]
    pub name: Option<String>,
    /// `plain`, `web_search`, `web_fetch`, `code_execution` or `command`. Alias: `agent_type`.
    #[serde(rename = "type", alias = "agent_type")]
    pub agent_type: Option<MemberType>,
    /// The tool name the leader calls; default `delegate_to_{name}`.
    pub tool_name: Option<String>,
    /// What the leader is told the tool does; default `Delegate task to {name}`.
    /// Alias: `description`.
    #[serde(alias = "description")]
    pub tool_description: Option<String>,
    /// `provider:model` of the member.
    pub model: Option<String>,
    /// System instruction (a string or `{ text = "..." }`); unset ⇒ the bundled default of the type.
    pub system_instruction: Option<Instruction>,
    /// An additional system prompt.
    pub system_prompt: Option<String>,
    /// Sampling temperature (0.0..=2.0).
    pub temperature: Option<f64>,
    /// Output token limit (> 0).
    pub max_tokens: Option<u64>,
    /// Per-request timeout in seconds.
    pub timeout_seconds: Option<u64>,
    /// Invalid tool calls (e.g. `fetch_url` without a URL) allowed per tool and task before
    /// the member's task fails; default 3.
    pub max_retries: Option<u32>,
    /// Stop sequences.
    pub stop_sequences: Option<Vec<String>>,
    /// Nucleus sampling (0.0..=1.0).
    pub top_p: Option<f64>,
    /// Sampling seed.
    pub seed: Option<i64>,
    /// Per-type tool settings (`[tool_settings.web_search]`, `[tool_settings.web_fetch]`, ...).
    pub tool_settings: BTreeMap<String, serde_json::Value>,
    /// Free-form metadata (`metadata.tool_settings` is read as `tool_settings` when that is unset).
    pub metadata: Option<serde_json::Value>,
    /// `type = "command"`: the program and its arguments. It gets `{task, context,
    /// tool_settings}` as JSON on stdin and answers `{content, status, usage?}` on stdout.
    pub command: Option<Vec<String>>,
    /// `web_fetch`: allow private and loopback addresses (refused by default).
    pub allow_private_network: bool,
    /// The original's Python plugin table (`type = "custom"`); not supported — use `type = "command"`.
    pub plugin: Option<serde_json::Value>,
    /// Models tried in order when the primary model keeps failing.
    pub fallback_models: Vec<String>,
    /// Request settings passed through to the model as they are (the original's
    /// `model_settings`; e.g. `presence_penalty`, `openai_reasoning_effort`, `extra_body`). The
    /// individual keys above win over the same keys here.
    pub model_settings: Option<serde_json::Map<String, serde_json::Value>>,
    /// As `model_settings`, for Google models only (ignored, with a warning, for any other
    /// model); wins over `model_settings`.
    pub google_model_settings: Option<serde_json::Map<String, serde_json::Value>>,
}

impl MemberSettings {
    /// The effective tool name.
    pub fn effective_tool_name(&self) -> String {
        match (&self.tool_name, &self.name) {
            (Some(t), _) if !t.trim().is_empty() => t.clone(),
            (_, Some(n)) => format!("delegate_to_{n}"),
            _ => "delegate_to_member".into(),
        }
    }
    /// The effective tool description.
    pub fn effective_tool_description(&self) -> String {
        match (&self.tool_description, &self.name) {
            (Some(d), _) => d.clone(),
            (None, Some(n)) => format!("Delegate task to {n}"),
            _ => "Delegate task to member".into(),
        }
    }
    /// Tool settings from `tool_settings`, else `metadata.tool_settings`.
    pub fn effective_tool_settings(&self) -> BTreeMap<String, serde_json::Value> {
        if !self.tool_settings.is_empty() {
            return self.tool_settings.clone();
        }
        self.metadata
            .as_ref()
            .and_then(|m| m.get("tool_settings"))
            .and_then(|t| t.as_object())
            .map(|o| o.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    }

    /// Overlays a referencing entry's `tool_name` / `tool_description` on a loaded member.
    pub fn with_overrides(mut self, entry: &MemberSettings) -> Self {
        if entry.tool_name.is_some() {
            self.tool_name = entry.tool_name.clone();
        }
        if entry.tool_description.is_some() {
            self.tool_description = entry.tool_description.clone();
        }
        self.config = None;
        self
    }

    /// Adds this section's range and consistency problems to `issues`, keys under `prefix`.
    pub fn validate(&self, prefix: &str, issues: &mut Issues) {
        match &self.name {
            None => issues.error_hint(
                prefix,
                "name",
                "a member needs a name",
                "add name = \"...\"",
            ),
            Some(n) => {
                if n.is_empty()
                    || !n
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                {
                    issues.error_hint(prefix, "name", invalid_name_message(n), "rename the member");
                }
            }
        }
        match self.agent_type {
            None => issues.error_hint(prefix, "type", "a member needs a type", format!("one of: {}", crate::choice::one_of(MemberType::ALL))),
            Some(MemberType::Custom) => issues.error_hint(
                prefix,
                "type",
                "type = \"custom\" (Python plugins) is not supported",
                "write the agent as a program and use type = \"command\" with command = [\"python3\", \"agent.py\"]",
            ),
            Some(MemberType::Command) => {
                if self.command.as_ref().is_none_or(|c| c.is_empty()) {
                    issues.error_hint(prefix, "command", "type = \"command\" needs a command", "command = [\"python3\", \"agent.py\"]");
                }
            }
            Some(_) => {
                if self.model.as_deref().is_none_or(|m| m.trim().is_empty()) {
                    issues.error_hint(prefix, "model", "a member needs a model", "model = \"provider:model\"");
                }
            }
        }
        if let Some(d) = &self.tool_description {
            if d.trim().is_empty() {
                issues.error(
                    prefix,
                    "tool_description",
                    "tool_description cannot be empty",
                );
            }
        }
        issues.opt_range_f64(prefix, "temperature", self.temperature, 0.0, 2.0);
        issues.opt_range_f64(prefix, "top_p", self.top_p, 0.0, 1.0);
        if self.max_tokens == Some(0) {
            issues.error(prefix, "max_tokens", "must be > 0");
        }
        if let Some(t) = self.timeout_seconds {
            issues.range_i64(prefix, "timeout_seconds", t as i64, 1, 3600);
        }
        if let Some(wf) = self.effective_tool_settings().get("web_fetch") {
            if wf.get("allowed_domains").is_some() && wf.get("blocked_domains").is_some() {
                issues.error(
                    prefix,
                    "tool_settings.web_fetch",
                    "allowed_domains and blocked_domains are mutually exclusive. Use only one of them.",
                );
            }
        }
    }
}

/// The original's text for a name with characters other than letters, digits, `-`, `_`, `.`.
pub(crate) fn invalid_name_message(name: &str) -> String {
    format!(
        "Invalid agent name '{name}'. Agent name must be alphanumeric with only hyphens (-), underscores (_), or dots (.) as separators. Examples: 'my-agent', 'data_analyst', 'agent.v1'"
    )
}

/// The values that occur more than once, sorted.
pub(crate) fn duplicates<'a>(values: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut dup = std::collections::BTreeSet::new();
    for v in values {
        if !seen.insert(v) {
            dup.insert(v.to_string());
        }
    }
    dup.into_iter().collect()
}

/// A list of strings as Python prints it (`['a', 'b']`), as the original's messages show them.
pub(crate) fn python_list(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| {
            if s.contains('\'') && !s.contains('"') {
                format!("\"{s}\"")
            } else {
                format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
            }
        })
        .collect();
    format!("[{}]", quoted.join(", "))
}

/// Keys a member reference (`config = "member.toml"`) may set besides `config`.
pub(crate) const REFERENCE_OVERRIDE_KEYS: &[&str] =
    &["tool_name", "tool_description", "description"];

/// Every key of a member entry (with the aliases `agent_name`, `agent_type`, `description`).
pub(crate) const MEMBER_KEYS: &[&str] = &[
    "config",
    "name",
    "agent_name",
    "type",
    "agent_type",
    "tool_name",
    "tool_description",
    "description",
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
    "tool_settings",
    "metadata",
    "command",
    "allow_private_network",
    "plugin",
    "fallback_models",
    "model_settings",
    "google_model_settings",
];

/// The member keys set in a reference entry (`config = "..."`) that only the member file
/// may set: the loader reports each as an error. Unknown keys are left to the unknown-key
/// check.
pub(crate) fn reference_entry_extra_keys(entry: &toml::Table) -> Vec<String> {
    entry
        .keys()
        .filter(|k| {
            k.as_str() != "config"
                && !REFERENCE_OVERRIDE_KEYS.contains(&k.as_str())
                && MEMBER_KEYS.contains(&k.as_str())
        })
        .cloned()
        .collect()
}

/// `[team]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(default)]
pub struct TeamSettings {
    /// Unique id of the team within an execution.
    #[schemars(with = "String")]
    pub team_id: TeamId,
    /// Display name.
    pub team_name: String,
    /// Maximum number of members (1..=50, default 15); also bounds how many member tool calls
    /// run at the same time.
    pub max_concurrent_members: Option<u32>,
    /// Leader tool-calling turns per round before the leader is asked for its final answer.
    pub max_tool_rounds: Option<u32>,
    /// The leader agent.
    pub leader: LeaderSettings,
    /// Member agents, inline or `config = "member.toml"` references.
    pub members: Vec<MemberSettings>,
    /// Domain context for this team (replaces the orchestrator's).
    pub domain_context: Option<String>,
    /// Preferred answer language for this team (replaces the orchestrator's).
    pub language: Option<String>,
}

impl TeamSettings {
    const DEFAULT_MAX_MEMBERS: u32 = 15;
    const DEFAULT_MAX_TOOL_ROUNDS: u32 = 8;

    /// `max_concurrent_members`, else 15.
    pub fn max_members(&self) -> u32 {
        self.max_concurrent_members
            .unwrap_or(Self::DEFAULT_MAX_MEMBERS)
    }
    /// `max_tool_rounds`, else 8.
    pub fn max_tool_rounds(&self) -> u32 {
        self.max_tool_rounds
            .unwrap_or(Self::DEFAULT_MAX_TOOL_ROUNDS)
    }

    /// Validates the team with its members already resolved (references loaded).
    pub fn validate(&self, prefix: &str, issues: &mut Issues) {
        issues.non_blank(prefix, "team_id", self.team_id.as_str());
        issues.non_blank(prefix, "team_name", &self.team_name);
        if let Some(m) = self.max_concurrent_members {
            issues.range_i64(prefix, "max_concurrent_members", m as i64, 1, 50);
        }
        if let Some(m) = self.max_tool_rounds {
            issues.range_i64(prefix, "max_tool_rounds", m as i64, 1, 50);
        }
        self.leader.validate(&format!("{prefix}.leader"), issues);
        let n = self.members.len() as u32;
        if n > self.max_members() {
            issues.error_hint(
                prefix,
                "members",
                format!("Too many members: {n} > {}", self.max_members()),
                "Adjust max_concurrent_members or reduce member count.",
            );
        }
        for (i, m) in self.members.iter().enumerate() {
            m.validate(&format!("{prefix}.members[{i}]"), issues);
        }
        let names = duplicates(self.members.iter().filter_map(|m| m.name.as_deref()));
        if !names.is_empty() {
            issues.error(
                prefix,
                "members",
                format!("Duplicate agent_name detected: {}", python_list(&names)),
            );
        }
        let tool_names: Vec<String> = self
            .members
            .iter()
            .map(MemberSettings::effective_tool_name)
            .collect();
        let tools = duplicates(tool_names.iter().map(String::as_str));
        if !tools.is_empty() {
            issues.error(
                prefix,
                "members",
                format!("Duplicate tool_name detected: {}", python_list(&tools)),
            );
        }
    }
}

/// A team TOML file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(default)]
pub struct TeamFile {
    /// The team.
    pub team: TeamSettings,
}

/// A member agent TOML file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(default)]
pub(crate) struct MemberFile {
    /// The member agent.
    pub agent: MemberSettings,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instruction_accepts_string_or_text_table() {
        let m: MemberSettings =
            toml::from_str("name = \"a\"\nsystem_instruction = \"x\"").expect("string");
        assert_eq!(m.system_instruction, Some(Instruction("x".into())));
        let m: MemberSettings =
            toml::from_str("name = \"a\"\n[system_instruction]\ntext = \"y\"").expect("table");
        assert_eq!(m.system_instruction, Some(Instruction("y".into())));
    }

    #[test]
    fn aliases_and_effective_names() {
        let m: MemberSettings =
            toml::from_str("agent_name = \"analyst\"\nagent_type = \"plain\"\ndescription = \"d\"\nmodel = \"mock:x\"")
                .expect("aliases");
        assert_eq!(m.name.as_deref(), Some("analyst"));
        assert_eq!(m.agent_type, Some(MemberType::Plain));
        assert_eq!(m.effective_tool_name(), "delegate_to_analyst");
        assert_eq!(m.effective_tool_description(), "d");
    }

    #[test]
    fn team_validation_finds_duplicates_and_bad_members() {
        let value: toml::Value = toml::from_str(
            r#"
[team]
team_id = "t"
team_name = "T"
max_concurrent_members = 1
[[team.members]]
name = "a"
type = "plian"
model = "mock:x"
[[team.members]]
name = "a"
type = "custom"
"#,
        )
        .expect("toml");
        let mut issues = Issues::default();
        let t: Option<TeamFile> = crate::doc::deserialize_section(&value, "", &mut issues);
        t.expect("the rest loads")
            .team
            .validate("team", &mut issues);
        let text: Vec<String> = issues.items.iter().map(|i| i.to_string()).collect();
        assert!(
            text.iter().any(|t| t.contains("Too many members: 2 > 1")),
            "{text:#?}"
        );
        assert!(
            text.iter().any(|t| t.contains("did you mean `plain`?")),
            "{text:#?}"
        );
        assert!(
            text.iter()
                .any(|t| t.contains("type = \\\"command\\\"") || t.contains("type = \"command\"")),
            "{text:#?}"
        );
        assert!(
            text.iter()
                .any(|t| t.contains("Duplicate agent_name detected: ['a']")),
            "{text:#?}"
        );
    }

    #[test]
    fn original_texts_for_names_and_lists() {
        assert_eq!(
            python_list(&["a".into(), "it's".into(), "q'\"".into()]),
            "['a', \"it's\", 'q\\'\"']"
        );
        assert_eq!(python_list(&[]), "[]");
        let t: TeamFile = toml::from_str(
            "[team]\nteam_id = \"t\"\nteam_name = \"T\"\n[[team.members]]\nname = \"bad name\"\ntype = \"plain\"\nmodel = \"mock:x\"\ntool_name = \"x\"\n[[team.members]]\nname = \"b\"\ntype = \"plain\"\nmodel = \"mock:x\"\ntool_name = \"x\"\n",
        )
        .expect("toml");
        let mut issues = Issues::default();
        t.team.validate("team", &mut issues);
        let messages: Vec<&str> = issues.items.iter().map(|i| i.message.as_str()).collect();
        assert!(
            messages.contains(&"Invalid agent name 'bad name'. Agent name must be alphanumeric with only hyphens (-), underscores (_), or dots (.) as separators. Examples: 'my-agent', 'data_analyst', 'agent.v1'"),
            "{messages:#?}"
        );
        assert!(
            messages.contains(&"Duplicate tool_name detected: ['x']"),
            "{messages:#?}"
        );
    }

    #[test]
    fn member_keys_cover_every_field_and_references_flag_the_others() {
        let schema = serde_json::to_value(schemars::schema_for!(MemberSettings)).expect("schema");
        let props = schema["properties"].as_object().expect("properties");
        for k in props.keys() {
            assert!(
                MEMBER_KEYS.contains(&k.as_str()),
                "MEMBER_KEYS misses `{k}`"
            );
        }
        let entry: toml::Table = toml::from_str(
            "config = \"a.toml\"\ntool_name = \"t\"\ndescription = \"d\"\nmodel = \"mock:x\"\nagent_type = \"plain\"\nmodle = \"typo\"\n",
        )
        .expect("toml");
        assert_eq!(reference_entry_extra_keys(&entry), ["model", "agent_type"]);
    }
}
