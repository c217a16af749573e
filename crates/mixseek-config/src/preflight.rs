//! Preflight: every check that can run without the network, grouped in the original's
//! categories, each check `ok`, `error` or `skipped`. Template compilation is added by the
//! caller (it needs the prompt builder, which sits above this crate).

use crate::issues::ConfigIssue;
use crate::load::{LoadReport, LoadedUnit, Origin, Part, UnitKind};
use crate::model_id::{self, check_credential, credential_for};
use crate::providers::ProviderSettings;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// How a check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    /// Passed.
    Ok,
    /// Failed: the configuration cannot run.
    Error,
    /// Not run (what it needs failed first).
    Skipped,
    /// Passed with a caveat.
    Warning,
}

/// One check: its name (as the original names it), result and message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// How it ended.
    pub status: CheckStatus,
    /// What was found.
    pub message: String,
    /// The file it is about, when there is one.
    pub source_file: Option<String>,
}

/// A group of checks, in the original's categories.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Category {
    /// The category's name (as the original prints it).
    pub category: String,
    /// Its checks, in the order run.
    pub checks: Vec<Check>,
}

/// Every check of a configuration, by category.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct PreflightReport {
    /// The categories, in the order printed.
    pub categories: Vec<Category>,
}

fn file_str(p: Option<&Path>) -> Option<String> {
    p.map(|p| p.display().to_string())
}

impl Check {
    /// A check named `name` (as the original names it), with the file it is about.
    pub fn new(
        name: impl Into<String>,
        status: CheckStatus,
        message: impl Into<String>,
        file: Option<&Path>,
    ) -> Self {
        Self {
            name: name.into(),
            status,
            message: message.into(),
            source_file: file_str(file),
        }
    }
}

fn check(
    name: impl Into<String>,
    status: CheckStatus,
    message: impl Into<String>,
    file: Option<String>,
) -> Check {
    Check {
        name: name.into(),
        status,
        message: message.into(),
        source_file: file,
    }
}

fn issues_message(prefix: &str, issues: &[ConfigIssue]) -> String {
    let mut s = prefix.to_string();
    for i in issues {
        s.push_str("\n       - ");
        s.push_str(&i.to_string());
    }
    s
}

impl PreflightReport {
    /// Checks that ended `error`.
    pub fn error_count(&self) -> usize {
        self.categories
            .iter()
            .flat_map(|c| &c.checks)
            .filter(|c| c.status == CheckStatus::Error)
            .count()
    }
    /// No check ended `error`.
    pub fn is_valid(&self) -> bool {
        self.error_count() == 0
    }
    /// The category named `name`, added at the end when missing.
    pub fn category_mut(&mut self, name: &str) -> &mut Category {
        if let Some(i) = self.categories.iter().position(|c| c.category == name) {
            return &mut self.categories[i];
        }
        self.categories.push(Category {
            category: name.into(),
            checks: vec![],
        });
        let last = self.categories.len() - 1;
        &mut self.categories[last]
    }
    /// Inserts a category after another one (or at the end).
    pub fn insert_after(&mut self, after: &str, category: Category) {
        match self.categories.iter().position(|c| c.category == after) {
            Some(i) => self.categories.insert(i + 1, category),
            None => self.categories.push(category),
        }
    }
}

/// The categories after the orchestrator's, all skipped (nothing else can be checked without
/// the orchestrator file).
fn push_skipped_after_orchestrator(out: &mut PreflightReport) {
    for name in [
        "チーム",
        "ワークフロー",
        "Evaluator",
        "Judgment",
        "PromptBuilder",
        "認証",
        "メトリクス名",
        "ワークスペース",
    ] {
        out.categories.push(Category {
            category: name.into(),
            checks: vec![check(
                name,
                CheckStatus::Skipped,
                "オーケストレータ設定が読み込めないためスキップ",
                None,
            )],
        });
    }
}

