//! Exports to JSON, CSV and Parquet, read back.

use crate::common;

use common::*;
use mixseek_core::{Attachment, PiiMasker};
use mixseek_store::export::{ExportFormat, export, export_tables};
use mixseek_store::{ExperimentItem, ExperimentRecord, Store};
use serde_json::json;

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
    // (and one per arena, theme and experiment table: none here, see arena.rs and below)
    assert_eq!(rep.files.len(), export_tables().count());
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
            ("experiment_arenas", 0),
            ("experiment_arena_ratings", 0),
            ("theme_analyses", 0),
            ("comment_themes", 0),
            ("experiments", 0),
            ("experiment_items", 0),
            ("execution_attachments", 0)
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

fn attachment(name: &str, text: &str) -> Attachment {
    Attachment {
        name: name.into(),
        media_type: "text/plain".into(),
        size_bytes: text.len() as u64,
        sha256: "ab".repeat(32),
        text: text.into(),
        truncated: false,
    }
}

fn item(experiment: &str, task: &str, variant: &str, execution: &str) -> ExperimentItem {
    ExperimentItem {
        experiment_id: experiment.into(),
        task_id: task.into(),
        variant: variant.into(),
        repeat_index: 0,
        execution_id: execution.into(),
        task_metadata: json!({"topic": format!("{task} metals"), "tags": ["a", "b"]}),
    }
}

/// Two experiments: `copper` (EXEC plays t2/base, EXEC2 plays t1/base, an unstarted
/// execution plays t1/other) and `zinc` (only an unstarted execution), plus EXEC's two
/// attachments written in reverse order of their names.
async fn experiments(store: &Store) {
    let writer = store.writer(PiiMasker::disabled()).expect("writer");
    for name in ["zinc", "copper"] {
        writer
            .write_experiment(&ExperimentRecord {
                experiment_id: name.into(),
                experiment_hash: format!("hash-{name}"),
                definition: json!({"name": name, "repeats": 1, "variants": [{"name": "base"}]}),
                created_at: None,
            })
            .await
            .expect("experiment");
    }
    for i in [
        item("copper", "t2", "base", EXEC),
        item("copper", "t1", "other", "never-started"),
        item("copper", "t1", "base", EXEC2),
        item("zinc", "t1", "base", "zinc-run"),
    ] {
        writer.write_experiment_item(&i).await.expect("item");
    }
    writer
        .write_attachments(
            EXEC,
            &[
                attachment("z.txt", "first, \"quoted\""),
                attachment("a.txt", "second"),
            ],
        )
        .await
        .expect("attachments");
    writer
        .write_attachments("zinc-run", &[attachment("zinc.txt", "zinc")])
        .await
        .expect("attachments");
}

#[tokio::test]
async fn the_experiment_tables_are_exported_in_a_fixed_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    populate(&writer).await;
    experiments(&store).await;
    let one = [EXEC.to_string()];

    // One execution: its item, its experiment, its attachments in their order.
    let json_path = dir.path().join("one.json");
    let rep = export(&store, Some(&one), ExportFormat::Json, &json_path).expect("json");
    let count = |table: &str| {
        rep.rows
            .iter()
            .find(|(t, _)| t == table)
            .map(|(_, n)| *n)
            .expect(table)
    };
    assert_eq!(
        (
            count("experiments"),
            count("experiment_items"),
            count("execution_attachments")
        ),
        (1, 1, 2)
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).expect("read")).expect("parse");
    let tables = &doc["tables"];
    assert_eq!(tables["experiments"][0]["experiment_id"], "copper");
    // JSON columns are embedded as JSON
    assert_eq!(tables["experiments"][0]["definition"]["repeats"], 1);
    assert_eq!(tables["experiment_items"][0]["task_id"], "t2");
    assert_eq!(
        tables["experiment_items"][0]["task_metadata"]["tags"],
        json!(["a", "b"])
    );
    let names: Vec<&str> = tables["execution_attachments"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(names, ["z.txt", "a.txt"], "by position");
    assert_eq!(tables["execution_attachments"][0]["position"], 0);

    // Everything: every experiment and item (unstarted ones too), in key order, and the same
    // files twice.
    let all = |name: &str| {
        let out = dir.path().join(name);
        export(&store, None, ExportFormat::Csv, &out).expect("csv");
        out
    };
    let (first, second) = (all("csv1"), all("csv2"));
    for table in ["experiments", "experiment_items", "execution_attachments"] {
        let file = format!("{table}.csv");
        assert_eq!(
            std::fs::read(first.join(&file)).expect("read"),
            std::fs::read(second.join(&file)).expect("read"),
            "{table}: the same database exports the same file"
        );
    }
    let column = |table: &str, name: &str| -> Vec<String> {
        let mut reader = csv::Reader::from_path(first.join(format!("{table}.csv"))).expect("csv");
        let at = reader
            .headers()
            .expect("headers")
            .iter()
            .position(|h| h == name)
            .expect(name);
        reader
            .records()
            .map(|r| r.expect("record")[at].to_string())
            .collect()
    };
    // by creation time (the fixed clock: equal), then name
    assert_eq!(column("experiments", "experiment_id"), ["copper", "zinc"]);
    assert_eq!(
        column("experiment_items", "execution_id"),
        [EXEC2, "never-started", EXEC, "zinc-run"],
        "by experiment, task, variant, repeat"
    );
    assert_eq!(
        column("execution_attachments", "text"),
        ["first, \"quoted\"", "second", "zinc"]
    );
    let metadata: serde_json::Value =
        serde_json::from_str(&column("experiment_items", "task_metadata")[0]).expect("json text");
    assert_eq!(metadata["topic"], "t1 metals");

    // Parquet: one typed file per table.
    let pq = dir.path().join("pq");
    let rep = export(&store, None, ExportFormat::Parquet, &pq).expect("parquet");
    assert!(rep.rows.contains(&("experiment_items".to_string(), 4)));
    let file = std::fs::File::open(pq.join("execution_attachments.parquet")).expect("open");
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("parquet");
    let schema = builder.schema().clone();
    assert_eq!(
        schema
            .field_with_name("truncated")
            .expect("truncated")
            .data_type(),
        &duckdb::arrow::datatypes::DataType::Boolean
    );
    let rows: usize = builder
        .build()
        .expect("reader")
        .map(|b| b.expect("batch").num_rows())
        .sum();
    assert_eq!(rows, 3);
}
