//! The Results page of one execution, built from the HTML report's view pieces
//! (`mixseek_store::report::html`): the facts, the task, the leaderboard (a page at a time,
//! each team linking to its rounds), the failed teams, agreement, arena and themes, the score
//! chart of the teams shown; a team's page has every round as the report shows it. Downloads:
//! the HTML report and the exports. An execution that plays an experiment item names it under
//! the heading and links to the experiment's page, the way back from that page's item table.

use crate::configs;
use crate::data::{self, ReadError};
use crate::layout::{self, Nav, esc, url};
use crate::live;
use crate::pages::read_error;
use crate::server::AppState;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use mixseek_store::report::html;
use mixseek_store::{
    ExecutionOverview, ExperimentItem, LeaderboardRow, LeaderboardScope, RoundDetail, RoundScore,
    Store,
};
use serde::Deserialize;

/// Leaderboard rows a page.
const PER_PAGE: usize = 25;

/// `?page=N`.
#[derive(Debug, Deserialize)]
pub(crate) struct PageQuery {
    page: Option<usize>,
}

/// `GET /results`: the latest execution.
pub(crate) async fn latest(State(s): State<AppState>) -> Response {
    match data::read(s.db(), |st: &Store| Ok(st.latest_execution()?)).await {
        Ok(Some(id)) => Redirect::to(&format!("/executions/{}", url(&id))).into_response(),
        Ok(None) => read_error(ReadError::NoDatabase, Nav::Results),
        Err(e) => read_error(e, Nav::Results),
    }
}

struct Loaded {
    overview: ExecutionOverview,
    leaderboard: Vec<LeaderboardRow>,
    scores: Vec<RoundScore>,
    /// The experiment item the execution plays, if any.
    item: Option<ExperimentItem>,
}

/// A read error, or while a run holds the database, a page pointing to its live view.
fn unavailable(s: &AppState, id: &str, e: ReadError) -> Response {
    if let ReadError::Busy { .. } = e {
        if live::execution(&s.logs(), id).is_some_and(|f| f.live_status() == "running") {
            return layout::page_with_status(
                StatusCode::SERVICE_UNAVAILABLE,
                "Running",
                Nav::Results,
                &format!(
                    "<h1>This execution is running</h1><div class=\"notice\" id=\"busy\">It holds the database while it \
                     runs; its results show here when it ends. <a href=\"/live/{}\">Follow it live.</a></div>",
                    esc(&url(id))
                ),
            );
        }
    }
    read_error(e, Nav::Results)
}

/// `GET /executions/{id}`.
pub(crate) async fn page(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    let exec = id.clone();
    let read = data::read(s.db(), move |st: &Store| {
        let exec = st.resolve_execution(&exec)?;
        Ok(Loaded {
            overview: st.execution_overview(&exec)?,
            leaderboard: st
                .leaderboard(&LeaderboardScope::Execution(exec.clone()))?
                .1,
            scores: st.round_scores(&exec)?,
            item: st.experiment_item_of(&exec)?,
        })
    })
    .await;
    let d = match read {
        Ok(d) => d,
        Err(e) => return unavailable(&s, &id, e),
    };
    let o = &d.overview;
    let e = &o.execution;
    let id = e.execution_id.as_str().to_string();
    let page = q.page.unwrap_or(1).max(1);
    let total = d.leaderboard.len();
    let page = page.min(total.div_ceil(PER_PAGE).max(1));
    let shown = &d.leaderboard[((page - 1) * PER_PAGE).min(total)..(page * PER_PAGE).min(total)];
    let base = format!("/executions/{}", url(&id));
    let href = |r: &LeaderboardRow| format!("{base}/teams/{}", url(r.team_id.as_str()));

    let mut h = format!(
        "<h1>Execution <code>{}</code> <span class=\"status {}\">{}</span></h1>\n",
        esc(&id),
        esc(&e.status),
        esc(&e.status)
    );
    h.push_str(&experiment_line(d.item.as_ref()));
    h.push_str(&html::execution_meta(o));
    h.push_str(&format!(
        "<h2>Task</h2>\n<pre class=\"prompt\">{}</pre>\n",
        esc(&e.user_prompt)
    ));
    h.push_str(&downloads(&base));
    if matches!(e.status.as_str(), "interrupted" | "running") {
        h.push_str(&resume_form(&s, &id));
    }
    h.push_str("<h2>Leaderboard</h2>\n");
    h.push_str(&html::leaderboard_table(shown, Some(&href)));
    h.push_str(&layout::pager(total, PER_PAGE, page, |n| {
        format!("{base}?page={n}")
    }));
    h.push_str(&html::failed_teams(o));
    h.push_str(&html::analysis_sections(o));
    // The chart shows the teams of this page (a thousand lines would say nothing).
    h.push_str("<h2>Score over rounds</h2>\n");
    let series: Vec<html::Series<'_>> = shown
        .iter()
        .map(|r| {
            (
                r.team_id.as_str(),
                r.team_name.as_str(),
                d.scores
                    .iter()
                    .filter(|s| s.team_id == r.team_id)
                    .map(|s| (s.round_number, s.score))
                    .collect(),
            )
        })
        .collect();
    h.push_str(&html::chart(&series));
    layout::page(&format!("Execution {}", &id), Nav::Results, &h)
}