/// The report when the orchestrator file itself cannot be found or read (`-c` unresolved):
/// an `orchestrator_config` error with `message`, every other category skipped.
pub fn orchestrator_unavailable(given: &str, message: &str) -> PreflightReport {
    let mut out = PreflightReport::default();
    out.categories.push(Category {
        category: "オーケストレータ".into(),
        checks: vec![check(
            "orchestrator_config",
            CheckStatus::Error,
            format!("オーケストレータ設定の読み込みに失敗: {message}"),
            Some(given.to_string()),
        )],
    });
    push_skipped_after_orchestrator(&mut out);
    out
}

/// The category of the warnings about `MIXSEEK_*` variables that name no setting.
pub(crate) const ENV_CATEGORY: &str = "環境変数";

/// Runs the config-level preflight checks over a load report. The warnings about unknown
/// `MIXSEEK_*` variables come last, in their own category (only when there are some).
pub fn run(report: &LoadReport, lookup_env: impl Fn(&str) -> Option<String>) -> PreflightReport {
    let mut out = run_parts(report, lookup_env);
    if !report.env_warnings.is_empty() {
        out.categories.push(Category {
            category: ENV_CATEGORY.into(),
            checks: report
                .env_warnings
                .iter()
                .map(|w| {
                    check(
                        "environment_variable",
                        CheckStatus::Warning,
                        w.to_string(),
                        None,
                    )
                })
                .collect(),
        });
    }
    out
}

/// The categories in the original's order: orchestrator, teams, workflows, evaluator, judgment, prompt
/// builder, credentials, workspace. Without an orchestrator file only the first is checked.
/// (Metric names are checked by the evaluator, which knows its built-in metrics:
/// `mixseek_evaluator::checks::metric_names` adds that category after 認証.)
fn run_parts(report: &LoadReport, lookup_env: impl Fn(&str) -> Option<String>) -> PreflightReport {
    let mut out = PreflightReport::default();
    let orch_file = file_str(Some(&report.orchestrator_file));
    out.categories
        .push(orchestrator_category(report, orch_file.clone()));
    let Some(file) = report.orchestrator.value.as_ref() else {
        push_skipped_after_orchestrator(&mut out);
        return out;
    };
    out.categories.extend(unit_categories(report, orch_file));
    let (e, j, p) = (&report.evaluator, &report.judgment, &report.prompt_builder);
    out.categories
        .push(part_category("Evaluator", "evaluator_config", e));
    out.categories
        .push(part_category("Judgment", "judgment_config", j));
    out.categories
        .push(part_category("PromptBuilder", "prompt_builder_config", p));
    if let Some(a) = &report.arena {
        // ours: only when `arena_config` names a file
        out.categories
            .push(part_category("Arena", "arena_config", a));
    }
    out.categories
        .push(credentials_category(report, &file.providers, &lookup_env));
    out.categories
        .push(workspace_category(&report.workspace.root));
    out
}

/// Category 1, the orchestrator file: loaded or not, and its warnings.
fn orchestrator_category(report: &LoadReport, orch_file: Option<String>) -> Category {
    let orch = &report.orchestrator;
    let mut checks = vec![if orch.ok() {
        check(
            "orchestrator_config",
            CheckStatus::Ok,
            "オーケストレータ設定を読み込みました",
            orch_file.clone(),
        )
    } else {
        check(
            "orchestrator_config",
            CheckStatus::Error,
            issues_message("オーケストレータ設定の読み込みに失敗:", &orch.errors.items),
            orch_file.clone(),
        )
    }];
    for w in &orch.warnings.items {
        checks.push(check(
            "orchestrator_warning",
            CheckStatus::Warning,
            w.to_string(),
            orch_file.clone(),
        ));
    }
    Category {
        category: "オーケストレータ".into(),
        checks,
    }
}

