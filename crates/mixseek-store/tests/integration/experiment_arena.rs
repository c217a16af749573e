//! Arenas of an experiment's variants (schema version 9) through the store: written whole by a
//! masking handle, refused when invalid or repeated, read back, left out of the execution's
//! own arenas, exported with the execution and merged from a shard once however often the
//! shard is merged.

use crate::common;

use common::{EXEC, open_with_writer, populate};
use mixseek_core::{MaskingSpec, PiiMasker};
use mixseek_store::merge::merge;
use mixseek_store::{Store, StoreError};
use serde_json::json;

/// An arena of two variants over the common execution's teams (as if each team were a
/// variant's submission), with its games and the variants' ratings.
fn experiment_arena(id: &str) -> mixseek_store::ExperimentArena {
    use mixseek_store::{
        ArenaDetail, ArenaGameRow, ArenaSummary, ExperimentArena, ExperimentArenaLink,
        VariantRatingRow,
    };
    let game = |game: u8, a: &str, b: &str, verdict: &str| ArenaGameRow {
        pair_index: 0,
        game,
        judge: "mock:j".into(),
        a_execution_id: EXEC.into(),
        a_team_id: a.into(),
        b_execution_id: EXEC.into(),
        b_team_id: b.into(),
        verdict: Some(verdict.into()),
        raw_output: Some(format!("[[{verdict}]] taro@example.com")),
        agreement: "agree".into(),
        error: None,
        input_tokens: 10,
        output_tokens: 5,
        cost_usd: Some(0.001),
    };
    let rating = |variant: &str, rating: f64| VariantRatingRow {
        variant: variant.into(),
        rating,
        lower: rating - 50.0,
        upper: rating + 50.0,
        rank: 1,
        wins: 1.0,
        losses: 1.0,
        ties: 0.0,
        games: 2.0,
        submissions: 1,
    };
    ExperimentArena {
        arena: ArenaDetail {
            summary: ArenaSummary {
                arena_id: id.into(),
                created_at: chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default(),
                user_prompt: "Experiment copper".into(),
                execution_ids: vec![EXEC.into()],
                judge_models: vec!["mock:j".into()],
                settings: json!({"scale": 400.0}),
                pairs: 1,
                games: 2,
                parsed_games: 2,
                disagreeing_pairs: 0,
                regularized: false,
                bootstrap_rounds: 10,
                confidence: 0.95,
                input_tokens: 20,
                output_tokens: 10,
                cost_usd: Some(0.002),
            },
            ratings: vec![],
            games: vec![
                game(1, "alpha", "beta", "A>B"),
                game(2, "beta", "alpha", "B>A"),
            ],
        },
        link: ExperimentArenaLink {
            experiment_id: "copper".into(),
            tasks: 1,
            submissions: 2,
            left_out: 0,
            bootstrap_unit: "task".into(),
        },
        ratings: vec![rating("base", 1010.0), rating("hot", 990.0)],
    }
}

fn count(store: &Store, table: &str) -> u64 {
    store.count_rows(table).expect(table)
}

#[tokio::test]
async fn an_experiment_arena_is_stored_whole_read_back_and_merged_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let shard_dir = dir.path().join("shard");
    std::fs::create_dir_all(&shard_dir).expect("mkdir");
    {
        let (store, writer) = open_with_writer(&shard_dir);
        populate(&writer).await;
        let masker = PiiMasker::new(&MaskingSpec {
            mask_pii: true,
            ..Default::default()
        })
        .expect("masker");
        let masking = store.writer(masker).expect("handle");
        masking
            .write_experiment_arena(&experiment_arena("xa-1"))
            .await
            .expect("stored");
        // an arena id is never replaced
        let err = masking
            .write_experiment_arena(&experiment_arena("xa-1"))
            .await
            .expect_err("a second arena of one id");
        assert!(err.to_string().contains("Duplicate key"), "{err}");
        // an invalid record is refused before anything is written
        let mut bad = experiment_arena("xa-2");
        bad.link.bootstrap_unit = "pair".into();
        let err = masking
            .write_experiment_arena(&bad)
            .await
            .expect_err("invalid");
        assert!(matches!(err, StoreError::Invalid(_)), "{err}");
        drop(masking);
        drop(writer);

        let back = store
            .latest_experiment_arena("copper")
            .expect("read")
            .expect("an arena");
        assert_eq!(back.link, experiment_arena("xa-1").link);
        assert_eq!(back.ratings, experiment_arena("xa-1").ratings);
        assert_eq!(back.arena.games.len(), 2);
        assert!(back.arena.ratings.is_empty());
        // the judges' answers were masked like a team arena's
        assert!(
            back.arena.games[0]
                .raw_output
                .as_deref()
                .is_some_and(|t| !t.contains("example.com")),
            "{:?}",
            back.arena.games[0]
        );
        assert!(
            store
                .latest_experiment_arena("other")
                .expect("read")
                .is_none()
        );
        // the execution's own (team) arenas do not include it
        assert!(store.arenas(EXEC).expect("arenas").is_empty());
        assert!(store.latest_arena(EXEC).expect("latest").is_none());
        // an export of the execution carries it
        let out = dir.path().join("export.json");
        let rep = mixseek_store::export::export(
            &store,
            Some(&[EXEC.to_string()]),
            mixseek_store::export::ExportFormat::Json,
            &out,
        )
        .expect("export");
        let rows: std::collections::HashMap<&str, u64> =
            rep.rows.iter().map(|(t, n)| (t.as_str(), *n)).collect();
        assert_eq!(
            (
                rows["arena_runs"],
                rows["arena_games"],
                rows["experiment_arenas"],
                rows["experiment_arena_ratings"]
            ),
            (1, 2, 1, 2)
        );
    }
    let shard = shard_dir.join("mixseek.db");
    let out = dir.path().join("all.db");
    merge(&out, std::slice::from_ref(&shard)).expect("merge");
    merge(&out, &[shard.clone(), shard]).expect("merge again");
    let store = Store::open_read_only(&out).expect("open");
    for (table, n) in [
        ("arena_runs", 1),
        ("arena_games", 2),
        ("arena_ratings", 0),
        ("experiment_arenas", 1),
        ("experiment_arena_ratings", 2),
    ] {
        assert_eq!(count(&store, table), n, "{table}: merged once");
    }
    let merged = store
        .latest_experiment_arena("copper")
        .expect("read")
        .expect("merged");
    assert_eq!(merged.ratings.len(), 2);
}
