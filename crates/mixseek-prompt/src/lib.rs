//! mixseek-prompt owns prompt building: the team, evaluator and judgment user-prompt templates
//! (minijinja, strict undefined, no auto-escaping, compiled once), their variables and the
//! byte-exact formatters of the original (submission history, ranking table, position
//! message), `current_datetime` with an injectable clock and time zone, and the
//! prompt-injection rules (seed 000) that carry language, domain context (seed 002) and
//! suffixes into the system and user prompts of every phase.
//!
//! # Use
//!
//! ```
//! use mixseek_config::{InjectionPhase, PromptBuilderSettings};
//! use mixseek_prompt::{FixedClock, PromptBuilder, PromptContext};
//! use std::sync::Arc;
//!
//! let settings = PromptBuilderSettings::default(); // or the loaded `[prompt_builder]`
//! let builder = PromptBuilder::with_zone(&settings, chrono_tz::Tz::Asia__Tokyo)?
//!     .with_clock(Arc::new(FixedClock("2025-11-25T05:30:00Z".parse().unwrap())));
//! let ctx = PromptContext {
//!     user_prompt: "データ分析タスク".into(),
//!     round_number: 1,
//!     team_id: "team1".into(),
//!     team_name: "Alpha".into(),
//!     execution_id: Some("exec-1".into()),
//!     domain_context: Some("Software development".into()),
//!     ..Default::default()
//! };
//! let user = builder.render_team(&ctx)?;
//! assert!(user.contains("current_datetime: 2025-11-25T14:30:00+09:00"));
//! let system = builder.inject_system(InjectionPhase::Team, "You lead a team.", &ctx)?;
//! assert_eq!(system.applied, ["domain_context"]);
//! # Ok::<(), mixseek_prompt::PromptError>(())
//! ```
//!
//! * [`PromptBuilder::new`] (zone from `[prompt_builder] timezone`, else `TZ`, else UTC) or
//!   [`PromptBuilder::with_zone`]; [`PromptBuilder::with_clock`] injects the clock.
//! * [`PromptBuilder::render_team`] / [`render_judgment`](PromptBuilder::render_judgment) /
//!   [`render_evaluator`](PromptBuilder::render_evaluator) (or
//!   [`render`](PromptBuilder::render) with a [`TemplateKind`]) from a [`PromptContext`]:
//!   `round_history` = the team's rounds ([`PromptContext::with_rounds`] from
//!   `mixseek_core::RoundState`), `ranking` = `None` without a store.
//! * [`PromptBuilder::inject`] (or `inject_system` / `inject_user`) for a phase (team, member,
//!   evaluator, judgment) returns [`Injected`]: the prompt and the names of the rules applied.
//!   [`PromptBuilder::render_with_injections`] renders and applies the user-side rules.
//! * Formatters: [`format_submission_history`], [`format_current_datetime`] (the ranking
//!   table and position message are rendered through the templates' variables).
//! * Preflight: [`check_settings`] reports every template/rule problem at once, including
//!   every name a template or rule reads that is not one of its variables (with the nearest
//!   valid one; names only tested with `is defined` / `is undefined` or given a `default`
//!   filter are allowed).
//! * Applied rules: every application is logged at debug level (execution, team, round,
//!   phase, side, rules); [`PromptBuilder::take_applied`] returns a round's rule names per
//!   phase and side (`mixseek_core::AppliedInjection`) for the round record. Clones share them.
//! * Attachments: [`PromptContext::attachments`] (or [`PromptContext::with_attachments`]) are
//!   the documents attached to the task. Every template (and rule) sees them as
//!   `attachments`, a list of `{name, media_type, size_bytes, sha256, text, truncated}` whose
//!   texts are neutralized like every other embedded value; the `xml_attr` filter writes a
//!   value inside a double-quoted attribute. The default templates show them after
//!   `<user_task>`, only when there are any (without, every prompt is byte for byte the
//!   original's):
//!   `<attachments>\n<attachment name="report.pdf" type="application/pdf">\n…text…\n</attachment>\n</attachments>`
//!   (with ` truncated="true"` on a text cut at the cap), and name the block in their reading
//!   guide. [`PromptBuilder::shows_attachments`] says whether a template shows them.
//! * Outside a run: [`load_for_run`] loads the settings exactly as a run does;
//!   [`parse_context`] reads a strict context JSON.
//! * History: [`PromptContext::with_rounds`] shows stored rounds' score details in the
//!   original's shape only ([`original_score_details`]).
//! * [`DEFAULT_PROMPT_BUILDER_TOML`] is the bundled default file (`mixseek init` writes it).
//!
//! Built-in injection rules (override key by key with a same-named
//! `[[prompt_builder.injections]]` entry, e.g. `enabled = false`): `language_preference` (100,
//! system, when `language` is set and not `auto`), `domain_context` (90, system, every phase;
//! skipped for a phase whose user template shows `domain_context` itself),
//! `system_prompt_suffix` (40, system), `prompt_suffix` (10, user). They apply in every phase
//! the caller passes their input for; the suffixes also come from `[prompt_builder]
//! system_prompt_suffix` / `prompt_suffix` when the context sets none. Blocks are joined with `system_separator`
//! (`"\n\n---\n\n"`) or `user_separator` (`"\n\n"`).

