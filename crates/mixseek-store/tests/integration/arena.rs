//! Pairwise arenas (schema version 6): a record written by the writer and read back (masked
//! when the writer masks), a second arena with the same id and invalid records refused, the
//! "Arena" section of `show` and of the HTML report (escaped), and exports that carry the
//! arena rows of the exported executions.

use crate::common;

use common::*;
use mixseek_core::{MaskingSpec, PiiMasker};
use mixseek_store::export::{ExportFormat, export};
use mixseek_store::report::{self, Format, html};
use mixseek_store::{
    ArenaDetail, ArenaGameRow, ArenaRatingRow, ArenaSummary, LeaderboardScope, Store, StoreError,
};

/// The pair of submissions (`a`, `b`: execution and team) judged by `judge` in both orders.
fn pair(
    a: (&str, &str),
    b: (&str, &str),
    index: u32,
    judge: &str,
    verdicts: [Option<&str>; 2],
    agreement: &str,
) -> Vec<ArenaGameRow> {
    (1..=2u8)
        .map(|game| {
            let ((ea, ta), (eb, tb)) = if game == 1 { (a, b) } else { (b, a) };
            let verdict = verdicts[usize::from(game - 1)];
            ArenaGameRow {
                pair_index: index,
                game,
                judge: judge.into(),
                a_execution_id: ea.into(),
                a_team_id: ta.into(),
                b_execution_id: eb.into(),
                b_team_id: tb.into(),
                verdict: verdict.map(str::to_string),
                raw_output: Some(match verdict {
                    Some(v) => format!("Both are fine; A is clearer.\n\n[[{v}]]"),
                    None => "I cannot decide <b>at all</b>".to_string(),
                }),
                agreement: agreement.into(),
                error: verdict
                    .is_none()
                    .then(|| "no verdict label in the answer".to_string()),
                input_tokens: 1200,
                output_tokens: 80,
                cost_usd: Some(0.0015),
            }
        })
        .collect()
}

fn rating(
    exec: &str,
    team: &str,
    name: &str,
    round: u32,
    rank: u32,
    r: f64,
    wlt: [f64; 3],
) -> ArenaRatingRow {
    ArenaRatingRow {
        execution_id: exec.into(),
        team_id: team.into(),
        team_name: name.into(),
        round_number: round,
        rating: r,
        lower: r - 35.5,
        upper: r + 41.25,
        rank,
        wins: wlt[0],
        losses: wlt[1],
        ties: wlt[2],
        games: wlt.iter().sum(),
    }
}

/// An arena over the final submissions of EXEC's three teams, one judge.
fn arena(id: &str) -> ArenaDetail {
    let mut games = pair(
        (EXEC, "alpha"),
        (EXEC, "beta"),
        0,
        "mock:judge",
        [Some("A>B"), Some("B>A")],
        "agree",
    );
    games.extend(pair(
        (EXEC, "alpha"),
        (EXEC, "gamma"),
        1,
        "mock:judge",
        [Some("A>>B"), Some("B>>A")],
        "agree",
    ));
    games.extend(pair(
        (EXEC, "beta"),
        (EXEC, "gamma"),
        2,
        "mock:judge",
        [Some("A=B"), None],
        "incomplete",
    ));
    ArenaDetail {
        summary: ArenaSummary {
            arena_id: id.into(),
            created_at: t(7200),
            user_prompt: "日本の少子化対策について提言してください".into(),
            execution_ids: vec![EXEC.into()],
            judge_models: vec!["mock:judge".into()],
            settings: serde_json::json!({"judges": ["mock:judge"], "bootstrap_rounds": 200, "confidence": 0.95}),
            pairs: 3,
            games: 6,
            parsed_games: 5,
            disagreeing_pairs: 0,
            regularized: true,
            bootstrap_rounds: 200,
            confidence: 0.95,
            input_tokens: 7200,
            output_tokens: 480,
            cost_usd: Some(0.009),
        },
        games,
        ratings: vec![
            rating(EXEC, "alpha", "Alpha Team", 2, 1, 1061.4, [4.0, 0.0, 0.0]),
            rating(EXEC, "beta", "ベータ", 2, 2, 990.0, [1.0, 2.0, 1.0]),
            rating(EXEC, "gamma", "Gamma", 1, 3, 948.6, [0.0, 3.0, 1.0]),
        ],
    }
}

