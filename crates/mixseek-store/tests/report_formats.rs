//! Every report in every format, from the same deterministic database (insta snapshots), and
//! the HTML report's escaping.

mod common;

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
    for (fmt, name) in FORMATS {
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
    assert_eq!(rounds.len(), 6);
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
        "まだ改善の余地がある",
        "Timeout after 600s",
        "検索結果: 3 件",
        "ラウンド 2 のプロンプト",
        "日本の少子化対策について提言してください",
    ] {
        assert!(page.contains(needle), "missing `{needle}`");
    }
    assert_eq!(page.matches("<details class=\"round\"").count(), 6);
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
