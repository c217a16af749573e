//! The built-in instruction texts: the leader's default (Appendix A.1 of the original,
//! byte-exact) and the bundled member defaults per type, plus how a configured
//! `system_instruction` / `system_prompt` pair becomes one system prompt.

use mixseek_config::MemberType;

/// The default leader instruction, used when `[team.leader].system_instruction` is absent:
/// one newline, the text, one final newline — passed as-is, as the original does.
pub(crate) const DEFAULT_LEADER_INSTRUCTION: &str =
    concat!("\n", include_str!("../assets/leader_instruction.txt"));

/// The bundled `plain` member instruction (`plain.toml`).
pub(crate) const DEFAULT_PLAIN_INSTRUCTION: &str =
    "あなたは親切で正確な情報を提供するアシスタントです。";
/// The bundled `web_search` member instruction (`web-search.toml`).
pub(crate) const DEFAULT_WEB_SEARCH_INSTRUCTION: &str =
    "あなたは最新情報を検索し、正確な分析を提供するリサーチエージェントです。";
/// The bundled `code_execution` member instruction (`code-exec.toml`).
pub(crate) const DEFAULT_CODE_EXECUTION_INSTRUCTION: &str =
    "あなたはデータ分析とコード実行が可能なアシスタントです。";

/// The default instruction of a member type when its `system_instruction` is unset
/// (`web_fetch` and `command` have none, as in the original).
pub(crate) fn default_member_instruction(agent_type: MemberType) -> &'static str {
    match agent_type {
        MemberType::Plain => DEFAULT_PLAIN_INSTRUCTION,
        MemberType::WebSearch => DEFAULT_WEB_SEARCH_INSTRUCTION,
        MemberType::CodeExecution => DEFAULT_CODE_EXECUTION_INSTRUCTION,
        MemberType::WebFetch | MemberType::Command | MemberType::Custom => "",
    }
}

/// The leader's instruction: unset ⇒ the default; `""` ⇒ none; whitespace-only ⇒ none, with
/// the original's warning.
pub(crate) fn leader_instruction(configured: Option<&str>) -> String {
    match configured {
        None => DEFAULT_LEADER_INSTRUCTION.to_string(),
        Some("") => String::new(),
        Some(s) if s.trim().is_empty() => {
            tracing::warn!("system_instruction is whitespace-only. Treating it as empty string.");
            String::new()
        }
        Some(s) => s.to_string(),
    }
}

/// Joins an instruction and an additional system prompt (either may be empty) with a blank
/// line.
pub(crate) fn join_system(instruction: &str, system_prompt: Option<&str>) -> String {
    let extra = system_prompt.unwrap_or("");
    match (instruction.trim().is_empty(), extra.trim().is_empty()) {
        (true, true) => String::new(),
        (false, true) => instruction.to_string(),
        (true, false) => extra.to_string(),
        (false, false) => format!("{instruction}\n\n{extra}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leader_default_is_the_original_text_with_its_newlines() {
        assert!(
            DEFAULT_LEADER_INSTRUCTION
                .starts_with("\nあなたは研究チームのリーダーエージェントです。\n")
        );
        assert!(
            DEFAULT_LEADER_INSTRUCTION
                .ends_with("各Member Agentの詳細はToolの説明を参照してください。\n")
        );
        assert!(!DEFAULT_LEADER_INSTRUCTION.ends_with("\n\n"));
        assert_eq!(DEFAULT_LEADER_INSTRUCTION.lines().count(), 11);
    }

    #[test]
    fn leader_instruction_resolution() {
        assert_eq!(leader_instruction(None), DEFAULT_LEADER_INSTRUCTION);
        assert_eq!(leader_instruction(Some("")), "");
        assert_eq!(leader_instruction(Some("  \n")), "");
        assert_eq!(leader_instruction(Some("Lead.")), "Lead.");
    }

    #[test]
    fn member_defaults_by_type() {
        assert_eq!(
            default_member_instruction(MemberType::Plain),
            DEFAULT_PLAIN_INSTRUCTION
        );
        assert_eq!(
            default_member_instruction(MemberType::WebSearch),
            DEFAULT_WEB_SEARCH_INSTRUCTION
        );
        assert_eq!(
            default_member_instruction(MemberType::CodeExecution),
            DEFAULT_CODE_EXECUTION_INSTRUCTION
        );
        assert_eq!(default_member_instruction(MemberType::WebFetch), "");
    }

    #[test]
    fn system_parts_join() {
        assert_eq!(join_system("a", Some("b")), "a\n\nb");
        assert_eq!(join_system("", Some("b")), "b");
        assert_eq!(join_system("a", None), "a");
        assert_eq!(join_system(" ", Some("")), "");
    }
}
