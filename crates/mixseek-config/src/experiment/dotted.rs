//! The dotted keys of an experiment variant's `overrides` and `grid`: each names what one
//! `MIXSEEK_*` environment variable names (`leader.temperature` is
//! `MIXSEEK_LEADER__TEMPERATURE`), and is checked with the loaders' own overlays
//! ([`crate::load::route_env_var`]), so the two can never disagree. Unlike a variable, a key
//! that sets no setting is an error.

use crate::env::{
    EnvVars, IGNORED_SECTIONS, LOADED_SECTIONS, MAX_SEGMENTS, NON_SETTING_VARS, TOP_LEVEL_TABLES,
    UNSUPPORTED_VARS, unroutable,
};
use crate::issues::closest;
use crate::load::{EnvRoute, env_var_keys, route_env_var};

/// A dotted key that names a setting.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Routed {
    /// The variable that sets it (`MIXSEEK_ORCHESTRATOR__MAX_ROUNDS` for `max_rounds` too).
    pub var: String,
    /// The settings it sets: (file kind, dotted key in that file).
    pub keys: Vec<(&'static str, String)>,
}

/// Why a dotted key names no setting.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KeyError {
    /// What is wrong.
    pub message: String,
    /// What to do ("did you mean `leader.temperature`?").
    pub hint: Option<String>,
}

impl KeyError {
    fn new(message: impl Into<String>, hint: Option<String>) -> Self {
        Self {
            message: message.into(),
            hint,
        }
    }
}

/// The hint of a key without a close valid one.
const NO_MATCH: &str = "no mixseek setting has this name; the keys are those of the MIXSEEK_* \
                        variables in docs/configuration.md (`orchestrator.max_rounds`, \
                        `team.leader.model`, `leader.temperature`, `evaluator.<key>`, ...)";

/// The segments of a dotted key: `a.b`, `hooks[0].url`, `pricing."openai:gpt-4.1".input`.
pub(crate) fn parse_segments(key: &str) -> Result<Vec<String>, KeyError> {
    let bad = |why: &str| {
        KeyError::new(
            format!("`{key}` is not a dotted key: {why}"),
            Some("write segments separated by dots: `leader.temperature`, `hooks[0].url`, `pricing.\"openai:gpt-4.1\".input`".into()),
        )
    };
    let mut out = Vec::new();
    let mut chars = key.chars().peekable();
    // After a closing quote or `]`, only `.`, `[` or the end may follow.
    let mut closed = false;
    let mut cur = String::new();
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                if !closed && cur.is_empty() {
                    return Err(bad("an empty segment"));
                }
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                closed = false;
                if chars.peek().is_none() {
                    return Err(bad("it ends with a dot"));
                }
            }
            '"' if cur.is_empty() && !closed => {
                let mut quoted = String::new();
                let mut ended = false;
                for q in chars.by_ref() {
                    if q == '"' {
                        ended = true;
                        break;
                    }
                    quoted.push(q);
                }
                if !ended {
                    return Err(bad("an unclosed quote"));
                }
                if quoted.is_empty() {
                    return Err(bad("an empty quoted segment"));
                }
                out.push(quoted);
                closed = true;
            }
            '[' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                } else if out.is_empty() {
                    return Err(bad("it starts with an index"));
                }
                let mut index = String::new();
                let mut ended = false;
                for d in chars.by_ref() {
                    if d == ']' {
                        ended = true;
                        break;
                    }
                    index.push(d);
                }
                if !ended || index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(bad("an index is a number in brackets, like `[0]`"));
                }
                out.push(index);
                closed = true;
            }
            _ if closed => return Err(bad("text after a quote or an index needs a dot first")),
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    if out.is_empty() {
        return Err(KeyError::new("an empty key", None));
    }
    if let Some(s) = out.iter().find(|s| s.contains("__")) {
        return Err(KeyError::new(
            format!(
                "the segment `{s}` holds `__`, which separates segments of a MIXSEEK_ variable"
            ),
            Some("write the key with dots: `team.leader.model`".into()),
        ));
    }
    if out.len() > MAX_SEGMENTS {
        return Err(KeyError::new(
            format!("`{key}` nests deeper than any setting"),
            Some(NO_MATCH.into()),
        ));
    }
    Ok(out)
}

/// A segment as it is written in a dotted key (quoted when it holds more than letters,
/// digits, `_` and `-`).
pub(crate) fn render_segment(seg: &str) -> String {
    if !seg.is_empty()
        && seg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        seg.to_string()
    } else {
        format!("\"{seg}\"")
    }
}