/// Categories 2 and 3: each `[[orchestrator.teams]]` entry, checked in `チーム` (team files
/// and files that are neither) or `ワークフロー` (workflow files), named by its index in the
/// list as the original names it (`team_0`, `workflow_1`, …): loaded or not, and its
/// warnings. `チーム` has an error when the orchestrator lists nothing; `ワークフロー` is
/// always there, empty when no workflow is listed.
fn unit_categories(report: &LoadReport, orch_file: Option<String>) -> [Category; 2] {
    let mut teams = Vec::new();
    let mut workflows = Vec::new();
    if report.teams.is_empty() {
        teams.push(check(
            "teams",
            CheckStatus::Error,
            "チーム設定が定義されていません（1つ以上のチームが必要です）",
            orch_file,
        ));
    }
    for (i, unit) in report.teams.iter().enumerate() {
        let (checks, name, what) = match unit.kind {
            UnitKind::Workflow => (&mut workflows, format!("workflow_{i}"), "ワークフロー"),
            UnitKind::Team | UnitKind::Unknown => (&mut teams, format!("team_{i}"), "チーム"),
        };
        let part = &unit.part;
        let entry = Some(unit.entry.clone());
        if part.ok() {
            let id = part
                .value
                .as_ref()
                .map(|u| format!(" ({})", u.id()))
                .unwrap_or_default();
            checks.push(check(
                &name,
                CheckStatus::Ok,
                format!("{what}設定を読み込みました{id}"),
                entry.clone(),
            ));
        } else {
            checks.push(check(
                &name,
                CheckStatus::Error,
                issues_message(&format!("{what}設定の読み込みに失敗:"), &part.errors.items),
                entry.clone(),
            ));
        }
        for w in &part.warnings.items {
            checks.push(check(
                format!("{name}_warning"),
                CheckStatus::Warning,
                w.to_string(),
                entry.clone(),
            ));
        }
    }
    [
        Category {
            category: "チーム".into(),
            checks: teams,
        },
        Category {
            category: "ワークフロー".into(),
            checks: workflows,
        },
    ]
}

/// Categories 3–5, one optional file (evaluator, judgment, prompt builder): loaded, built in, or
/// refused with its errors; and its warnings.
fn part_category<T>(title: &str, key: &str, part: &Part<T>) -> Category {
    let f = file_str(part.origin.file());
    let mut checks = vec![if part.ok() {
        let msg = match part.origin {
            Origin::BuiltIn => format!("デフォルトの{title}設定を使用します"),
            _ => format!("{title}設定を読み込みました"),
        };
        check(key, CheckStatus::Ok, msg, f.clone())
    } else {
        check(
            key,
            CheckStatus::Error,
            issues_message(&format!("{title}設定の読み込みに失敗:"), &part.errors.items),
            f.clone(),
        )
    }];
    for w in &part.warnings.items {
        checks.push(check(
            format!("{key}_warning"),
            CheckStatus::Warning,
            w.to_string(),
            f.clone(),
        ));
    }
    Category {
        category: title.into(),
        checks,
    }
}

/// The providers the run would call, each with its model ids (ids with an unknown prefix
/// are left out: the credentials category reports them).
pub fn providers_called(report: &LoadReport) -> BTreeMap<String, Vec<String>> {
    let providers = report
        .orchestrator
        .value
        .as_ref()
        .map(|f| f.providers.clone())
        .unwrap_or_default();
    let mut by_provider: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for id in model_ids(report) {
        if let Ok(mid) = model_id::resolve(&id, &providers) {
            let v = by_provider.entry(mid.provider.clone()).or_default();
            if !v.contains(&id) {
                v.push(id);
            }
        }
    }
    by_provider
}

