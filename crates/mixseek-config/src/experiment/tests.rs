use super::*;
use std::fmt::Write as _;

/// A folder with an orchestrator file (and its team), a task set and an experiment file.
struct Fixture {
    dir: tempfile::TempDir,
}

const ORCH: &str = "[orchestrator]\n[[orchestrator.teams]]\nconfig = \"team.toml\"\n";
const TEAM: &str =
    "[team]\nteam_id = \"a\"\nteam_name = \"A\"\n[team.leader]\nmodel = \"mock:l\"\n";

impl Fixture {
    fn new() -> Self {
        let f = Self {
            dir: tempfile::tempdir().expect("tmp"),
        };
        f.write("configs/orchestrator.toml", ORCH);
        f.write("configs/team.toml", TEAM);
        f
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&p, text).expect("write");
        p
    }

    /// Writes `experiment.toml` and loads it.
    fn load(&self, toml: &str) -> Result<ExperimentFile, Vec<ConfigIssue>> {
        let p = self.write("experiment.toml", toml);
        load_experiment(&p)
    }

    /// The problems of an experiment that must not load, rendered, with the folder cut.
    fn errors(&self, toml: &str) -> Vec<String> {
        let issues = match self.load(toml) {
            Ok(e) => panic!("loaded: {e:#?}"),
            Err(issues) => issues,
        };
        let root = std::fs::canonicalize(self.dir.path()).expect("canonical");
        issues
            .iter()
            .map(|i| {
                let s = i
                    .to_string()
                    .replace(&root.display().to_string(), "DIR")
                    .replace(&self.dir.path().display().to_string(), "DIR");
                s.strip_prefix("DIR/").map(str::to_string).unwrap_or(s)
            })
            .collect()
    }
}

const TASKS: &str = r#"{"id": "t1", "prompt": "What is 2+2?", "difficulty": "easy"}

{"id": 7, "prompt": "Summarize the file.", "domain_context": "finance", "attachments": ["files/a.txt"], "metadata": {"source": "x"}}
"#;

const FULL: &str = r#"[experiment]
name = "leader-models"
tasks = "tasks.jsonl"
repeats = 2
max_concurrent_executions = 4
baseline = "base"
max_total_tokens = 2000000
max_cost_usd = 5.0
seed = 7
confidence = 0.9

[[experiment.variants]]
name = "base"
config = "configs/orchestrator.toml"
description = "as shipped"

[[experiment.variants]]
name = "hot"
config = "configs/orchestrator.toml"
overrides = { "orchestrator.max_rounds" = 3, "leader.temperature" = 0.9 }

[[experiment.variants]]
name = "grid"
config = "configs/orchestrator.toml"
overrides = { max_rounds = 2 }
[experiment.variants.grid]
"team.leader.model" = ["mock:a", "mock:b"]
"leader.temperature" = [0.2, 0.8]
"#;