/// The dotted key of a `MIXSEEK_*` variable: `MIXSEEK_HOOKS__0__URL` → `hooks[0].url`.
fn dotted_of_var(var: &str) -> String {
    let rest = var.get("MIXSEEK_".len()..).unwrap_or_default();
    let mut out = String::new();
    for seg in rest.split("__").filter(|s| !s.is_empty()) {
        let seg = seg.to_ascii_lowercase();
        if seg.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&render_segment(&seg));
        }
    }
    out
}

/// The variable a dotted key stands for: `leader.temperature` → `MIXSEEK_LEADER__TEMPERATURE`.
fn var_of(segments: &[String]) -> String {
    let upper: Vec<String> = segments.iter().map(|s| s.to_ascii_uppercase()).collect();
    format!("MIXSEEK_{}", upper.join("__"))
}

/// The first segments of every key a run's files are overlaid with (`orchestrator`, `team`,
/// `leader`, ..., `providers`, `hooks`).
fn section_names() -> Vec<String> {
    LOADED_SECTIONS
        .iter()
        .chain(TOP_LEVEL_TABLES)
        .map(|s| s.to_ascii_lowercase())
        .collect()
}

/// Routes the dotted `key` (whose value is the TOML literal `literal`) to the settings it
/// sets, as the environment variable of the same name would.
pub(crate) fn route(key: &str, literal: &str) -> Result<Routed, KeyError> {
    let segments = parse_segments(key)?;
    let var = var_of(&segments);
    let did_you_mean = |dotted: String| Some(format!("did you mean `{dotted}`?"));
    if let Some((_, meaning)) = NON_SETTING_VARS
        .iter()
        .find(|(v, _)| v.eq_ignore_ascii_case(&var))
    {
        return Err(KeyError::new(
            format!(
                "`{key}` is not a setting of a configuration file: {var} is read by the command line ({meaning})"
            ),
            Some("set it in the environment of the command that runs the experiment".into()),
        ));
    }
    if let Some((_, note)) = UNSUPPORTED_VARS
        .iter()
        .find(|(v, _)| v.eq_ignore_ascii_case(&var))
    {
        return Err(KeyError::new(
            format!("`{key}` names no setting"),
            Some((*note).to_string()),
        ));
    }
    let first = segments[0].to_ascii_uppercase();
    if IGNORED_SECTIONS.contains(&first.as_str()) {
        return Err(KeyError::new(
            format!("`{key}` names no setting of the files a run loads"),
            Some(if first == "MEMBER" {
                "a run does not overlay member files: set `team.members[N].<key>` of an inline member, or the member file itself".into()
            } else {
                "`ui.*` are settings of `mixseek ui`, not of a run".into()
            }),
        ));
    }
    let env = EnvVars(vec![(var.clone(), literal.to_string())]);
    if let Some(issue) = unroutable(&env).into_iter().next() {
        let hint = match issue.hint {
            Some(_) if first_is_section(&first) && segments.len() == 1 => Some(format!(
                "name a key of this section: `{}.<key>`",
                segments[0].to_ascii_lowercase()
            )),
            other => other,
        };
        return Err(KeyError::new(format!("`{key}` names no setting"), hint));
    }
    match route_env_var(&var, literal) {
        EnvRoute::Sets(keys) => {
            // `max_rounds` and `orchestrator.max_rounds` are the same setting; the second
            // form's variable is read after the first, so it wins over a process's
            // `MIXSEEK_MAX_ROUNDS` as well.
            let orchestrator_level = !var.starts_with("MIXSEEK_ORCHESTRATOR__")
                && keys
                    .iter()
                    .all(|(t, k)| *t == "orchestrator" && k.starts_with("orchestrator."));
            let var = if orchestrator_level {
                var.replacen("MIXSEEK_", "MIXSEEK_ORCHESTRATOR__", 1)
            } else {
                var
            };
            Ok(Routed { var, keys })
        }
        EnvRoute::UnknownKey {
            meant,
            orchestrator_level,
            ..
        } => {
            // `leadr.temperature`: a misspelt section reads as an unknown orchestrator key.
            let section = (orchestrator_level && segments.len() >= 2)
                .then(|| {
                    let names = section_names();
                    closest(&segments[0], names.iter().map(String::as_str)).map(|s| {
                        let mut fixed = segments.clone();
                        fixed[0] = s.to_string();
                        dotted_of_var(&var_of(&fixed))
                    })
                })
                .flatten();
            let hint = section
                .or_else(|| meant.map(|m| dotted_of_var(&m)))
                .and_then(did_you_mean)
                .or_else(|| Some(NO_MATCH.to_string()));
            Err(KeyError::new(format!("`{key}` names no setting"), hint))
        }
        EnvRoute::UnknownInValue { key: inner, hint } => Err(KeyError::new(
            format!("the value of `{key}` sets `{inner}`, which is no setting"),
            hint,
        )),
        EnvRoute::Unread => Err(KeyError::new(
            format!("`{key}` names no setting"),
            Some(NO_MATCH.to_string()),
        )),
    }
}

