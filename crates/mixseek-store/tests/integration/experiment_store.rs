//! Experiment rows written through the store: an item's task metadata is masked by the
//! masking handle that writes it; the merge of shard files refuses a shard of another schema
//! version before it changes anything; of an interrupted copy and a finished one of an
//! execution given to one merge, in either order, the finished one is kept, its rows once.
//! (A shard another process is still writing is refused too: that needs a second process,
//! see workspace-tests' e2e `experiment.rs`.)

use crate::common;
use crate::migration::downgrade_to_v6;

use common::{EXEC, open_with_writer, populate, raw};
use mixseek_core::{MaskingSpec, PiiMasker};
use mixseek_store::merge::merge;
use mixseek_store::{ExperimentItem, ExperimentRecord, SCHEMA_VERSION, Store, StoreError};
use serde_json::json;
use std::path::{Path, PathBuf};

fn item(task: &str, execution: &str) -> ExperimentItem {
    ExperimentItem {
        experiment_id: "copper".into(),
        task_id: task.into(),
        variant: "base".into(),
        repeat_index: 0,
        execution_id: execution.into(),
        task_metadata: json!({
            "owner": "taro@example.com",
            "contacts": [{"mail": "hanako@example.com"}],
            "priority": 2
        }),
    }
}

fn stored_metadata(store: &Store, task: &str) -> serde_json::Value {
    let items = store.experiment_items("copper").expect("items");
    items
        .into_iter()
        .find(|s| s.item.task_id == task)
        .map(|s| s.item.task_metadata)
        .expect("the item")
}

#[tokio::test]
async fn an_item_written_by_a_masking_handle_has_its_metadata_masked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, plain) = open_with_writer(dir.path());
    plain
        .write_experiment(&ExperimentRecord {
            experiment_id: "copper".into(),
            experiment_hash: "h".into(),
            definition: json!({}),
            created_at: None,
        })
        .await
        .expect("experiment");
    let masker = PiiMasker::new(&MaskingSpec {
        mask_pii: true,
        ..Default::default()
    })
    .expect("masker");
    let masking = store.writer(masker).expect("a second handle");
    masking
        .write_experiment_item(&item("t1", "e-masked"))
        .await
        .expect("masked item");
    plain
        .write_experiment_item(&item("t2", "e-plain"))
        .await
        .expect("plain item");

    let masked = stored_metadata(&store, "t1");
    assert_eq!(
        masked,
        json!({
            "owner": "[メールアドレス]",
            "contacts": [{"mail": "[メールアドレス]"}],
            "priority": 2
        }),
        "every string masked, keys and numbers kept"
    );
    assert_eq!(stored_metadata(&store, "t2"), item("t2", "").task_metadata);
    let raw_text: Vec<String> = store
        .select(
            "SELECT task_metadata FROM experiment_items WHERE task_id = 't1'",
            [],
            |r| r.get(0),
        )
        .expect("select");
    assert!(!raw_text[0].contains("example.com"), "{raw_text:?}");
}

/// A finished shard file (the common execution), closed.
async fn shard(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).expect("mkdir");
    {
        let (_store, writer) = open_with_writer(dir);
        populate(&writer).await;
    }
    dir.join("mixseek.db")
}