fn masking_writer(store: &Store) -> mixseek_store::StoreWriter {
    let masker = PiiMasker::new(&MaskingSpec {
        mask_pii: true,
        ..MaskingSpec::default()
    })
    .expect("masker");
    store
        .writer_with_clock(masker, fixed_clock)
        .expect("writer")
}

#[tokio::test]
async fn an_arena_is_stored_and_read_back_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    let record = arena("arena-0001");
    writer.write_arena(&record).await.expect("written");
    let detail = store
        .arena("arena-0001")
        .expect("read")
        .expect("the arena is there");
    assert_eq!(detail.summary, record.summary);
    assert_eq!(detail.ratings, record.ratings, "by rank");
    assert_eq!(detail.games, record.games, "by pair, game and judge");
    // what the engine wrote is what is read back, in the same order and with the same JSON
    assert_eq!(record.clone().sorted(), detail);
    let json = serde_json::to_value(&detail).expect("json");
    assert_eq!(json, serde_json::to_value(&record).expect("json"));
    assert_eq!(json["games"], 6);
    assert_eq!(json["game_rows"].as_array().map(Vec::len), Some(6));
    let back: ArenaDetail = serde_json::from_value(json).expect("parses back");
    assert_eq!(back, detail);
    assert_eq!(
        scalar::<String>(&store, "SELECT execution_ids FROM arena_runs"),
        format!("[\"{EXEC}\"]")
    );
    assert_eq!(
        scalar::<i64>(&store, "SELECT epoch_us(created_at) FROM arena_runs"),
        t(7200).timestamp_micros()
    );
    // an unpriced arena keeps its NULL cost
    let mut unpriced = arena("arena-0002");
    unpriced.summary.created_at = t(9000);
    unpriced.summary.cost_usd = None;
    unpriced.games[0].cost_usd = None;
    writer.write_arena(&unpriced).await.expect("written");
    let listed: Vec<String> = store
        .arenas(EXEC)
        .expect("arenas")
        .into_iter()
        .map(|s| s.arena_id)
        .collect();
    assert_eq!(listed, ["arena-0002", "arena-0001"], "newest first");
    assert_eq!(
        store
            .arena("arena-0002")
            .expect("read")
            .map(|d| d.summary.cost_usd),
        Some(None)
    );
    let latest = store.latest_arena(EXEC).expect("latest").expect("one");
    assert_eq!(latest.summary.arena_id, "arena-0002");
    assert_eq!(latest.games[0].cost_usd, None);
    // other executions have none; an id that is a prefix of another is not matched
    assert!(store.arenas(EXEC2).expect("arenas").is_empty());
    assert!(store.latest_arena(EXEC2).expect("latest").is_none());
    assert!(store.arenas(&EXEC[..8]).expect("arenas").is_empty());
    assert!(store.arena("arena-9").expect("read").is_none());
    drop(writer);
    drop(store);
    // a report command reads it too
    let reader = Store::open_read_only(dir.path().join("mixseek.db")).expect("read-only");
    assert_eq!(reader.arenas(EXEC).expect("arenas").len(), 2);
}

#[tokio::test]
async fn what_the_judges_and_the_user_wrote_is_masked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("mixseek.db")).expect("open");
    let writer = masking_writer(&store);
    let mut record = arena("arena-pii");
    record.summary.user_prompt = "yamada@example.jp への返信を書いて".into();
    record.games[0].raw_output = Some("A wrote to yamada@example.jp first. [[A>B]]".into());
    record.games[5].error = Some("the answer quoted 090-1234-5678".into());
    writer.write_arena(&record).await.expect("written");
    let d = store.arena("arena-pii").expect("read").expect("there");
    assert_eq!(d.summary.user_prompt, "[メールアドレス] への返信を書いて");
    assert_eq!(
        d.games[0].raw_output.as_deref(),
        Some("A wrote to [メールアドレス] first. [[A>B]]")
    );
    assert_eq!(
        d.games[5].error.as_deref(),
        Some("the answer quoted [電話番号]")
    );
    let leaks: i64 = scalar(
        &store,
        "SELECT (SELECT count(*) FROM arena_runs WHERE user_prompt LIKE '%yamada@%')
              + (SELECT count(*) FROM arena_games WHERE raw_output LIKE '%yamada@%'
                     OR error LIKE '%1234-5678%')",
    );
    assert_eq!(leaks, 0);
    // the rest is as given
    assert_eq!(d.games[1].raw_output, record.games[1].raw_output);
    assert_eq!(d.ratings, record.ratings);
}

