//! Renders the default team prompt with a 10-round history and a 5-team ranking, and reports
//! renders per second against the target (≥ 20,000/s): PASS or MISS, as the other benches.
//! Run: `cargo bench -p mixseek-prompt --bench render`.

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use chrono::{TimeZone, Utc};
use mixseek_prompt::{
    FixedClock, HistoryRound, InjectionPhase, PromptBuilder, PromptBuilderSettings, PromptContext,
    RankingEntry, TemplateKind,
};
use serde_json::json;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn context() -> PromptContext {
    let round_history = (1..=10)
        .map(|n| HistoryRound {
            round_number: n,
            submission_content: format!("## 提出 {n}\n").repeat(20) + &"本文のテキスト。".repeat(60),
            evaluation_score: 60.0 + f64::from(n) * 3.25,
            score_details: json!({
                "overall_score": 60.0 + f64::from(n) * 3.25,
                "metrics": [
                    {"metric_name": "ClarityCoherence", "score": 80.0 + f64::from(n), "evaluator_comment": "構成は明瞭だが、結論がやや弱い。"},
                    {"metric_name": "Coverage", "score": 70.5, "evaluator_comment": "主要な観点は網羅されている。"},
                    {"metric_name": "Relevance", "score": 90.0, "evaluator_comment": "タスクに的確に答えている。"}
                ]
            }),
        })
        .collect();
    let ranking: Vec<RankingEntry> = (1..=5)
        .map(|i| RankingEntry {
            team_id: format!("team-{i}"),
            team_name: format!("Team {i}"),
            max_score: 100.0 - f64::from(i) * 4.5,
            total_rounds: 10,
        })
        .collect();
    PromptContext {
        user_prompt: "最新のAIエージェント研究の動向を調査し、主要な論点をまとめてください。"
            .into(),
        round_number: 11,
        team_id: "team-3".into(),
        team_name: "Team 3".into(),
        execution_id: Some("exec-bench".into()),
        round_history,
        ranking: Some(ranking.into()),
        domain_context: Some("Software development, AI".into()),
        language: Some("ja".into()),
        ..Default::default()
    }
}

/// The target for the default team prompt.
const TARGET_RENDERS_PER_SEC: f64 = 20_000.0;

/// Renders per second of `f` over ~3 s (after a warm-up), printed with `label`.
fn measure(label: &str, mut f: impl FnMut() -> usize) -> f64 {
    // warm-up
    for _ in 0..200 {
        black_box(f());
    }
    let mut n = 0u64;
    let mut bytes = 0usize;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        for _ in 0..100 {
            bytes += black_box(f());
        }
        n += 100;
    }
    let secs = start.elapsed().as_secs_f64();
    let rate = n as f64 / secs;
    println!(
        "{label:<48} {rate:>10.0} renders/s  {:>8.2} µs/render  ({} bytes/render)",
        secs * 1e6 / n as f64,
        bytes / n as usize
    );
    rate
}

fn main() {
    let now = Utc
        .with_ymd_and_hms(2025, 11, 25, 5, 30, 0)
        .single()
        .unwrap();
    let builder = PromptBuilder::with_zone(
        &PromptBuilderSettings::default(),
        chrono_tz::Tz::Asia__Tokyo,
    )
    .unwrap()
    .with_clock(Arc::new(FixedClock(now)));
    let ctx = context();
    println!(
        "mixseek-prompt render benchmark (default templates, 10-round history, 5-team ranking)"
    );
    let team_rate = measure("team prompt", || {
        builder.render(TemplateKind::Team, &ctx).unwrap().len()
    });
    measure("judgment prompt", || {
        builder.render(TemplateKind::Judgment, &ctx).unwrap().len()
    });
    measure("team prompt + user injections", || {
        builder
            .render_with_injections(TemplateKind::Team, &ctx)
            .unwrap()
            .prompt
            .len()
    });
    measure("team system injections (language, domain)", || {
        builder
            .inject_system(InjectionPhase::Team, "You lead a team.", &ctx)
            .unwrap()
            .prompt
            .len()
    });
    measure("submission_history formatter alone", || {
        mixseek_prompt::format_submission_history(
            &ctx.round_history,
            &mixseek_prompt::TagGuard::default(),
        )
        .len()
    });
    measure("current_datetime alone", || {
        mixseek_prompt::format_current_datetime(now, chrono_tz::Tz::Asia__Tokyo).len()
    });
    let eval = PromptContext {
        submission: Some("提出内容".repeat(200)),
        ..ctx.clone()
    };
    measure("evaluator prompt", || {
        builder
            .render(TemplateKind::Evaluator, &eval)
            .unwrap()
            .len()
    });
    let met = team_rate >= TARGET_RENDERS_PER_SEC;
    println!(
        "\nteam prompt: {team_rate:.0} renders/s (target >= {TARGET_RENDERS_PER_SEC:.0}): {}",
        if met { "PASS" } else { "MISS" }
    );
}