fn full() -> Fixture {
    let f = Fixture::new();
    f.write("tasks.jsonl", TASKS);
    f.write("files/a.txt", "hello");
    f
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn a_full_file_loads_with_its_grid_expanded() {
    let f = full();
    let e = f.load(FULL).expect("loads");
    let root = std::fs::canonicalize(f.dir.path()).expect("canonical");
    assert_eq!(e.name, "leader-models");
    assert_eq!(e.path, root.join("experiment.toml"));
    assert_eq!(e.tasks_file, root.join("tasks.jsonl"));
    assert_eq!((e.repeats, e.max_concurrent_executions, e.seed), (2, 4, 7));
    assert_eq!(e.max_total_tokens, Some(2_000_000));
    assert_eq!(e.max_cost_usd, Some(5.0));
    assert_eq!(e.confidence, 0.9);
    assert_eq!(e.baseline, "base");
    let names: Vec<&str> = e.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "base",
            "hot",
            "grid[team.leader.model=mock:a,leader.temperature=0.2]",
            "grid[team.leader.model=mock:a,leader.temperature=0.8]",
            "grid[team.leader.model=mock:b,leader.temperature=0.2]",
            "grid[team.leader.model=mock:b,leader.temperature=0.8]",
        ]
    );
    let base = &e.variants[0];
    assert_eq!(base.config, root.join("configs/orchestrator.toml"));
    assert_eq!(base.description.as_deref(), Some("as shipped"));
    assert!(base.overrides.is_empty() && base.env.is_empty());
    let hot = &e.variants[1];
    assert_eq!(
        hot.overrides,
        pairs(&[
            ("orchestrator.max_rounds", "3"),
            ("leader.temperature", "0.9")
        ])
    );
    assert_eq!(
        hot.env,
        pairs(&[
            ("MIXSEEK_ORCHESTRATOR__MAX_ROUNDS", "3"),
            ("MIXSEEK_LEADER__TEMPERATURE", "0.9"),
        ])
    );
    let g = &e.variants[4];
    assert_eq!(
        g.overrides,
        pairs(&[
            ("max_rounds", "2"),
            ("team.leader.model", "\"mock:b\""),
            ("leader.temperature", "0.2"),
        ])
    );
    assert_eq!(
        g.env,
        pairs(&[
            ("MIXSEEK_ORCHESTRATOR__MAX_ROUNDS", "2"),
            ("MIXSEEK_TEAM__LEADER__MODEL", "\"mock:b\""),
            ("MIXSEEK_LEADER__TEMPERATURE", "0.2"),
        ])
    );
    // The tasks: integer ids as text, unknown keys in the metadata, attachments resolved
    // against the task file's folder.
    assert_eq!(e.tasks.len(), 2);
    let (t1, t7) = (&e.tasks[0], &e.tasks[1]);
    assert_eq!((t1.id.as_str(), t1.line), ("t1", 1));
    assert_eq!(t1.prompt, "What is 2+2?");
    assert_eq!(t1.metadata["difficulty"], "easy");
    assert!(t1.attachments.is_empty() && t1.domain_context.is_none());
    assert_eq!((t7.id.as_str(), t7.line), ("7", 3));
    assert_eq!(t7.domain_context.as_deref(), Some("finance"));
    assert_eq!(t7.attachments, [root.join("files/a.txt")]);
    assert_eq!(t7.metadata["source"], "x");
}

#[test]
fn the_baseline_defaults_to_the_first_variant_and_may_name_a_grid() {
    let f = full();
    let e = f
        .load(&FULL.replace("baseline = \"base\"\n", ""))
        .expect("loads");
    assert_eq!(e.baseline, "base");
    let e = f
        .load(&FULL.replace("baseline = \"base\"", "baseline = \"grid\""))
        .expect("loads");
    assert_eq!(
        e.baseline,
        "grid[team.leader.model=mock:a,leader.temperature=0.2]"
    );
    let e = f
        .load(&FULL.replace(
            "baseline = \"base\"",
            "baseline = \"grid[team.leader.model=mock:b,leader.temperature=0.8]\"",
        ))
        .expect("loads");
    assert_eq!(e.variants.last().map(|v| v.name.clone()), Some(e.baseline));
    // Defaults.
    let e = f
        .load(
            "[experiment]\nname = \"x\"\ntasks = \"tasks.jsonl\"\n[[experiment.variants]]\nname = \"a\"\nconfig = \"configs/orchestrator.toml\"\n",
        )
        .expect("loads");
    assert_eq!(
        (e.repeats, e.max_concurrent_executions, e.seed, e.confidence),
        (1, 1, 0, 0.95)
    );
    assert_eq!((e.max_total_tokens, e.max_cost_usd), (None, None));
}

#[test]
fn nested_tables_read_as_dotted_keys() {
    let f = full();
    let e = f
        .load(
            "[experiment]\nname = \"x\"\ntasks = \"tasks.jsonl\"\n[[experiment.variants]]\nname = \"a\"\nconfig = \"configs/orchestrator.toml\"\n[experiment.variants.overrides]\nleader.temperature = 0.5\npricing.\"openai:gpt-4.1\".input_per_million = 2.0\n",
        )
        .expect("loads");
    assert_eq!(
        e.variants[0].overrides,
        pairs(&[
            ("leader.temperature", "0.5"),
            ("pricing.\"openai:gpt-4.1\".input_per_million", "2.0"),
        ])
    );
    assert_eq!(
        e.variants[0].env,
        pairs(&[
            ("MIXSEEK_LEADER__TEMPERATURE", "0.5"),
            ("MIXSEEK_PRICING__OPENAI:GPT-4.1__INPUT_PER_MILLION", "2.0"),
        ])
    );
}