#[tokio::test]
async fn a_second_arena_with_the_same_id_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    writer
        .write_arena(&arena("arena-dup"))
        .await
        .expect("first");
    let mut again = arena("arena-dup");
    again.summary.user_prompt = "another task".into();
    again.games.truncate(2);
    let err = writer.write_arena(&again).await.expect_err("refused");
    assert!(
        err.to_string().contains("Constraint Error") && err.to_string().contains("arena-dup"),
        "{err}"
    );
    // nothing of the second one was written, the first one is untouched
    for (table, n) in [("arena_runs", 1), ("arena_games", 6), ("arena_ratings", 3)] {
        assert_eq!(store.count_rows(table).expect("count"), n, "{table}");
    }
    let d = store.arena("arena-dup").expect("read").expect("there");
    assert_eq!(
        d.summary.user_prompt,
        arena("arena-dup").summary.user_prompt
    );
    // two games with one key in one record: the database refuses the whole arena
    let mut twice = arena("arena-twice");
    let copy = twice.games[0].clone();
    twice.games.push(copy);
    assert!(writer.write_arena(&twice).await.is_err());
    assert!(store.arena("arena-twice").expect("read").is_none());
    assert_eq!(store.count_rows("arena_games").expect("count"), 6);
    // the writer goes on
    writer
        .write_arena(&arena("arena-next"))
        .await
        .expect("next");
}

#[tokio::test]
async fn invalid_arenas_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    type Spoil = fn(&mut ArenaDetail);
    let cases: [(Spoil, &str); 8] = [
        (|r| r.games[2].verdict = Some("A>>>B".into()), "verdict"),
        (|r| r.games[0].agreement = "unsure".into(), "agreement"),
        (|r| r.games[1].game = 3, "game must be 1 or 2"),
        (|r| r.ratings[1].lower = 5000.0, "lower"),
        (|r| r.ratings[0].upper = f64::INFINITY, "upper"),
        (|r| r.ratings[2].rank = 0, "rank"),
        (|r| r.summary.confidence = 1.5, "confidence"),
        (
            |r| r.games[0].b_execution_id = "elsewhere".into(),
            "execution_ids",
        ),
    ];
    for (spoil, field) in cases {
        let mut r = arena("arena-bad");
        spoil(&mut r);
        let err = writer.write_arena(&r).await.expect_err(field);
        assert!(matches!(err, StoreError::Invalid(_)), "{field}: {err}");
        assert!(
            err.to_string().contains(field) && err.to_string().contains("arena-bad"),
            "{field}: {err}"
        );
        assert_eq!(err.class(), mixseek_store::ErrorClass::BadInput);
    }
    for table in ["arena_runs", "arena_games", "arena_ratings"] {
        assert_eq!(store.count_rows(table).expect("count"), 0, "{table}");
    }
}

/// EXEC of [`populate`], with an arena over its teams whose names and judge answers hold
/// markup.
async fn fixture_with_arena() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    populate(&writer).await;
    let mut record = arena("arena-7f3c");
    record.ratings[2].team_name = "<script>x</script>".into();
    record.games[4].raw_output = Some("<script>alert('judge')</script> [[A=B]]".into());
    writer.write_arena(&record).await.expect("arena");
    // an arena of the other execution only, and an older one of EXEC
    let mut other = arena("arena-0ther");
    other.summary.execution_ids = vec![EXEC2.into()];
    other.games.clear();
    other.ratings = vec![rating(EXEC2, "alpha", "Alpha Team", 1, 1, 1000.0, [0.0; 3])];
    writer.write_arena(&other).await.expect("other");
    let mut older = arena("arena-0ld");
    older.summary.created_at = t(3600);
    writer.write_arena(&older).await.expect("older");
    drop(writer);
    (dir, store)
}

