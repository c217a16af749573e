//! Preflight check of the names a template uses: every top-level name a template (or an
//! injection rule's `when` / `text`) reads must be one of its variables, so a typo such as
//! `{{ user_promt }}` is reported before round 1 rather than when the template first renders.
//!
//! A name that the template only tests — `x is defined`, `x is not defined`, `x is undefined`
//! — or gives a default — `x | default(…)`, `x | d(…)` — is allowed: such a template is
//! written to cope with the name being absent, and renders fine without it.

use crate::error::{Location, PromptError, TemplateName};

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Byte offsets of `name` as a whole word in `text`.
fn word_positions<'a>(text: &'a str, name: &'a str) -> impl Iterator<Item = usize> + 'a {
    text.match_indices(name).filter_map(move |(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + name.len()..].chars().next();
        let boundary =
            before.is_none_or(|c| !is_ident(c) && c != '.') && after.is_none_or(|c| !is_ident(c));
        boundary.then_some(i)
    })
}

/// True when offset `i` of `source` lies inside a `{{ … }}` or `{% … %}` tag.
fn inside_tag(source: &str, i: usize) -> bool {
    let before = &source[..i];
    let open = before.rfind("{{").max(before.rfind("{%"));
    let close = before.rfind("}}").max(before.rfind("%}"));
    match (open, close) {
        (Some(o), Some(c)) => o > c,
        (Some(_), None) => true,
        _ => false,
    }
}

/// True when the use of a name that ends at `end` is a test for its presence or has a default.
fn guarded_at(text: &str, end: usize) -> bool {
    let rest = text[end..].trim_start();
    if let Some(r) = rest.strip_prefix("is") {
        let r = r.trim_start();
        let r = r.strip_prefix("not").map_or(r, str::trim_start);
        return r.starts_with("defined") || r.starts_with("undefined");
    }
    if let Some(r) = rest.strip_prefix('|') {
        let r = r.trim_start();
        return r.starts_with("default")
            || (r.starts_with('d') && r[1..].chars().next().is_none_or(|c| !is_ident(c)));
    }
    false
}

/// The first position of `name` in `text` (inside a tag when `tagged`), and whether some use
/// of it is guarded.
fn locate(text: &str, name: &str, tagged: bool) -> (Option<usize>, bool) {
    let mut first = None;
    let mut guarded = false;
    for i in word_positions(text, name) {
        if tagged && !inside_tag(text, i) {
            continue;
        }
        first.get_or_insert(i);
        guarded |= guarded_at(text, i + name.len());
    }
    (first, guarded)
}

/// One [`PromptError::UndefinedVariable`] per name of `used` that is not in `available` and
/// not guarded, in name order, each with its position in `text` and a "did you mean" hint.
/// `tagged`: `text` is a template (names are looked for inside tags); otherwise it is a bare
/// expression.
pub(crate) fn unknown_variables(
    template: &TemplateName,
    text: &str,
    tagged: bool,
    used: impl IntoIterator<Item = String>,
    available: &[&str],
) -> Vec<PromptError> {
    let mut unknown: Vec<String> = used
        .into_iter()
        .filter(|n| !available.contains(&n.as_str()))
        .collect();
    unknown.sort();
    unknown.dedup();
    let mut errors = Vec::new();
    for name in unknown {
        let (first, guarded) = locate(text, &name, tagged);
        if guarded {
            continue;
        }
        let location = first.map_or_else(Location::default, |i| {
            let (line, column) = crate::error::line_col(text, i);
            Location {
                line: u32::try_from(line).ok(),
                column: u32::try_from(column).ok(),
            }
        });
        let hint = mixseek_config::closest(&name, available.iter().copied())
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        errors.push(PromptError::UndefinedVariable {
            template: template.clone(),
            location,
            unknown: vec![name.clone()],
            available: available.iter().map(|s| s.to_string()).collect(),
            detail: format!("unknown variable `{name}`{hint}"),
        });
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::TemplateKind;

    fn check(text: &str, used: &[&str]) -> Vec<String> {
        unknown_variables(
            &TemplateName::Prompt(TemplateKind::Team),
            text,
            true,
            used.iter().map(|s| s.to_string()),
            &["user_prompt", "round_number"],
        )
        .iter()
        .map(ToString::to_string)
        .collect()
    }

    #[test]
    fn unknown_names_get_a_position_and_a_suggestion() {
        assert_eq!(
            check("a\n  {{ user_promt }}", &["user_promt"]),
            [
                "Jinja2 template error: team_user_prompt (line 2, column 6): unknown variable `user_promt` (did you mean `user_prompt`?); available variables: user_prompt, round_number"
            ]
        );
        let e = check(
            "{{ zzz }} user_prompt {{ user_prompt }}",
            &["zzz", "user_prompt"],
        );
        assert_eq!(e.len(), 1);
        assert!(
            e[0].contains("(line 1, column 4): unknown variable `zzz`; "),
            "{}",
            e[0]
        );
    }

    #[test]
    fn guarded_names_are_allowed() {
        for text in [
            "{% if extra is defined %}{{ extra }}{% endif %}",
            "{% if extra is not defined %}x{% endif %}",
            "{% if extra is undefined %}x{% endif %}",
            "{{ extra | default('x') }}",
            "{{ extra|d('x') }}",
        ] {
            assert_eq!(check(text, &["extra"]), Vec::<String>::new(), "{text}");
        }
        // `dd` is not the `d` filter, and a mention outside a tag is not a use.
        assert_eq!(
            check("extra is defined {{ extra|dd }}", &["extra"]).len(),
            1
        );
    }

    #[test]
    fn attribute_names_are_not_confused_with_variables() {
        let e = check("{{ user_prompt.extra }} {{ extra }}", &["extra"]);
        assert!(e[0].contains("(line 1, column 28)"), "{}", e[0]);
    }
}