/// "Experiment NAME · task T · variant V · repeat R" for an execution that plays an experiment
/// item, NAME linking to the experiment's page (the name in the query, as that page's own
/// links have it); nothing for another execution.
fn experiment_line(item: Option<&ExperimentItem>) -> String {
    let Some(i) = item else {
        return String::new();
    };
    format!(
        "<p id=\"experiment-item\">Experiment <a href=\"{}\">{}</a> · task {} · variant {} · repeat {}</p>\n",
        esc(&crate::pages::experiments::href(&i.experiment_id)),
        esc(&i.experiment_id),
        esc(&i.task_id),
        esc(&i.variant),
        i.repeat_index
    )
}

fn downloads(base: &str) -> String {
    let mut h = format!(
        "<p class=\"downloads\" id=\"downloads\">Download: <a href=\"{base}/download/report.html\">HTML report</a>\
         <a href=\"{base}/download/export.json\">JSON export</a></p>\n<details><summary>CSV and Parquet, one file per table</summary><p class=\"downloads\">"
    );
    for t in mixseek_store::export::export_tables() {
        h.push_str(&format!(
            "<a href=\"{base}/download/{t}.csv\">{t}.csv</a> <a href=\"{base}/download/{t}.parquet\">{t}.parquet</a><br>"
        ));
    }
    h.push_str("</p></details>\n");
    h
}

fn resume_form(s: &AppState, id: &str) -> String {
    let list = configs::list(&s.workspace);
    let known = live::execution(&s.logs(), id)
        .and_then(|f| f.config)
        .and_then(|c| configs::relative(&s.workspace, &c));
    if list.is_empty() {
        return "<p class=\"notice\">Interrupted. Resume it from a terminal with <code>mixseek exec --resume</code>: \
                no orchestrator configuration is in the workspace.</p>"
            .into();
    }
    format!(
        "<form id=\"resume-form\" class=\"stack notice\" method=\"post\" action=\"/api/executions/{}/resume\">\
         <b>Interrupted.</b> Resume it from each team's last committed round with the configuration it started with:\
         {}<div class=\"buttons\"><button type=\"submit\" id=\"resume\">Resume</button></div>\
         <p class=\"muted\" id=\"resume-error\" role=\"alert\"></p></form>\n",
        esc(&url(id)),
        crate::pages::run::config_select("resume-config", &list, known.as_deref())
    )
}

/// `GET /executions/{id}/teams/{team}`.
pub(crate) async fn team(
    State(s): State<AppState>,
    Path((id, team)): Path<(String, String)>,
) -> Response {
    let (exec, t) = (id.clone(), team.clone());
    let read = data::read(s.db(), move |st: &Store| {
        let exec = st.resolve_execution(&exec)?;
        let rounds: Vec<RoundDetail> = st.team_round_details(&exec, &t)?;
        if rounds.is_empty() {
            return Err(ReadError::NotFound(format!(
                "team {t} has no rounds in execution {exec}"
            )));
        }
        Ok((exec, rounds))
    })
    .await;
    let (exec, rounds) = match read {
        Ok(r) => r,
        Err(e) => return unavailable(&s, &id, e),
    };
    let name = rounds
        .last()
        .map(|r| r.team_name.clone())
        .unwrap_or_else(|| team.clone());
    let mut h = format!(
        "<p><a href=\"/executions/{}\">← execution <code>{}</code></a></p>\n",
        esc(&url(&exec)),
        esc(exec.get(..8).unwrap_or(&exec))
    );
    h.push_str(&html::team_heading(&team, &name));
    let series = html::series_of(&rounds);
    h.push_str(&html::chart(&series));
    for r in &rounds {
        h.push_str(&html::round_section(r));
    }
    layout::page(&format!("Team {name}"), Nav::Results, &h)
}

