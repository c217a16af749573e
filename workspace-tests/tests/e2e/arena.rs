//! The pairwise arena end to end: `mixseek arena` on a finished offline run (dry run, the
//! stored tables, the output formats, `show`), two executions competing together, an
//! OpenAI-compatible judge answering in the `[[A>B]]` text form (with an unparseable answer
//! recorded and excluded), the budget, bad input, and an `exec` ending with its arena.

use mixseek_testkit::{FakeLlm, Reply};
use serde_json::Value;
use workspace_tests::{
    Sandbox, describe, finished_mock_run as finished_run, json_stdout as json_of,
    write_mock_competition,
};

#[test]
fn an_arena_rates_the_teams_of_a_run_with_intervals_and_stores_every_game() {
    let sb = Sandbox::new();
    let id = finished_run(&sb, &["a", "b", "c"]);
    sb.write(
        "cfg/arena.toml",
        "[arena]\njudge_model = \"mock:arena-judge\"\nbootstrap_rounds = 50\nseed = 7\n",
    );

    // dry run: the design and the estimate, nothing sent or stored
    let dry = json_of(
        &sb.cmd()
            .args([
                "arena",
                &id[..8],
                "-c",
                "cfg/arena.toml",
                "--dry-run",
                "-f",
                "json",
            ])
            .output()
            .expect("run"),
    );
    assert_eq!(dry["pairs"], 3);
    assert_eq!(dry["games"], 6);
    assert_eq!(dry["estimate"]["calls"], 6);
    assert_eq!(dry["contestants"].as_array().map(Vec::len), Some(3));
    let text = sb
        .cmd()
        .args(["arena", &id, "-c", "cfg/arena.toml", "--dry-run"])
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(stdout.contains("3 pairs, 6 games"), "{stdout}");
    assert!(stdout.contains("Nothing was sent."), "{stdout}");

    // the arena itself
    let arena = json_of(
        &sb.cmd()
            .args(["arena", &id, "-c", "cfg/arena.toml", "-f", "json"])
            .output()
            .expect("run"),
    );
    let ratings = arena["ratings"].as_array().expect("ratings");
    assert_eq!(ratings.len(), 3);
    for r in ratings {
        let (lo, rating, hi) = (
            r["lower"].as_f64().expect("lower"),
            r["rating"].as_f64().expect("rating"),
            r["upper"].as_f64().expect("upper"),
        );
        assert!(lo <= hi && lo.is_finite() && hi.is_finite(), "{r}");
        assert!(
            rating.is_finite() && r["rank"].as_u64().is_some_and(|k| k >= 1),
            "{r}"
        );
        // each team is in 2 pairs: 4 games, counted by weight (a strong verdict counts 3)
        assert!(r["games"].as_f64().is_some_and(|g| g >= 4.0), "{r}");
    }
    // the mean rating is the anchor (1000)
    let mean: f64 = ratings
        .iter()
        .filter_map(|r| r["rating"].as_f64())
        .sum::<f64>()
        / 3.0;
    assert!((mean - 1000.0).abs() < 1e-6, "{mean}");

    // table output and `show` carry it; the tables hold every game with its raw answer
    let table = sb.cmd().args(["show", &id]).output().expect("run");
    let shown = String::from_utf8_lossy(&table.stdout);
    assert!(shown.contains("Arena"), "{}", describe(&table));
    let board = sb
        .cmd()
        .args(["leaderboard", "-e", &id])
        .output()
        .expect("run");
    let board = String::from_utf8_lossy(&board.stdout);
    assert!(
        board.contains("Arena") && board.contains("95 % interval"),
        "{board}"
    );
    let html = sb.path().join("r.html");
    let out = sb
        .cmd()
        .args(["report", &id, "-o"])
        .arg(&html)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", describe(&out));
    let page = std::fs::read_to_string(&html).expect("html");
    assert!(page.contains("<h2>Arena</h2>"), "no arena section");
    let export = sb.path().join("export.json");
    let out = sb
        .cmd()
        .args(["export", &id, "--format", "json", "-o"])
        .arg(&export)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", describe(&out));
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&export).expect("read")).expect("json");
    let games = doc["tables"]["arena_games"].as_array().expect("games");
    assert_eq!(games.len(), 6);
    assert!(
        games
            .iter()
            .all(|g| g["verdict"].is_string() && g["raw_output"].is_string()),
        "{games:?}"
    );
    // each pair was judged in both orders
    for pair in 0..3 {
        let orders: Vec<&Value> = games.iter().filter(|g| g["pair_index"] == pair).collect();
        assert_eq!(orders.len(), 2);
        assert_eq!(orders[0]["a_team_id"], orders[1]["b_team_id"]);
    }
    assert_eq!(
        doc["tables"]["arena_ratings"].as_array().map(Vec::len),
        Some(3)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_judge_is_parsed_and_an_unparseable_verdict_is_excluded_never_guessed() {
    let sb = Sandbox::new();
    let id = finished_run(&sb, &["a", "b"]);
    let judge = FakeLlm::openai().await;
    // game 1: a clear verdict at the end (the last label wins); game 2: no label at all
    judge.push(Reply::text("At first [[B>A]], but on reflection: [[A>B]]"));
    judge.push(Reply::text("Both are fine, I cannot decide."));
    sb.write(
        "cfg/arena.toml",
        "[arena]\njudge_model = \"openai:gpt-judge\"\nverdict_format = \"text\"\nmax_concurrent = 1\nbootstrap_rounds = 0\n",
    );
    let out = sb
        .cmd()
        .env("OPENAI_API_KEY", "sk-test-0123456789abcdefghij")
        .env("OPENAI_BASE_URL", judge.base_url())
        .args(["arena", &id, "-c", "cfg/arena.toml", "-f", "json"])
        .output()
        .expect("run");
    let arena = json_of(&out);
    assert_eq!(arena["games"], 2);
    assert_eq!(arena["parsed_games"], 1);
    assert_eq!(arena["disagreeing_pairs"], 0);
    // the text form: no response_format was asked for
    let bodies = judge.requests();
    assert_eq!(bodies.len(), 2);
    assert!(
        bodies
            .iter()
            .all(|b| b.body.get("response_format").is_none())
    );
    // both answers are in the judge's prompt, each in its own tag
    let prompt = bodies[0].body.to_string();
    assert!(
        prompt.contains("<answer_a>") && prompt.contains("<answer_b>"),
        "{prompt}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_structured_judge_that_answers_with_a_text_label_is_read_by_the_label() {
    let sb = Sandbox::new();
    let id = finished_run(&sb, &["a", "b"]);
    // never JSON, whatever the repair prompt says: the label is read once repairs give up
    let judge = FakeLlm::openai().await;
    judge.set_default(Reply::text("Having compared both: [[A>B]]"));
    sb.write(
        "cfg/arena.toml",
        "[arena]\njudge_model = \"openai:gpt-judge\"\nmax_retries = 1\nmax_concurrent = 1\nbootstrap_rounds = 0\n",
    );
    let out = sb
        .cmd()
        .env("OPENAI_API_KEY", "sk-test-0123456789abcdefghij")
        .env("OPENAI_BASE_URL", judge.base_url())
        .args(["arena", &id, "-c", "cfg/arena.toml", "-f", "json"])
        .output()
        .expect("run");
    let arena = json_of(&out);
    assert_eq!(arena["parsed_games"], 2, "{arena}");
    // A wins in game 1 and B (shown as A) in game 2: the pair disagrees, as it should
    assert_eq!(arena["disagreeing_pairs"], 1, "{arena}");
    for g in arena["game_rows"].as_array().expect("games") {
        assert_eq!(g["verdict"], "A>B", "{g}");
        assert_eq!(g["raw_output"], "Having compared both: [[A>B]]", "{g}");
    }
    // structured output was asked for first
    assert!(judge.requests()[0].body.get("response_format").is_some());
}

#[test]
fn two_executions_on_one_prompt_compete_and_bad_input_is_refused() {
    let sb = Sandbox::new();
    let first = finished_run(&sb, &["a", "b"]);
    let second = finished_run(&sb, &["a", "b"]);
    sb.write(
        "cfg/arena.toml",
        "[arena]\njudge_model = \"mock:arena-judge\"\nbootstrap_rounds = 20\n",
    );
    let arena = json_of(
        &sb.cmd()
            .args([
                "arena",
                &first,
                &second,
                "-c",
                "cfg/arena.toml",
                "-f",
                "json",
            ])
            .output()
            .expect("run"),
    );
    assert_eq!(arena["ratings"].as_array().map(Vec::len), Some(4));
    assert_eq!(arena["execution_ids"].as_array().map(Vec::len), Some(2));

    // a typo in the arena file: the key, the line and the nearest valid key
    sb.write("cfg/bad.toml", "[arena]\njudge_modle = \"mock:j\"\n");
    let out = sb
        .cmd()
        .args(["arena", &first, "-c", "cfg/bad.toml"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("judge_modle") && err.contains("judge_model"),
        "{err}"
    );
    assert!(err.contains("bad.toml:2"), "{err}");

    // an anchor that is no team
    sb.write(
        "cfg/anchor.toml",
        "[arena]\njudge_model = \"mock:j\"\nanchor = \"zeta\"\n",
    );
    let out = sb
        .cmd()
        .args(["arena", &first, "-c", "cfg/anchor.toml"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("anchor 'zeta' is not a contestant"),
        "{}",
        describe(&out)
    );

    // a template with a variable the arena does not have: refused before any call
    sb.write(
        "cfg/template.toml",
        "[arena]\njudge_model = \"mock:j\"\nuser_template = \"{{ answer_a }} {{ answer_b }} {{ colour }}\"\n",
    );
    let out = sb
        .cmd()
        .args(["arena", &first, "-c", "cfg/template.toml"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("user_template"),
        "{}",
        describe(&out)
    );

    // an unknown execution
    let out = sb
        .cmd()
        .args(["arena", "ffffffff", "-c", "cfg/arena.toml"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
}

#[test]
fn a_token_budget_stops_new_judge_calls_and_the_unjudged_games_are_stored_as_such() {
    let sb = Sandbox::new();
    let id = finished_run(&sb, &["a", "b", "c"]);
    sb.write(
        "cfg/arena.toml",
        "[arena]\njudge_model = \"mock:arena-judge\"\nmax_concurrent = 1\nmax_total_tokens = 1\nbootstrap_rounds = 0\n",
    );
    let arena = json_of(
        &sb.cmd()
            .args(["arena", &id, "-c", "cfg/arena.toml", "-f", "json"])
            .output()
            .expect("run"),
    );
    // the first call spends the budget: the other five games are not sent
    assert_eq!(arena["games"], 6);
    assert_eq!(arena["parsed_games"], 1);
}

#[test]
fn an_exec_with_an_arena_config_ends_with_the_arena() {
    let sb = Sandbox::new();
    let cfg = write_mock_competition(&sb, &["a", "b"]);
    let orch = std::fs::read_to_string(&cfg).expect("read");
    sb.write(
        "cfg/orchestrator.toml",
        &orch.replacen(
            "[orchestrator]\n",
            "[orchestrator]\narena_config = \"arena.toml\"\n",
            1,
        ),
    );
    sb.write(
        "cfg/arena.toml",
        "[arena]\njudge_model = \"mock:arena-judge\"\nbootstrap_rounds = 10\n",
    );
    let out = sb
        .cmd()
        .args(["exec", "Write a haiku", "-c", "cfg/orchestrator.toml"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", describe(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Arena"), "{stdout}");
    assert!(stdout.contains("these verdicts are made up"), "{stdout}");
    let doc = json_of(
        &sb.cmd()
            .args([
                "exec",
                "Write a haiku",
                "-f",
                "json",
                "-c",
                "cfg/orchestrator.toml",
            ])
            .output()
            .expect("run"),
    );
    assert_eq!(doc["arena"]["ratings"].as_array().map(Vec::len), Some(2));

    // a broken arena file is found before the run starts
    sb.write("cfg/arena.toml", "[arena]\nconfidence = 2\n");
    let out = sb
        .cmd()
        .args([
            "exec",
            "Write a haiku",
            "--dry-run",
            "-c",
            "cfg/orchestrator.toml",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("confidence")
            || String::from_utf8_lossy(&out.stderr).contains("confidence"),
        "{}",
        describe(&out)
    );
}