#[test]
fn a_variants_environment_wins_over_the_files_and_the_process() {
    let f = full();
    let e = f.load(FULL).expect("loads");
    let g = &e.variants[4];
    let process = EnvVars::from_pairs([
        ("MIXSEEK_MAX_ROUNDS", "9"),
        ("MIXSEEK_LEADER__MODEL", "mock:process"),
        ("MIXSEEK_JUDGMENT__TEMPERATURE", "0.1"),
    ]);
    let env = g.merged_env(&process);
    assert_eq!(
        env.0,
        pairs(&[
            ("MIXSEEK_JUDGMENT__TEMPERATURE", "0.1"),
            ("MIXSEEK_ORCHESTRATOR__MAX_ROUNDS", "2"),
            ("MIXSEEK_TEAM__LEADER__MODEL", "\"mock:b\""),
            ("MIXSEEK_LEADER__TEMPERATURE", "0.2"),
        ])
    );
    let ws = crate::Workspace::at(f.path("configs"));
    let report = crate::load(&g.config, &ws, &env, &crate::Overrides::default());
    assert!(report.errors().is_empty(), "{:?}", report.errors());
    assert!(report.env_warnings.is_empty(), "{:?}", report.env_warnings);
    let config = report.into_config().expect("config");
    assert_eq!(config.orchestrator().max_rounds, 2);
    let team = config.teams[0].as_team().expect("a team");
    assert_eq!(team.settings.leader.model, "mock:b");
    assert_eq!(team.settings.leader.temperature, Some(0.2));
    assert_eq!(config.judgment.temperature, 0.1);
}

#[test]
fn csv_task_sets_keep_extra_columns_and_resolve_attachments_from_their_folder() {
    let f = Fixture::new();
    f.write(
        "data/tasks.csv",
        "\u{feff}id,prompt,attachments,difficulty,metadata\n\
         a1,\"Compare these, please\",docs/x.md; docs/y.md,hard,\"{\"\"k\"\": 1}\"\n\
         \n\
         42,\"A prompt\nover two lines\",,easy,\n\
         b2,Last,,,\n",
    );
    f.write("data/docs/x.md", "x");
    f.write("data/docs/y.md", "y");
    let e = f
        .load(
            "[experiment]\nname = \"csv\"\ntasks = \"data/tasks.csv\"\n[[experiment.variants]]\nname = \"a\"\nconfig = \"configs/orchestrator.toml\"\n",
        )
        .expect("loads");
    let root = std::fs::canonicalize(f.dir.path()).expect("canonical");
    assert_eq!(e.tasks.len(), 3);
    let a = &e.tasks[0];
    assert_eq!(
        (a.id.as_str(), a.prompt.as_str(), a.line),
        ("a1", "Compare these, please", 2)
    );
    assert_eq!(
        a.attachments,
        [root.join("data/docs/x.md"), root.join("data/docs/y.md")]
    );
    assert_eq!(
        serde_json::Value::Object(a.metadata.clone()),
        serde_json::json!({"k": 1, "difficulty": "hard"})
    );
    let b = &e.tasks[1];
    assert_eq!((b.id.as_str(), b.line), ("42", 4));
    assert_eq!(b.prompt, "A prompt\nover two lines");
    assert!(b.attachments.is_empty() && b.domain_context.is_none());
    assert_eq!(b.metadata["difficulty"], "easy");
    assert_eq!(e.tasks[2].line, 6);
}

const ONE_VARIANT: &str =
    "[[experiment.variants]]\nname = \"a\"\nconfig = \"configs/orchestrator.toml\"\n";

fn with_tasks(f: &Fixture, tasks_file: &str) -> Vec<String> {
    f.errors(&format!(
        "[experiment]\nname = \"x\"\ntasks = \"{tasks_file}\"\n{ONE_VARIANT}"
    ))
}

