//! Exports to JSON, CSV and Parquet, read back.

use crate::common;

use common::*;
use mixseek_store::export::{ExportFormat, export};

#[tokio::test]
async fn exports_one_execution_or_all() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    populate(&writer).await;
    let one = [EXEC.to_string()];

    // JSON: one document, JSON columns embedded, timestamps as ISO strings
    let json_path = dir.path().join("out").join("e.json");
    let rep = export(&store, Some(&one), ExportFormat::Json, &json_path).expect("json");
    assert_eq!(rep.rows[0], ("execution_summary".to_string(), 1));
    assert_eq!(rep.rows[1], ("leader_board".to_string(), 6));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).expect("read")).expect("parse");
    assert_eq!(doc["executions"], serde_json::json!([EXEC]));
    let lb = &doc["tables"]["leader_board"];
    assert_eq!(lb.as_array().map(Vec::len), Some(6));
    assert_eq!(
        lb[0]["score_details"]["metrics"][0]["metric_name"],
        "ClarityCoherence"
    );
    assert_eq!(
        doc["tables"]["round_status"][0]["round_started_at"],
        "2025-11-19T12:01:40Z"
    );
    assert_eq!(doc["tables"]["llm_calls"].as_array().map(Vec::len), Some(1));
    // the unevaluated round is exported with its submission and member outputs
    let unevaluated: Vec<&serde_json::Value> = doc["tables"]["round_history"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .filter(|r| r["team_id"] == "gamma" && r["round_number"] == 2)
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(unevaluated.len(), 1);
    assert_eq!(unevaluated[0]["submission_content"], "gamma's second try");
    assert_eq!(
        unevaluated[0]["member_submissions_record"]["submissions"][0]["content"],
        "二回目の検索結果"
    );

    // CSV: one file per table, RFC 4180 quoting of the submission with quotes and commas
    let csv_dir = dir.path().join("csv");
    let rep = export(&store, None, ExportFormat::Csv, &csv_dir).expect("csv");
    // (and one per arena and theme table: none here, see arena.rs)
    assert_eq!(rep.files.len(), 10);
    let mut reader = csv::Reader::from_path(csv_dir.join("leader_board.csv")).expect("csv");
    let headers = reader.headers().expect("headers").clone();
    let content_col = headers
        .iter()
        .position(|h| h == "submission_content")
        .expect("column");
    let contents: Vec<String> = reader
        .records()
        .map(|r| r.expect("record")[content_col].to_string())
        .collect();
    assert_eq!(contents.len(), 7, "both executions");
    assert!(contents.contains(&"Beta's \"final\" answer".to_string()));

    // Parquet: typed columns, readable by any Parquet reader
    let pq_dir = dir.path().join("pq");
    let rep = export(&store, Some(&one), ExportFormat::Parquet, &pq_dir).expect("parquet");
    // round_history has gamma's unevaluated round 2 too
    assert_eq!(
        rep.rows,
        [
            ("execution_summary", 1),
            ("leader_board", 6),
            ("round_history", 7),
            ("round_status", 6),
            ("llm_calls", 1),
            ("arena_runs", 0),
            ("arena_games", 0),
            ("arena_ratings", 0),
            ("theme_analyses", 0),
            ("comment_themes", 0)
        ]
        .map(|(t, n)| (t.to_string(), n))
    );
    let file = std::fs::File::open(pq_dir.join("leader_board.parquet")).expect("open");
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("parquet");
    let schema = builder.schema().clone();
    let score = schema.field_with_name("score").expect("score");
    assert_eq!(
        score.data_type(),
        &duckdb::arrow::datatypes::DataType::Float64
    );
    let created = schema.field_with_name("created_at").expect("created_at");
    assert!(
        matches!(
            created.data_type(),
            duckdb::arrow::datatypes::DataType::Timestamp(_, Some(_))
        ),
        "{created:?}"
    );
    let rows: usize = builder
        .build()
        .expect("reader")
        .map(|b| b.expect("batch").num_rows())
        .sum();
    assert_eq!(rows, 6);
    // an empty table still gets a file with its columns
    let none = [String::from("no-such-execution")];
    let rep = export(
        &store,
        Some(&none),
        ExportFormat::Parquet,
        &dir.path().join("empty"),
    )
    .expect("empty");
    assert!(rep.rows.iter().all(|(_, n)| *n == 0));
    assert!(dir.path().join("empty").join("llm_calls.parquet").exists());
}
