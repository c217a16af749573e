//! Every report in every format, from the same deterministic database (insta snapshots), and
//! the HTML report's escaping. The database has a round whose evaluation never finished
//! (shown as `not evaluated`, never ranked) and a metric that failed and was skipped (shown as
//! `failed` with its error, never as a 0.00 score).

use crate::common;

use common::*;
use mixseek_store::report::{self, Format, html};
use mixseek_store::{LeaderboardScope, Store};

const FORMATS: [(Format, &str); 4] = [
    (Format::Table, "table"),
    (Format::Json, "json"),
    (Format::Csv, "csv"),
    (Format::Markdown, "markdown"),
];

async fn fixture() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    populate(&writer).await;
    drop(writer);
    (dir, store)
}

#[tokio::test]
async fn leaderboard_in_every_format() {
    let (_dir, store) = fixture().await;
    let (exec, rows) = store
        .leaderboard(&LeaderboardScope::Execution(EXEC.into()))
        .expect("lb");
    let (_, all) = store.leaderboard(&LeaderboardScope::All).expect("all");
    for (fmt, name) in FORMATS {
        insta::assert_snapshot!(
            format!("leaderboard_{name}"),
            report::leaderboard(&rows, exec.as_deref(), fmt).expect("render")
        );
    }
    insta::assert_snapshot!(
        "leaderboard_all_table",
        report::leaderboard(&all, None, Format::Table).expect("render")
    );
    insta::assert_snapshot!(
        "leaderboard_empty_table",
        report::leaderboard(&[], Some("x"), Format::Table).expect("render")
    );
    assert_eq!(
        report::leaderboard(&[], Some("x"), Format::Json).expect("render"),
        "[]\n"
    );
}

#[tokio::test]
async fn executions_in_every_format() {
    let (_dir, store) = fixture().await;
    let rows = store.executions(None).expect("executions");
    for (fmt, name) in FORMATS {
        insta::assert_snapshot!(
            format!("executions_{name}"),
            report::executions(&rows, fmt).expect("render")
        );
    }
}

#[tokio::test]
async fn history_in_every_format() {
    let (_dir, store) = fixture().await;
    let rows = store.history(EXEC, None).expect("history");
    for (fmt, name) in FORMATS {
        insta::assert_snapshot!(
            format!("history_{name}"),
            report::history(&rows, EXEC, None, fmt).expect("render")
        );
    }
    let beta = store.history(EXEC, Some("beta")).expect("history");
    assert_eq!(beta.len(), 2);
    insta::assert_snapshot!(
        "history_team_table",
        report::history(&beta, EXEC, Some("beta"), Format::Table).expect("render")
    );
}

#[tokio::test]
async fn show_in_every_format() {
    let (_dir, store) = fixture().await;
    let overview = store.execution_overview(EXEC).expect("overview");
    let rounds = store.team_rounds(EXEC, "alpha").expect("rounds");
    let history = store.history(EXEC, Some("alpha")).expect("history");
    let detail = store
        .round_detail(EXEC, "beta", 1)
        .expect("detail")
        .expect("exists");
    // alpha's round 3: its Coverage metric failed and was skipped
    let failed_metric = store
        .round_detail(EXEC, "alpha", 3)
        .expect("detail")
        .expect("exists");
    // gamma's round 2: submitted, never evaluated
    let unevaluated = store
        .round_detail(EXEC, "gamma", 2)
        .expect("detail")
        .expect("the unevaluated round is shown");
    assert!(!unevaluated.evaluated);
    let gamma_rounds = store.team_rounds(EXEC, "gamma").expect("rounds");
    let gamma_history = store.history(EXEC, Some("gamma")).expect("history");
    assert_eq!(
        gamma_rounds.len(),
        1,
        "only the evaluated round is completed"
    );
    assert_eq!(gamma_history.len(), 2, "the history lists both rounds");
    for (fmt, name) in FORMATS {
        insta::assert_snapshot!(
            format!("show_round_failed_metric_{name}"),
            report::show_round(&failed_metric, fmt).expect("render")
        );
        insta::assert_snapshot!(
            format!("show_round_unevaluated_{name}"),
            report::show_round(&unevaluated, fmt).expect("render")
        );
        insta::assert_snapshot!(
            format!("show_team_unevaluated_{name}"),
            report::show_team(EXEC, "gamma", &gamma_rounds, &gamma_history, fmt).expect("render")
        );
        insta::assert_snapshot!(
            format!("show_execution_{name}"),
            report::show_execution(&overview, fmt).expect("render")
        );
        insta::assert_snapshot!(
            format!("show_team_{name}"),
            report::show_team(EXEC, "alpha", &rounds, &history, fmt).expect("render")
        );
        insta::assert_snapshot!(
            format!("show_round_{name}"),
            report::show_round(&detail, fmt).expect("render")
        );
    }
}