#[test]
fn keys_of_the_file_are_checked_with_their_lines() {
    let f = full();
    let errors = f.errors(
        "[experiment]\nname = \"bad name!\"\ntasks = \"tasks.jsonl\"\nrepeat = 2\nmax_concurrent_executions = 0\nconfidence = 1.0\nseed = \"x\"\n\
         [[experiment.variants]]\nname = \"a\"\nconfig = \"configs/orchestrator.toml\"\ndescripton = \"typo\"\n\
         [[experiment.variants]]\nname = \"b\"\nconfig = \"configs/missing.toml\"\n",
    );
    assert_eq!(
        errors,
        [
            "experiment.toml:7:1: `experiment.seed`: invalid type: string \"x\", expected u64 (fix the value's type)",
            "experiment.toml:4:1: `experiment.repeat`: unknown key (did you mean `repeats`?)",
            "experiment.toml:11:1: `experiment.variants[0].descripton`: unknown key (did you mean `description`?)",
            "experiment.toml:2:1: `experiment.name`: invalid experiment name `bad name!` (1 to 64 letters, digits, `.`, `_` or `-`)",
            "experiment.toml:5:1: `experiment.max_concurrent_executions`: 0 is out of range (allowed range: 1..=256)",
            "experiment.toml:6:1: `experiment.confidence`: 1 is out of range (a probability in 0.5..1, e.g. 0.95)",
            "experiment.toml:14:1: `experiment.variants[1].config`: orchestrator config `configs/missing.toml` not found: DIR/configs/missing.toml (paths are relative to the experiment file's folder (DIR))",
        ]
    );
}

#[test]
fn the_file_itself_fails_like_every_other() {
    let f = Fixture::new();
    let missing = load_experiment(&f.path("nope.toml")).expect_err("missing");
    assert_eq!(missing.len(), 1);
    assert!(
        missing[0]
            .message
            .contains("experiment config file not found"),
        "{missing:?}"
    );
    let dir = load_experiment(f.dir.path()).expect_err("a directory");
    assert!(dir[0].message.contains("is a directory"), "{dir:?}");
    let bad = f.errors("[experiment\nname = 1\n");
    assert!(bad[0].starts_with("experiment.toml:1:"), "{bad:?}");
    assert!(bad[0].contains("invalid TOML syntax"), "{bad:?}");
    let other = f.errors("[orchestrator]\nmax_rounds = 1\n");
    assert!(other.iter().any(|e| e.contains("unknown key")), "{other:?}");
    assert!(
        other
            .iter()
            .any(|e| e.contains("missing [experiment] section")),
        "{other:?}"
    );
}

#[test]
fn dotted_keys_that_name_no_setting_are_errors_with_the_closest_key() {
    let f = full();
    let errors = f.errors(&format!(
        "[experiment]\nname = \"x\"\ntasks = \"tasks.jsonl\"\n{ONE_VARIANT}overrides = {{ \"leader.temprature\" = 0.9 }}\n\
         [[experiment.variants]]\nname = \"b\"\nconfig = \"configs/orchestrator.toml\"\n[experiment.variants.grid]\n\"orchestrator.max_round\" = [1, 2]\n\"log_level\" = [\"debug\"]\n"
    ));
    assert_eq!(
        errors,
        [
            "experiment.toml:7:15: `experiment.variants[0].overrides.\"leader.temprature\"`: `leader.temprature` names no setting (did you mean `leader.temperature`?)",
            "experiment.toml:12:1: `experiment.variants[1].grid.\"orchestrator.max_round\"`: `orchestrator.max_round` names no setting (did you mean `orchestrator.max_rounds`?)",
            "experiment.toml:13:1: `experiment.variants[1].grid.\"log_level\"`: `log_level` is not a setting of a configuration file: MIXSEEK_LOG_LEVEL is read by the command line (`trace`, `debug`, `info`, `warning`, `error` or `critical`: the default of `--log-level`) (set it in the environment of the command that runs the experiment)",
        ]
    );
}