fn first_is_section(first: &str) -> bool {
    LOADED_SECTIONS.contains(&first)
}

/// The settings a `MIXSEEK_*` variable of the environment sets (see [`env_var_keys`]).
pub(crate) fn keys_of_var(var: &str) -> Vec<(&'static str, String)> {
    env_var_keys(var)
}

/// Whether `inner` is `outer` or a key inside it (`cache.enabled` inside `cache`,
/// `hooks[0].url` inside `hooks`).
pub(crate) fn within(inner: &(&'static str, String), outer: &(&'static str, String)) -> bool {
    inner.0 == outer.0
        && (inner.1 == outer.1
            || inner
                .1
                .strip_prefix(outer.1.as_str())
                .is_some_and(|rest| rest.starts_with(['.', '['])))
}

/// The TOML literal of a value, as an environment variable holds it and the overlay reads it
/// back (`"mock:a"` with its quotes, `0.9`, `[1, 2]`, `{ a = 1 }`).
pub(crate) fn literal(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => toml::Value::String(s.clone()).to_string(),
        toml::Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(literal).collect();
            format!("[{}]", inner.join(", "))
        }
        toml::Value::Table(t) => {
            if t.is_empty() {
                return "{}".into();
            }
            let inner: Vec<String> = t
                .iter()
                .map(|(k, v)| format!("{} = {}", toml_key(k), literal(v)))
                .collect();
            format!("{{ {} }}", inner.join(", "))
        }
        other => other.to_string(),
    }
}

/// A key of an inline table, quoted when it is not a bare key.
fn toml_key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        toml::Value::String(k.to_string()).to_string()
    }
}

/// The longest value shown in a grid expansion's name, in characters.
const NAME_VALUE_CHARS: usize = 40;