#[tokio::test]
async fn json_outputs_parse_back() {
    let (_dir, store) = fixture().await;
    let rows = store.executions(None).expect("executions");
    let v: serde_json::Value =
        serde_json::from_str(&report::executions(&rows, Format::Json).expect("json"))
            .expect("parses");
    assert_eq!(v[0]["execution_id"], EXEC);
    assert_eq!(v[0]["created_at"], "2025-11-19T12:00:00Z");
    let detail = store
        .round_detail(EXEC, "alpha", 2)
        .expect("d")
        .expect("exists");
    let v: serde_json::Value =
        serde_json::from_str(&report::show_round(&detail, Format::Json).expect("json"))
            .expect("parses");
    assert_eq!(
        v["score_details"]["metrics"][0]["metric_name"],
        "ClarityCoherence"
    );
    assert_eq!(v["decision"]["judgment"]["confidence_score"], 0.7);
}

#[tokio::test]
async fn html_report_is_self_contained_and_escapes_every_text() {
    let (_dir, store) = fixture().await;
    let overview = store.execution_overview(EXEC).expect("overview");
    let (_, lb) = store
        .leaderboard(&LeaderboardScope::Execution(EXEC.into()))
        .expect("lb");
    let rounds = store.round_details(EXEC).expect("details");
    assert_eq!(
        rounds.len(),
        7,
        "six evaluated rounds and gamma's unevaluated one"
    );
    assert_eq!(
        rounds
            .iter()
            .filter(|r| !r.evaluated)
            .map(|r| (r.team_id.as_str(), r.round_number))
            .collect::<Vec<_>>(),
        vec![("gamma", 2)]
    );
    let page = html::render(&html::ReportData {
        overview: &overview,
        leaderboard: &lb,
        rounds: &rounds,
    });
    assert!(page.starts_with("<!DOCTYPE html>"));
    // the submission's markup stays text
    assert!(
        !page.contains("<script>"),
        "a <script> tag leaked into the report"
    );
    assert!(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; more"));
    assert!(page.contains("Beta&#39;s &quot;final&quot; answer"));
    // nothing is loaded from elsewhere
    for needle in ["src=", "href=", "@import", "url("] {
        assert!(!page.contains(needle), "external reference `{needle}`");
    }
    // every section is there
    for needle in [
        "<svg class=\"chart\"",
        "<polyline",
        "Alpha Team",
        "ベータ",
        "明確さ: 87.5",
        "(+1 not evaluated)",
        "まだ改善の余地がある",
        "Timeout after 600s",
        "検索結果: 3 件",
        "ラウンド 2 のプロンプト",
        "日本の少子化対策について提言してください",
    ] {
        assert!(page.contains(needle), "missing `{needle}`");
    }
    assert_eq!(page.matches("<details class=\"round\"").count(), 7);
    // the unevaluated round is listed, marked, with its submission, and out of the chart
    assert!(page.contains(
        "<summary>Round 2<span class=\"badge unevaluated\">not evaluated</span></summary>"
    ));
    assert!(page.contains("gamma&#39;s second try"));
    assert!(page.contains("二回目の検索結果"));
    assert!(!page.contains("Gamma — round 2:"), "no chart point for it");
    // a failed metric shows as failed with its error, not as 0.00
    assert!(page.contains(
        "<tr class=\"failed\"><td>Coverage</td><td class=\"num\">failed</td><td>the judge did not answer within 60s</td></tr>"
    ));
    assert!(!page.contains("<td class=\"num\">0.00</td>"));
    // team names in the chart are escaped too
    let mut evil = rounds.clone();
    evil[0].team_name = "<b onmouseover=alert(1)>".into();
    let page = html::render(&html::ReportData {
        overview: &overview,
        leaderboard: &lb,
        rounds: &evil,
    });
    assert!(!page.contains("<b onmouseover"));
    insta::assert_snapshot!(
        "html_report",
        html::render(&html::ReportData {
            overview: &overview,
            leaderboard: &lb,
            rounds: &rounds
        })
    );
}