/// Every model id the run would call (leaders, members, their fallbacks, the evaluator's, the
/// judgment's and the arena's judges), in order of appearance.
fn model_ids(report: &LoadReport) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for unit in &report.teams {
        if let Some(LoadedUnit::Workflow(w)) = &unit.part.value {
            ids.extend(w.settings.model_ids());
        }
        if let Some(LoadedUnit::Team(t)) = &unit.part.value {
            ids.push(t.settings.leader.model.clone());
            ids.extend(t.settings.leader.fallback_models.iter().cloned());
            for m in &t.settings.members {
                if m.agent_type == Some(crate::MemberType::Command) {
                    continue;
                }
                if let Some(model) = m.model.as_ref().filter(|m| !m.trim().is_empty()) {
                    ids.push(model.clone());
                }
                ids.extend(m.fallback_models.iter().cloned());
            }
        }
    }
    if let Some(ev) = &report.evaluator.value {
        ids.extend(ev.model_ids());
    }
    if let Some(jd) = &report.judgment.value {
        ids.push(jd.model.clone());
        ids.extend(jd.fallback_models.iter().cloned());
    }
    if let Some(arena) = report.arena.as_ref().and_then(|a| a.value.as_ref()) {
        ids.extend(arena.judge_models());
    }
    ids
}

/// Category 6, credentials: every model id resolved to its provider (an unknown prefix is an error),
/// then one check per provider that its key (or other credential) is set.
fn credentials_category(
    report: &LoadReport,
    providers: &BTreeMap<String, ProviderSettings>,
    lookup_env: &impl Fn(&str) -> Option<String>,
) -> Category {
    let mut checks: Vec<Check> = Vec::new();
    let mut by_provider: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for id in model_ids(report) {
        match model_id::resolve(&id, providers) {
            Ok(mid) => {
                let v = by_provider.entry(mid.provider.clone()).or_default();
                if !v.contains(&id) {
                    v.push(id);
                }
            }
            Err(err) => {
                let name = format!("auth_{id}");
                if !checks.iter().any(|x| x.name == name) {
                    checks.push(check(
                        name,
                        CheckStatus::Error,
                        format!("未知のモデルIDプレフィックス: {err}"),
                        None,
                    ));
                }
            }
        }
    }
    if by_provider.is_empty() && checks.is_empty() {
        checks.push(check(
            "auth",
            CheckStatus::Skipped,
            "検証対象のモデルIDがありません",
            None,
        ));
    }
    for (provider, models) in &by_provider {
        let cred = credential_for(provider, providers);
        let name = format!("auth_{provider}");
        let mock_note = if provider == "mock" {
            " (offline mock provider: no key needed, answers are synthetic)"
        } else {
            ""
        };
        checks.push(match check_credential(&cred, lookup_env) {
            Ok(found) => {
                let via = found.map(|v| format!(" via {v}")).unwrap_or_default();
                check(
                    name,
                    CheckStatus::Ok,
                    format!(
                        "{provider} の認証情報を確認しました（モデル: {}）{via}{mock_note}",
                        models.join(", ")
                    ),
                    None,
                )
            }
            Err(msg) => check(
                name,
                CheckStatus::Error,
                format!(
                    "{provider} の認証に失敗: {msg} (needed by: {}){}",
                    models.join(", "),
                    // a credentials file's message says what to fix itself
                    if matches!(cred, model_id::Credential::EnvVar(_)) {
                        "; export it before running"
                    } else {
                        ""
                    }
                ),
                None,
            ),
        });
    }
    Category {
        category: "認証".into(),
        checks,
    }
}

/// Category 8, the workspace: created if needed and writable.
fn workspace_category(ws: &Path) -> Category {
    let check = match workspace_writable(ws) {
        Ok(()) => check(
            "workspace_writable",
            CheckStatus::Ok,
            format!("ワークスペース '{}' は書き込み可能です", ws.display()),
            None,
        ),
        Err(err) => check(
            "workspace_writable",
            CheckStatus::Error,
            format!(
                "ワークスペース '{}' に書き込みできません: {err}",
                ws.display()
            ),
            None,
        ),
    };
    Category {
        category: "ワークスペース".into(),
        checks: vec![check],
    }
}

/// Creates the workspace if needed and checks that a file can be written in it.
fn workspace_writable(ws: &Path) -> Result<(), std::io::Error> {
    std::fs::create_dir_all(ws)?;
    let probe = ws.join(format!(".mixseek-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"ok")?;
    std::fs::remove_file(&probe)
}
