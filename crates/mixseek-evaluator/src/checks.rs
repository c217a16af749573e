//! What the evaluator checks in a configuration before anything runs, for `exec --dry-run` and
//! `config validate`: the metric names (built-in, custom LLM judge or command) and the one
//! weight rule that needs the built-in names (two names for one built-in metric). The
//! configuration crate checks everything else; these need the evaluator's list of metrics.

use crate::builtin::{BUILTIN_METRICS, builtin_metric};
use mixseek_config::preflight::{Category, Check, CheckStatus};
use mixseek_config::{ConfigIssue, EvaluatorSettings};
use mixseek_config::{LoadReport, Part};

/// The preflight category `メトリクス名`: one check per metric, as the original words them.
pub fn metric_names(part: &Part<EvaluatorSettings>) -> Category {
    let file = part.origin.file();
    let checks = match &part.value {
        None => vec![Check::new(
            "metrics",
            CheckStatus::Skipped,
            "Evaluator設定が読み込めないためスキップ",
            None,
        )],
        Some(ev) if ev.metrics.is_empty() => vec![Check::new(
            "metrics",
            CheckStatus::Error,
            "メトリクスが定義されていません: add at least one [[metrics]] entry",
            file,
        )],
        Some(ev) => ev
            .metrics
            .iter()
            .map(|m| {
                let name = format!("metric_{}", m.name);
                if m.name.trim().is_empty() {
                    Check::new(
                        "metric_name_empty",
                        CheckStatus::Error,
                        "メトリクス名が空です",
                        None,
                    )
                } else if let Some(b) = builtin_metric(&m.name) {
                    Check::new(name, CheckStatus::Ok, format!("ビルトインメトリクス '{b}'"), None)
                } else if m.kind == Some(mixseek_config::MetricType::Command) {
                    Check::new(
                        name,
                        CheckStatus::Ok,
                        format!("コマンドメトリクス '{}'", m.name),
                        None,
                    )
                } else if m
                    .system_instruction
                    .as_ref()
                    .is_some_and(|s| !s.trim().is_empty())
                {
                    Check::new(
                        name,
                        CheckStatus::Ok,
                        format!(
                            "カスタムメトリクス '{}' (LLM judge with its own system_instruction)",
                            m.name
                        ),
                        None,
                    )
                } else {
                    let builtins: Vec<&str> = BUILTIN_METRICS.iter().map(|(c, _)| *c).collect();
                    let suggestion = mixseek_config::closest(
                        &m.name,
                        BUILTIN_METRICS.iter().flat_map(|(c, a)| [*c, *a]),
                    )
                    .map(|s| format!(" Did you mean '{s}'?"))
                    .unwrap_or_default();
                    Check::new(
                        name,
                        CheckStatus::Error,
                        format!(
                            "メトリクス '{}' が見つかりません: Metric class not found: '{}'. Available metrics: {}.{suggestion} A custom metric needs a system_instruction (LLM judge) or type = \"command\".",
                            m.name,
                            m.name,
                            builtins.join(", ")
                        ),
                        file,
                    )
                }
            })
            .collect(),
    };
    Category {
        category: "メトリクス名".into(),
        checks,
    }
}

/// Adds to `report` the problems only the evaluator can see (two names for one built-in
/// metric, `coverage` and `Coverage`): the same message the evaluator gives at run time.
pub fn check_loaded(report: &mut LoadReport) {
    let Some(ev) = &report.evaluator.value else {
        return;
    };
    let names: Vec<String> = ev
        .metrics
        .iter()
        .map(|m| m.name.trim().to_string())
        .collect();
    if names.iter().any(String::is_empty) {
        return; // reported by the configuration crate
    }
    let weights: Vec<Option<f64>> = ev.metrics.iter().map(|m| m.weight).collect();
    if mixseek_config::resolve_weights(&names, &weights, &names).is_err() {
        return; // reported by the configuration crate, with the configured names
    }
    let reported: Vec<String> = names
        .iter()
        .map(|n| builtin_metric(n).map_or_else(|| n.clone(), str::to_string))
        .collect();
    if let Err(message) = mixseek_config::resolve_weights(&names, &weights, &reported) {
        let mut issue = ConfigIssue::new("metrics", message)
            .with_hint("name each built-in metric once (its name or its snake_case alias)");
        if let Some(file) = report.evaluator.origin.file() {
            issue = issue.in_file(file);
            // The same position the configuration crate gives its weight errors.
            if let Some((line, column)) = mixseek_config::TomlDoc::read(file, "evaluator")
                .ok()
                .and_then(|doc| doc.position("metrics"))
            {
                issue = issue.at(line, column);
            }
        }
        report.evaluator.errors.push(issue);
    }
}