#[test]
fn variant_names_are_unique_after_expansion() {
    let f = full();
    let errors = f.errors(&format!(
        "[experiment]\nname = \"x\"\ntasks = \"tasks.jsonl\"\n{ONE_VARIANT}\
         [[experiment.variants]]\nname = \"a\"\nconfig = \"configs/orchestrator.toml\"\n\
         [[experiment.variants]]\nname = \"g\"\nconfig = \"configs/orchestrator.toml\"\ngrid = {{ max_rounds = [1] }}\n\
         [[experiment.variants]]\nname = \"g[max_rounds=1]\"\nconfig = \"configs/orchestrator.toml\"\n"
    ));
    assert_eq!(
        errors,
        [
            "experiment.toml:8:1: `experiment.variants[1].name`: duplicate variant name `a` (also variant 1, line 5) (give every variant a unique name)",
            "experiment.toml:15:1: `experiment.variants[3].name`: invalid variant name `g[max_rounds=1]` (1 to 64 letters, digits, `.`, `_` or `-`)",
        ]
    );
    // Two grid values that render alike.
    let errors = f.errors(&format!(
        "[experiment]\nname = \"x\"\ntasks = \"tasks.jsonl\"\n{ONE_VARIANT}\
         [[experiment.variants]]\nname = \"g\"\nconfig = \"configs/orchestrator.toml\"\ngrid = {{ \"leader.model\" = [\"1\"] }}\n\
         [[experiment.variants]]\nname = \"g\"\nconfig = \"configs/orchestrator.toml\"\n"
    ));
    assert_eq!(
        errors,
        [
            "experiment.toml:12:1: `experiment.variants[2].name`: duplicate variant name `g` (also variant 2, line 8) (give every variant a unique name)"
        ]
    );
}

#[test]
fn grids_are_checked() {
    let f = full();
    let big: Vec<String> = (0..11).map(|i| i.to_string()).collect();
    let big = big.join(", ");
    let errors = f.errors(&format!(
        "[experiment]\nname = \"x\"\ntasks = \"tasks.jsonl\"\n\
         [[experiment.variants]]\nname = \"empty\"\nconfig = \"configs/orchestrator.toml\"\n[experiment.variants.grid]\n\"leader.temperature\" = []\n\
         [[experiment.variants]]\nname = \"big\"\nconfig = \"configs/orchestrator.toml\"\n[experiment.variants.grid]\n\
         \"judgment.temperature\" = [{big}]\n\"leader.temperature\" = [{big}]\n\"evaluator.llm_default.temperature\" = [{big}]\n\
         [[experiment.variants]]\nname = \"both\"\nconfig = \"configs/orchestrator.toml\"\noverrides = {{ \"orchestrator.max_rounds\" = 3 }}\n[experiment.variants.grid]\nmax_rounds = [1, 2]\n\
         [[experiment.variants]]\nname = \"scalar\"\nconfig = \"configs/orchestrator.toml\"\ngrid = {{ max_rounds = 3 }}\n\
         [[experiment.variants]]\nname = \"nothing\"\nconfig = \"configs/orchestrator.toml\"\n[experiment.variants.grid]\n\
         [[experiment.variants]]\nname = \"twice\"\nconfig = \"configs/orchestrator.toml\"\ngrid = {{ max_rounds = [1, 2, 1] }}\n"
    ));
    assert_eq!(
        errors,
        [
            "experiment.toml:8:1: `experiment.variants[0].grid.\"leader.temperature\"`: a grid key without values (list at least one value, or remove the key)",
            "experiment.toml:12:22: `experiment.variants[1].grid`: the grid expands into 1331 variants (11 × 11 × 11), more than 1000 (use fewer values, or split the grid over several variants)",
            "experiment.toml:21:1: `experiment.variants[2].grid.\"max_rounds\"`: `max_rounds` sets the same setting as `orchestrator.max_rounds` in overrides on line 19 (give each setting once: in `overrides` for every run, or in `grid` to vary it)",
            "experiment.toml:25:10: `experiment.variants[3].grid.\"max_rounds\"`: expected an array of values, found integer (a grid gives each key its values: \"max_rounds\" = [3, ...]; a single value belongs in `overrides`)",
            "experiment.toml:29:22: `experiment.variants[4].grid`: an empty grid (give each key an array of values, or remove the grid)",
            "experiment.toml:33:30: `experiment.variants[5].grid.\"max_rounds\"[2]`: the value 1 is listed twice (list each value once)",
        ]
    );
}

#[test]
fn an_unknown_baseline_names_the_closest_variant() {
    let f = full();
    let errors = f.errors(&FULL.replace("baseline = \"base\"", "baseline = \"bse\""));
    assert_eq!(
        errors,
        [
            "experiment.toml:6:1: `experiment.baseline`: the baseline `bse` is no variant (did you mean `base`?)"
        ]
    );
}