/// A value as a grid expansion's name shows it: strings without quotes, others as their
/// literal, control characters escaped, cut at [`NAME_VALUE_CHARS`].
pub(crate) fn compact(v: &toml::Value) -> String {
    let text = match v {
        toml::Value::String(s) => s.clone(),
        other => literal(other),
    };
    let escaped: String = text
        .chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect();
    if escaped.chars().count() > NAME_VALUE_CHARS {
        let cut: String = escaped.chars().take(NAME_VALUE_CHARS - 1).collect();
        format!("{cut}…")
    } else {
        escaped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(key: &str, literal: &str) -> String {
        match route(key, literal) {
            Ok(r) => r.var,
            Err(e) => panic!("{key}: {e:?}"),
        }
    }

    fn hint(key: &str) -> String {
        match route(key, "1") {
            Ok(r) => panic!("{key} routed to {r:?}"),
            Err(e) => e.hint.unwrap_or_default(),
        }
    }

    #[test]
    fn keys_route_like_their_variables() {
        assert_eq!(
            var("orchestrator.max_rounds", "3"),
            "MIXSEEK_ORCHESTRATOR__MAX_ROUNDS"
        );
        assert_eq!(var("max_rounds", "3"), "MIXSEEK_ORCHESTRATOR__MAX_ROUNDS");
        assert_eq!(
            var("team.leader.model", "\"mock:a\""),
            "MIXSEEK_TEAM__LEADER__MODEL"
        );
        assert_eq!(
            var("leader.temperature", "0.9"),
            "MIXSEEK_LEADER__TEMPERATURE"
        );
        assert_eq!(
            var("providers.ollama.base_url", "\"http://x\""),
            "MIXSEEK_PROVIDERS__OLLAMA__BASE_URL"
        );
        assert_eq!(var("hooks[0].url", "\"http://x\""), "MIXSEEK_HOOKS__0__URL");
        assert_eq!(
            var("pricing.\"openai:gpt-4.1\".input_per_million", "1.0"),
            "MIXSEEK_PRICING__OPENAI:GPT-4.1__INPUT_PER_MILLION"
        );
        assert_eq!(var("cache.enabled", "true"), "MIXSEEK_CACHE__ENABLED");
        assert_eq!(
            var("judgment.temperature", "0.5"),
            "MIXSEEK_JUDGMENT__TEMPERATURE"
        );
        assert_eq!(
            var("prompt_builder.timezone", "\"UTC\""),
            "MIXSEEK_PROMPT_BUILDER__TIMEZONE"
        );
        // A whole table, as `MIXSEEK_PRIVACY='{...}'`.
        assert_eq!(var("privacy", "{ mask_pii = true }"), "MIXSEEK_PRIVACY");
        let r = route("leader.model", "\"m:x\"").expect("routes");
        assert_eq!(r.keys, [("team", "team.leader.model".to_string())]);
    }

    #[test]
    fn unknown_keys_get_the_closest_key() {
        assert_eq!(
            hint("leader.temprature"),
            "did you mean `leader.temperature`?"
        );
        assert_eq!(
            hint("orchestrator.max_round"),
            "did you mean `orchestrator.max_rounds`?"
        );
        assert_eq!(hint("max_round"), "did you mean `max_rounds`?");
        assert_eq!(
            hint("team.leadr.model"),
            "did you mean `team.leader.model`?"
        );
        assert_eq!(
            hint("leadr.temperature"),
            "did you mean `leader.temperature`?"
        );
        assert_eq!(
            hint("pricing.\"openai:gpt-4o\".input_per_milion"),
            "did you mean `pricing.\"openai:gpt-4o\".input_per_million`?"
        );
        assert!(hint("zzz_qqq").contains("docs/configuration.md"));
        assert!(hint("team").contains("team.<key>"), "{}", hint("team"));
        assert!(hint("ui.colour").contains("mixseek ui"));
        assert!(route("ui.port", "1").is_err());
        assert!(route("workspace", "\"x\"").is_err());
        let e = route("privacy", "{ mask_pi = true }").expect_err("unknown inner key");
        assert!(e.message.contains("privacy.mask_pi"), "{e:?}");
        assert_eq!(e.hint.as_deref(), Some("did you mean `mask_pii`?"));
    }

    #[test]
    fn malformed_keys_are_reported() {
        for k in [
            "", "a..b", "a.", ".a", "a[x]", "[0]", "\"a", "a__b", "\"a\"b",
        ] {
            assert!(parse_segments(k).is_err(), "{k}");
        }
        assert_eq!(
            parse_segments("pricing.\"a.b\".input").expect("ok"),
            ["pricing", "a.b", "input"]
        );
        assert_eq!(
            parse_segments("hooks[0][1].url").expect("ok"),
            ["hooks", "0", "1", "url"]
        );
    }

    #[test]
    fn literals_read_back_as_the_same_value() {
        let t: toml::Table = toml::from_str(
            "s = \"a \\\"q\\\" b\"\ni = -3\nf = 3.0\nb = true\na = [1, \"x\"]\nt = { k = 1, \"a b\" = \"v\" }\nd = 1979-05-27\n",
        )
        .expect("toml");
        for (k, v) in &t {
            let back = crate::env::parse_value(&literal(v));
            assert_eq!(&back, v, "{k}: {}", literal(v));
        }
        assert_eq!(literal(&toml::Value::Float(0.9)), "0.9");
        assert_eq!(compact(&toml::Value::String("mock:a".into())), "mock:a");
        assert_eq!(compact(&toml::Value::Float(0.2)), "0.2");
        assert_eq!(compact(&toml::Value::String("a\nb".into())), "a\\nb");
        assert_eq!(
            compact(&toml::Value::String("x".repeat(50)))
                .chars()
                .count(),
            40
        );
    }

    #[test]
    fn within_follows_tables_and_arrays() {
        let k = |t: &'static str, k: &str| (t, k.to_string());
        assert!(within(
            &k("orchestrator", "cache.enabled"),
            &k("orchestrator", "cache")
        ));
        assert!(within(
            &k("orchestrator", "hooks[0].url"),
            &k("orchestrator", "hooks")
        ));
        assert!(!within(
            &k("orchestrator", "cache_x"),
            &k("orchestrator", "cache")
        ));
        assert!(!within(&k("team", "cache"), &k("orchestrator", "cache")));
        assert_eq!(
            keys_of_var("MIXSEEK_LEADER__MODEL"),
            [("team", "team.leader.model".to_string())]
        );
    }
}