#[tokio::test]
async fn show_has_an_arena_section() {
    let (_dir, store) = fixture_with_arena().await;
    let overview = store.execution_overview(EXEC).expect("overview");
    assert_eq!(
        overview.arena.as_ref().map(|a| a.summary.arena_id.as_str()),
        Some("arena-7f3c"),
        "the latest arena"
    );
    for (fmt, name) in [(Format::Table, "table"), (Format::Markdown, "markdown")] {
        insta::assert_snapshot!(
            format!("show_execution_arena_{name}"),
            report::show_execution(&overview, fmt).expect("render")
        );
    }
    let table = report::show_execution(&overview, Format::Table).expect("render");
    assert!(table.contains("95 % interval"), "{table}");
    assert!(table.contains("1025.90 – 1102.65"), "{table}");
    assert!(table.contains(
        "3 pairs, 6 games judged by mock:judge (1 unparseable, 0 pairs disagreed with positions \
         swapped); ratings: Bradley–Terry (regularized), bootstrap 200 rounds"
    ));
    let md = report::show_execution(&overview, Format::Markdown).expect("render");
    assert!(md.contains("&lt;script&gt;x&lt;/script&gt;"), "{md}");
    assert!(!md.contains("<script>"), "{md}");
    // JSON: the summary and the ratings, not the games
    let v: serde_json::Value =
        serde_json::from_str(&report::show_execution(&overview, Format::Json).expect("json"))
            .expect("parses");
    assert_eq!(v["arena"]["arena_id"], "arena-7f3c");
    assert_eq!(v["arena"]["created_at"], "2025-11-19T14:00:00Z");
    assert_eq!(v["arena"]["settings"]["bootstrap_rounds"], 200);
    assert_eq!(v["arena"]["games"], 6, "the count");
    assert_eq!(v["arena"]["ratings"][2]["team_name"], "<script>x</script>");
    assert_eq!(v["arena"]["ratings"].as_array().map(Vec::len), Some(3));
    assert!(v["arena"].get("game_rows").is_none());
    assert_eq!(v["execution_id"], EXEC, "the rest as before");
    // an execution without an arena: no key at all
    let plain = store.execution_overview(EXEC2).expect("overview");
    let plain_json = report::show_execution(&plain, Format::Json).expect("json");
    assert!(plain_json.contains("\"arena\""), "EXEC2 has arena-0ther");
    let mut none = plain.clone();
    none.arena = None;
    let json = report::show_execution(&none, Format::Json).expect("json");
    assert!(!json.contains("\"arena\""), "{json}");
    assert!(
        !report::show_execution(&none, Format::Table)
            .expect("table")
            .contains("Arena")
    );
    // `mixseek arena`: the same section alone, the whole arena in JSON, the ratings in CSV
    let detail = overview.arena.as_ref().expect("arena");
    let alone = report::arena(detail, Format::Table).expect("table");
    assert!(alone.starts_with("Arena arena-7f3c — "), "{alone}");
    assert!(table.ends_with(&alone), "{table}");
    let alone = report::arena(detail, Format::Markdown).expect("markdown");
    assert!(
        alone.starts_with("## Arena\n") && md.ends_with(&alone),
        "{alone}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&report::arena(detail, Format::Json).expect("json")).expect("parses");
    assert_eq!(json["arena_id"], "arena-7f3c");
    assert_eq!(json["game_rows"].as_array().map(Vec::len), Some(6));
    assert_eq!(
        json["game_rows"][4]["raw_output"],
        "<script>alert('judge')</script> [[A=B]]"
    );
    let csv = report::arena(detail, Format::Csv).expect("csv");
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some(
            "execution_id,team_id,team_name,round_number,rating,lower,upper,rank,wins,losses,ties,games"
        )
    );
    assert_eq!(
        lines.next(),
        Some(format!("{EXEC},alpha,Alpha Team,2,1061.4,1025.9,1102.65,1,4.0,0.0,0.0,4.0").as_str())
    );
    assert_eq!(lines.count(), 2);
    // CSV stays the teams' rows
    assert_eq!(
        report::show_execution(&overview, Format::Csv).expect("csv"),
        report::show_execution(
            &store
                .execution_overview(EXEC)
                .map(|mut o| {
                    o.arena = None;
                    o
                })
                .expect("overview"),
            Format::Csv
        )
        .expect("csv")
    );
}