#[test]
fn jsonl_task_problems_name_their_line() {
    let f = Fixture::new();
    f.write(
        "tasks.jsonl",
        "{\"id\": \"a\", \"prompt\": \"p\"}\n\
         {\"id\": \"b\", \"prompt\": \"p\",}\n\
         {\"id\": \"c\"}\n\
         {\"id\": \"a\", \"prompt\": \"again\"}\n\
         {\"id\": \"d\", \"prompt\": \"p\", \"attachments\": [\"nope.pdf\"]}\n\
         {\"id\": 1.5, \"prompt\": \"p\", \"metadata\": [1]}\n\
         [1, 2]\n\
         {\"id\": \"e\", \"prompt\": \"  \"}\n",
    );
    let errors = with_tasks(&f, "tasks.jsonl");
    assert_eq!(
        errors,
        [
            "tasks.jsonl:2:27: invalid JSON: trailing comma (each line of a .jsonl task set is one JSON object)",
            "tasks.jsonl:3: `prompt`: task `c` has no `prompt` (every task needs the prompt the teams answer)",
            "tasks.jsonl:4: `id`: duplicate task id `a` (first on line 1) (give every task a unique id)",
            "tasks.jsonl:5: `attachments[0]`: task `d`: attachment `nope.pdf` not found: DIR/nope.pdf (attachment paths are relative to the task file's folder (DIR))",
            "tasks.jsonl:6: `id`: expected a string or an integer, found a number (fix the value's type)",
            "tasks.jsonl:6: `metadata`: expected an object, found an array (fix the value's type)",
            "tasks.jsonl:7: expected a JSON object, found an array (each line is one task: {\"id\": ..., \"prompt\": ...})",
            "tasks.jsonl:8: `prompt`: task `e` has an empty prompt",
        ]
    );
}

#[test]
fn a_value_of_the_wrong_type_is_reported_once() {
    let f = full();
    assert_eq!(
        f.errors("experiment = 3\n"),
        [
            "experiment.toml:1:1: `experiment`: invalid type: integer `3`, expected struct ExperimentSettings (fix the value's type)"
        ]
    );
    assert_eq!(
        f.errors(&format!(
            "[experiment]\nname = 5\ntasks = \"tasks.jsonl\"\n{ONE_VARIANT}"
        )),
        [
            "experiment.toml:2:1: `experiment.name`: invalid type: integer `5`, expected a string (fix the value's type)"
        ]
    );
}

#[test]
fn jsonl_with_a_byte_order_mark_and_crlf_lines_loads() {
    let f = Fixture::new();
    f.write(
        "tasks.jsonl",
        "\u{feff}{\"id\": \"a\", \"prompt\": \"p\"}\r\n\r\n{\"id\": \"b\", \"prompt\": \"q\"}\r\n",
    );
    let e = f
        .load(&format!(
            "[experiment]\nname = \"x\"\ntasks = \"tasks.jsonl\"\n{ONE_VARIANT}"
        ))
        .expect("loads");
    let ids: Vec<(&str, usize)> = e.tasks.iter().map(|t| (t.id.as_str(), t.line)).collect();
    assert_eq!(ids, [("a", 1), ("b", 3)]);
}

#[test]
fn empty_and_headless_task_sets_are_errors() {
    let f = Fixture::new();
    f.write("empty.jsonl", "\n  \n");
    assert_eq!(
        with_tasks(&f, "empty.jsonl"),
        [
            "empty.jsonl: the task set is empty (a .jsonl task set holds one JSON object per line, a .csv one a header row and one row per task, each with at least `id` and `prompt`)"
        ]
    );
    f.write("empty.csv", "");
    assert_eq!(with_tasks(&f, "empty.csv").len(), 1);
    f.write("header.csv", "id,prompt\n");
    assert!(with_tasks(&f, "header.csv")[0].contains("the task set is empty"));
    f.write("noprompt.csv", "id,promt,topic\n1,x,y\n");
    assert_eq!(
        with_tasks(&f, "noprompt.csv"),
        [
            "noprompt.csv:1: `prompt`: the task set has no `prompt` column (did you mean `promt`? The header row names the columns)"
        ]
    );
    f.write("ragged.csv", "id,prompt\n1,x\n2,y,z\n3,\n");
    assert_eq!(
        with_tasks(&f, "ragged.csv"),
        [
            "ragged.csv:3: the row has 3 fields, the header 2 (quote a field that holds a comma: \"a, b\")",
            "ragged.csv:4: `prompt`: task `3` has an empty prompt",
        ]
    );
    let errors = with_tasks(&f, "tasks.txt");
    assert_eq!(
        errors,
        [
            "experiment.toml:3:1: `experiment.tasks`: `tasks.txt` is neither a .jsonl nor a .csv file (a task set is JSON Lines (.jsonl, one object per line) or CSV (.csv, with a header row))"
        ]
    );
    let errors = with_tasks(&f, "missing.jsonl");
    assert_eq!(
        errors,
        [
            "experiment.toml:3:1: `experiment.tasks`: task file `missing.jsonl` not found: DIR/missing.jsonl (paths are relative to the experiment file's folder (DIR))"
        ]
    );
}