#![warn(missing_docs, unreachable_pub)]

mod applied;
mod attachments;
mod builder;
mod clock;
mod context;
mod error;
mod formatters;
mod inject;
mod load;
mod names;
mod pyjson;
mod tags;
mod vars;

#[cfg(test)]
mod attachment_tests;
#[cfg(test)]
mod golden_tests;
#[cfg(test)]
mod injection_tests;

pub use builder::{PromptBuilder, check_settings};
pub use clock::{
    Clock, FixedClock, SharedClock, env_tz, format_current_datetime, parse_time_zone,
    resolve_time_zone,
};
pub use context::{
    HistoryRound, PromptContext, Ranking, RankingEntry, original_score_details, py_trim,
};
pub use error::{Location, PromptError, TemplateKind, TemplateName, TimeZoneSource};
pub use formatters::format_submission_history;
pub use inject::Injected;
pub use load::{
    CONTEXT_KEYS, LoadedSettings, load_for_run, parse_context, required_fields, settings_from_toml,
};
pub use mixseek_config::{InjectionPhase, InjectionSide, PromptBuilderSettings};
pub use mixseek_core::Attachment;
pub use pyjson::py_float_repr;
pub use tags::TagGuard;
pub use vars::{INJECTION_VARS, VarInfo, template_variables};

/// The bundled default prompt-builder file, verbatim (what `mixseek init` and
/// `config init --component prompt_builder` write). Its three templates equal
/// `PromptBuilderSettings::default()`.
pub const DEFAULT_PROMPT_BUILDER_TOML: &str = include_str!("../assets/prompt_builder_default.toml");

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    fn sha(s: &str) -> String {
        Sha256::digest(s.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    #[test]
    fn bundled_file_parses_to_the_default_templates() {
        let settings =
            load::settings_from_toml(DEFAULT_PROMPT_BUILDER_TOML, "default").expect("parse");
        let defaults = PromptBuilderSettings::default();
        assert_eq!(settings, defaults);
        assert_eq!(
            sha(&defaults.team_user_prompt),
            "a35345831e0e108d8480b3b3bfe0f4eb37cd550c5e783932657fc66d603ca2c8"
        );
        assert_eq!(
            sha(&defaults.evaluator_user_prompt),
            "c0d10a5b957c0719e5c728b8e65e5f2a511cdc3d8ac6463be87eb2b4f412d4bd"
        );
        assert_eq!(
            sha(&defaults.judgment_user_prompt),
            "2a15fb733ddb3de5389ca8fd5f4dd73730caec9413399566f47cb941830ad7da"
        );
        assert!(
            !DEFAULT_PROMPT_BUILDER_TOML.contains('\t')
                && !DEFAULT_PROMPT_BUILDER_TOML.contains(" \n")
        );
        assert!(DEFAULT_PROMPT_BUILDER_TOML.starts_with("# UserPromptBuilder 設定ファイル\n"));
        // the original's file since 0.1.0a18, byte for byte (upstream-a16-a22.md §3.2)
        assert_eq!(DEFAULT_PROMPT_BUILDER_TOML.len(), 6177);
        assert_eq!(
            sha(DEFAULT_PROMPT_BUILDER_TOML),
            "13252c19411b403f190d2fefe02eec2b39df5744da7b01cca62e312a44556984"
        );
    }
}