/// `GET /executions/{id}/download/{what}`: `report.html`, `export.json`, `TABLE.csv`,
/// `TABLE.parquet`.
pub(crate) async fn download(
    State(s): State<AppState>,
    Path((id, what)): Path<(String, String)>,
) -> Response {
    let (kind, table) = match what.as_str() {
        "report.html" => ("html", None),
        "export.json" => ("json", None),
        other => match other.rsplit_once('.') {
            Some((t, ext @ ("csv" | "parquet")))
                if mixseek_store::export::export_tables().any(|x| x == t) =>
            {
                (ext, Some(t.to_string()))
            }
            _ => return crate::pages::not_found().await,
        },
    };
    let kind = kind.to_string();
    let read = data::read(s.db(), move |st: &Store| {
        let exec = st.resolve_execution(&id)?;
        if kind == "html" {
            let overview = st.execution_overview(&exec)?;
            let leaderboard = st
                .leaderboard(&LeaderboardScope::Execution(exec.clone()))?
                .1;
            let rounds = st.round_details(&exec)?;
            let page = html::render(&html::ReportData {
                overview: &overview,
                leaderboard: &leaderboard,
                rounds: &rounds,
            });
            return Ok((exec, page.into_bytes()));
        }
        let dir = std::env::temp_dir().join(format!("mixseek-ui-{}", uuid::Uuid::new_v4()));
        let format = mixseek_store::export::ExportFormat::parse(&kind)?;
        let out = if kind == "json" {
            dir.join("export.json")
        } else {
            dir.clone()
        };
        let _ = std::fs::create_dir_all(&dir);
        let result =
            mixseek_store::export::export(st, Some(std::slice::from_ref(&exec)), format, &out)
                .map_err(ReadError::from)
                .and_then(|rep| {
                    let file = match &table {
                        Some(t) => rep
                            .files
                            .iter()
                            .find(|f| f.file_stem().is_some_and(|s| s == t.as_str()))
                            .cloned(),
                        None => rep.files.first().cloned(),
                    };
                    let file =
                        file.ok_or_else(|| ReadError::NotFound("nothing was exported".into()))?;
                    std::fs::read(&file)
                        .map_err(|e| ReadError::Failed(format!("the export cannot be read: {e}")))
                });
        let _ = std::fs::remove_dir_all(&dir);
        Ok((exec, result?))
    })
    .await;
    let (exec, bytes) = match read {
        Ok(r) => r,
        Err(e) => return read_error(e, Nav::Results),
    };
    let short = exec.get(..8).unwrap_or(&exec).to_string();
    let (ctype, name) = match what.rsplit_once('.').map(|(_, e)| e) {
        Some("html") => ("text/html; charset=utf-8", format!("mixseek-{short}.html")),
        Some("json") => ("application/json", format!("mixseek-{short}.json")),
        Some("csv") => ("text/csv; charset=utf-8", format!("mixseek-{short}-{what}")),
        _ => (
            "application/vnd.apache.parquet",
            format!("mixseek-{short}-{what}"),
        ),
    };
    (
        [
            (header::CONTENT_TYPE, ctype.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
        ],
        bytes,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVIL: &str = "<script>alert(\"x\")</script>'/../é&amp;";

    #[test]
    fn an_experiment_item_names_its_experiment_and_links_to_it_hostile_names_as_text() {
        assert_eq!(experiment_line(None), "", "a plain execution has no line");
        let item = ExperimentItem {
            experiment_id: EVIL.into(),
            task_id: format!("task {EVIL}"),
            variant: format!("v {EVIL}"),
            repeat_index: 2,
            execution_id: "e".into(),
            task_metadata: serde_json::json!({}),
        };
        let h = experiment_line(Some(&item));
        assert!(!h.contains("<script") && !h.contains("\"x\""), "{h}");
        let name = esc(EVIL);
        assert!(
            name.contains("&amp;amp;"),
            "the name is escaped once: {name}"
        );
        assert_eq!(
            h,
            format!(
                "<p id=\"experiment-item\">Experiment <a href=\"{}\">{name}</a> · task task {name} · variant v {name} · repeat 2</p>\n",
                esc(&crate::pages::experiments::href(EVIL))
            )
        );
        // the link keeps the whole name in one query value, percent-encoded
        let href = h
            .split("href=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .expect("a link");
        assert_eq!(href, format!("/experiments?name={}", url(EVIL)));
        assert!(
            !href["/experiments?name=".len()..].contains(['/', '<', '&', '\'', '?', '#']),
            "{href}"
        );
    }
}