#[test]
fn task_problems_are_capped() {
    let f = Fixture::new();
    let mut text = String::new();
    for i in 0..150 {
        writeln!(text, "{{\"id\": \"{i}\"}}").expect("write");
    }
    f.write("tasks.jsonl", &text);
    let errors = with_tasks(&f, "tasks.jsonl");
    assert_eq!(errors.len(), 101);
    assert_eq!(
        errors[100],
        "tasks.jsonl: 50 more problems in the task set, not shown"
    );
}

#[test]
fn ten_thousand_tasks_load_quickly() {
    let f = Fixture::new();
    f.write("files/a.txt", "a");
    let mut text = String::new();
    for i in 0..10_000 {
        writeln!(
            text,
            "{{\"id\": {i}, \"prompt\": \"Question number {i}: what is the answer?\", \"attachments\": [\"files/a.txt\"], \"group\": \"g{}\"}}",
            i % 7
        )
        .expect("write");
    }
    f.write("tasks.jsonl", &text);
    let start = std::time::Instant::now();
    let e = f
        .load(&format!(
            "[experiment]\nname = \"x\"\ntasks = \"tasks.jsonl\"\n{ONE_VARIANT}"
        ))
        .expect("loads");
    let took = start.elapsed();
    assert_eq!(e.tasks.len(), 10_000);
    assert!(took.as_millis() < 1000, "{took:?}");
}

#[test]
fn the_hash_covers_what_runs_and_nothing_else() {
    let f = full();
    let a = experiment_hash(&f.load(FULL).expect("loads"));
    assert_eq!(a.len(), 64);
    assert_eq!(a, experiment_hash(&f.load(FULL).expect("loads")));
    // Scheduling, budgets and report settings do not change it.
    let scheduling = FULL
        .replace(
            "max_concurrent_executions = 4",
            "max_concurrent_executions = 9",
        )
        .replace("max_cost_usd = 5.0", "max_cost_usd = 50.0")
        .replace("seed = 7", "seed = 8")
        .replace("confidence = 0.9", "confidence = 0.99");
    assert_eq!(a, experiment_hash(&f.load(&scheduling).expect("loads")));
    // `max_rounds` and `orchestrator.max_rounds` are one setting.
    let same = FULL.replace("max_rounds = 2 }", "\"orchestrator.max_rounds\" = 2 }");
    assert_eq!(a, experiment_hash(&f.load(&same).expect("loads")));
    // What runs does.
    for changed in [
        FULL.replace("repeats = 2", "repeats = 3"),
        FULL.replace(
            "\"leader.temperature\" = 0.9",
            "\"leader.temperature\" = 1.0",
        ),
        FULL.replace("[0.2, 0.8]", "[0.2, 0.7]"),
    ] {
        assert_ne!(a, experiment_hash(&f.load(&changed).expect("loads")));
    }
    f.write(
        "tasks.jsonl",
        &TASKS.replace("What is 2+2?", "What is 2+3?"),
    );
    assert_ne!(a, experiment_hash(&f.load(FULL).expect("loads")));
    // A copy elsewhere hashes alike.
    let g = full();
    assert_eq!(
        experiment_hash(&f.load(FULL).expect("loads")),
        experiment_hash(&{
            g.write(
                "tasks.jsonl",
                &TASKS.replace("What is 2+2?", "What is 2+3?"),
            );
            g.load(FULL).expect("loads")
        })
    );
}