#[tokio::test]
async fn a_shard_of_another_schema_version_is_refused_before_anything_is_merged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = shard(&dir.path().join("good")).await;
    let old = shard(&dir.path().join("old")).await;
    downgrade_to_v6(&old);
    let out = dir.path().join("all.db");

    // The good shard first: still nothing is merged, the output is not even created.
    let err = merge(&out, &[good.clone(), old.clone()]).expect_err("an old shard");
    match &err {
        StoreError::Merge {
            path,
            problem,
            hint,
        } => {
            assert_eq!(path, &old);
            assert_eq!(
                problem,
                &format!("it has schema version 6, this mixseek writes version {SCHEMA_VERSION}")
            );
            assert!(hint.contains("mixseek db upgrade"), "{hint}");
        }
        other => panic!("expected a merge error, got {other:?}"),
    }
    let text = err.to_string();
    assert!(text.contains(&old.display().to_string()), "{text}");
    assert_eq!(err.class(), mixseek_store::ErrorClass::BadInput);
    assert!(!out.exists(), "nothing was merged");
    // The old shard is left as it was (not upgraded by the merge).
    let version: i64 = raw(&old)
        .query_row("SELECT max(version) FROM schema_version", [], |r| r.get(0))
        .expect("version");
    assert_eq!(version, 6);

    // A shard of a newer mixseek is refused as such.
    let newer = shard(&dir.path().join("newer")).await;
    raw(&newer)
        .execute_batch(&format!(
            "UPDATE schema_version SET version = {}",
            SCHEMA_VERSION + 1
        ))
        .expect("a newer version");
    let err = merge(&out, &[good.clone(), newer.clone()]).expect_err("a newer shard");
    let text = err.to_string();
    assert!(
        text.contains(&newer.display().to_string())
            && text.contains(&format!("schema version {}", SCHEMA_VERSION + 1)),
        "{text}"
    );
    assert!(err.hint().is_some(), "{err:?}");
    assert!(!out.exists(), "nothing was merged");

    // The good shard alone merges.
    let merged = merge(&out, &[good]).expect("merge");
    assert!(merged[0].added > 0, "{merged:?}");
    let store = Store::open_read_only(&out).expect("open");
    assert!(
        store
            .executions(None)
            .expect("executions")
            .iter()
            .any(|e| e.execution_id.as_str() == EXEC)
    );
}

#[tokio::test]
async fn a_shard_that_is_not_a_database_is_named_and_nothing_is_merged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = shard(&dir.path().join("good")).await;
    let out = dir.path().join("all.db");
    for (name, bytes) in [
        ("text.db", b"not a database\n".to_vec()),
        ("empty.db", Vec::new()),
        (
            "noise.db",
            (0..4096u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect(),
        ),
    ] {
        let bad = dir.path().join(name);
        std::fs::write(&bad, bytes).expect("write");
        let err = merge(&out, &[good.clone(), bad.clone()]).expect_err(name);
        match &err {
            StoreError::Merge {
                path,
                problem,
                hint,
            } => {
                assert_eq!(path, &bad);
                assert!(
                    problem.starts_with("it is not a mixseek database"),
                    "{problem}"
                );
                assert!(hint.contains("--shard"), "{hint}");
            }
            other => panic!("{name}: expected a merge error, got {other:?}"),
        }
        assert_eq!(err.class(), mixseek_store::ErrorClass::BadInput);
        assert!(!out.exists(), "{name}: nothing was merged");
    }
}

fn count(path: &Path, sql: &str) -> i64 {
    raw(path).query_row(sql, [], |r| r.get(0)).expect(sql)
}

#[tokio::test]
async fn an_unfinished_copy_and_a_finished_one_in_one_merge_leave_the_finished_one_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let finished = shard(&dir.path().join("finished")).await;
    let unfinished = shard(&dir.path().join("unfinished")).await;
    raw(&unfinished)
        .execute_batch(&format!(
            "UPDATE execution_summary SET status = 'running' WHERE execution_id = '{EXEC}'"
        ))
        .expect("an interrupted copy");
    let rounds = format!("SELECT count(*) FROM round_history WHERE execution_id = '{EXEC}'");
    let expected_rounds = count(&finished, &rounds);
    assert!(expected_rounds > 0);

    // Both orders, each in one call: the finished copy wins, its rows once.
    for (name, inputs, outcome) in [
        (
            "unfinished-first.db",
            [unfinished.clone(), finished.clone()],
            [(2, 0, 0), (0, 1, 1)],
        ),
        (
            "finished-first.db",
            [finished.clone(), unfinished.clone()],
            [(2, 0, 0), (0, 0, 2)],
        ),
    ] {
        let out = dir.path().join(name);
        let merged = merge(&out, &inputs).expect("merge");
        let got: Vec<_> = merged
            .iter()
            .map(|m| (m.added, m.replaced, m.unchanged))
            .collect();
        assert_eq!(got, outcome, "{name}");
        assert_eq!(
            count(
                &out,
                &format!(
                    "SELECT count(*) FROM execution_summary WHERE execution_id = '{EXEC}' AND status <> 'running'"
                )
            ),
            1,
            "{name}"
        );
        assert_eq!(count(&out, &rounds), expected_rounds, "{name}");
    }
}