#[tokio::test]
async fn the_html_report_has_the_arena_escaped() {
    let (_dir, store) = fixture_with_arena().await;
    let overview = store.execution_overview(EXEC).expect("overview");
    let (_, lb) = store
        .leaderboard(&LeaderboardScope::Execution(EXEC.into()))
        .expect("lb");
    let rounds = store.round_details(EXEC).expect("details");
    let page = html::render(&html::ReportData {
        overview: &overview,
        leaderboard: &lb,
        rounds: &rounds,
    });
    assert!(!page.contains("<script>"), "markup leaked into the report");
    for needle in [
        "<h2>Arena</h2>",
        "<code>arena-7f3c</code>",
        "<th>95 % interval</th>",
        "<td>&lt;script&gt;x&lt;/script&gt; (gamma)</td>",
        "&lt;script&gt;alert(&#39;judge&#39;)&lt;/script&gt; [[A=B]]",
        "I cannot decide &lt;b&gt;at all&lt;/b&gt;",
        "no verdict label in the answer",
        "<td class=\"num\">1061.40</td><td class=\"num\">1025.90 – 1102.65</td><td class=\"num\">4-0-0</td>",
        "3 pairs, 6 games judged by mock:judge (1 unparseable",
        "<td>unparseable</td>",
    ] {
        assert!(page.contains(needle), "missing `{needle}`");
    }
    assert_eq!(page.matches("<details class=\"pair\">").count(), 3);
    assert!(page.contains(
        "<summary>Pair 0: Alpha Team (alpha) vs ベータ (beta)<span class=\"badge\">agree</span></summary>"
    ));
    // without an arena the report has no such section
    let mut none = overview.clone();
    none.arena = None;
    let page = html::render(&html::ReportData {
        overview: &none,
        leaderboard: &lb,
        rounds: &rounds,
    });
    assert!(!page.contains("<h2>Arena</h2>"));
}

#[tokio::test]
async fn exports_carry_the_arenas_of_their_executions() {
    let (dir, store) = fixture_with_arena().await;
    let one = [EXEC.to_string()];
    let json_path = dir.path().join("e.json");
    let rep = export(&store, Some(&one), ExportFormat::Json, &json_path).expect("json");
    let counts: Vec<(&str, u64)> = rep.rows.iter().map(|(t, n)| (t.as_str(), *n)).collect();
    assert_eq!(
        counts[5..12],
        [
            ("arena_runs", 2),
            ("arena_games", 12),
            ("arena_ratings", 6),
            ("experiment_arenas", 0),
            ("experiment_arena_ratings", 0),
            ("theme_analyses", 0),
            ("comment_themes", 0)
        ]
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).expect("read")).expect("parse");
    let runs = &doc["tables"]["arena_runs"];
    assert_eq!(runs[0]["arena_id"], "arena-0ld", "by creation time");
    assert_eq!(runs[1]["arena_id"], "arena-7f3c");
    // JSON-text columns embedded as JSON
    assert_eq!(runs[1]["execution_ids"], serde_json::json!([EXEC]));
    assert_eq!(runs[1]["settings"]["confidence"], 0.95);
    assert_eq!(runs[1]["created_at"], "2025-11-19T14:00:00Z");
    assert_eq!(doc["tables"]["arena_games"][0]["verdict"], "A>B");
    assert_eq!(
        doc["tables"]["leader_board"].as_array().map(Vec::len),
        Some(6)
    );
    // --all: every arena
    let rep = export(&store, None, ExportFormat::Csv, &dir.path().join("csv")).expect("csv");
    // (one file per table, the experiment tables included)
    assert_eq!(rep.files.len(), 15);
    let mut reader =
        csv::Reader::from_path(dir.path().join("csv").join("arena_runs.csv")).expect("csv");
    let ids: Vec<String> = reader
        .records()
        .map(|r| r.expect("record")[0].to_string())
        .collect();
    assert_eq!(ids, ["arena-0ld", "arena-0ther", "arena-7f3c"]);
    // the other execution: its own arena only
    let two = [EXEC2.to_string()];
    let rep = export(
        &store,
        Some(&two),
        ExportFormat::Parquet,
        &dir.path().join("pq"),
    )
    .expect("parquet");
    let counts: Vec<(&str, u64)> = rep.rows.iter().map(|(t, n)| (t.as_str(), *n)).collect();
    assert_eq!(
        counts[5..12],
        [
            ("arena_runs", 1),
            ("arena_games", 0),
            ("arena_ratings", 1),
            ("experiment_arenas", 0),
            ("experiment_arena_ratings", 0),
            ("theme_analyses", 0),
            ("comment_themes", 0)
        ]
    );
    assert!(dir.path().join("pq").join("arena_games.parquet").exists());
}
