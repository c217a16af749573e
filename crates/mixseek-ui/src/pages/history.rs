//! The History page: every execution with its status, teams, rounds, best team and score,
//! cost, duration and task; searched, filtered by status, a page at a time; picked for
//! Compare; and the leaderboard across executions.

use crate::data::{self, ReadError};
use crate::layout::{self, Nav, esc, url};
use crate::live;
use crate::pages::read_error;
use crate::server::AppState;
use axum::extract::{Query, State};
use axum::response::Response;
use mixseek_store::report::{html, text};
use mixseek_store::{ExecutionRow, LeaderboardRow, LeaderboardScope, Store};
use serde::Deserialize;

/// Executions a page.
const PER_PAGE: usize = 25;
/// Rows of the cross-execution leaderboard shown.
const TOP: usize = 20;
/// The statuses offered in the filter.
const STATUSES: [&str; 6] = [
    "completed",
    "partial_failure",
    "failed",
    "interrupted",
    "running",
    "incomplete",
];

/// `?q=&status=&page=`.
#[derive(Debug, Deserialize, Default)]
pub(crate) struct HistoryQuery {
    #[serde(default)]
    q: String,
    #[serde(default)]
    status: String,
    page: Option<usize>,
}

/// The table of executions, with a checkbox each for Compare.
pub(crate) fn executions_table(rows: &[ExecutionRow]) -> String {
    let mut h = String::from(
        "<table class=\"executions\"><thead><tr><th></th><th>Execution</th><th>Status</th><th>Teams</th><th>Rounds</th>\
         <th>Best team</th><th>Best score</th><th>Cost</th><th>Duration</th><th>Started</th><th>Task</th></tr></thead><tbody>\n",
    );
    for e in rows {
        let id = e.execution_id.as_str();
        let task: String = e.user_prompt.chars().take(120).collect();
        h.push_str(&format!(
            "<tr><td><input type=\"checkbox\" class=\"pick\" value=\"{}\" aria-label=\"pick for comparison\"></td>\
             <td><a href=\"/executions/{}\"><code>{}</code></a></td><td><span class=\"status {}\">{}</span></td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td>{}</td><td>{}{}</td></tr>\n",
            esc(id),
            esc(&url(id)),
            esc(id.get(..8).unwrap_or(id)),
            esc(&e.status),
            esc(&e.status),
            e.total_teams,
            e.rounds,
            esc(&text::or_dash(e.best_team_id.as_ref().map(|t| t.as_str()))),
            e.best_score.map(text::score).unwrap_or_else(|| "—".into()),
            esc(&text::cost(e.cost_usd)),
            e.total_execution_time_seconds
                .map(|t| format!("{t:.1}s"))
                .unwrap_or_else(|| "—".into()),
            esc(&text::time(&e.created_at)),
            esc(&task),
            if e.user_prompt.chars().count() > 120 { "…" } else { "" }
        ));
    }
    h.push_str("</tbody></table>\n");
    h
}

/// `GET /history`.
pub(crate) async fn page(State(s): State<AppState>, Query(q): Query<HistoryQuery>) -> Response {
    let read = data::read(s.db(), |st: &Store| {
        let all = st.executions(None)?;
        let top = st.leaderboard(&LeaderboardScope::All)?.1;
        Ok((all, top))
    })
    .await;
    let (all, top): (Vec<ExecutionRow>, Vec<LeaderboardRow>) = match read {
        Ok(r) => r,
        Err(ReadError::Busy { pid }) => return busy(&s, pid),
        Err(e) => return read_error(e, Nav::History),
    };
    let needle = q.q.trim().to_lowercase();
    let rows: Vec<ExecutionRow> = all
        .into_iter()
        .filter(|e| q.status.is_empty() || e.status == q.status)
        .filter(|e| {
            needle.is_empty()
                || e.user_prompt.to_lowercase().contains(&needle)
                || e.execution_id.as_str().starts_with(&needle)
                || e.best_team_id
                    .as_ref()
                    .is_some_and(|t| t.as_str().to_lowercase().contains(&needle))
        })
        .collect();
    let total = rows.len();
    let page = q
        .page
        .unwrap_or(1)
        .max(1)
        .min(total.div_ceil(PER_PAGE).max(1));
    let shown = &rows[((page - 1) * PER_PAGE).min(total)..(page * PER_PAGE).min(total)];
    let mut h = String::from(
        "<h1>History</h1>\n<form class=\"filters\" method=\"get\" action=\"/history\">",
    );
    h.push_str(&format!(
        "<label>Search (task, id, team)<input type=\"text\" name=\"q\" id=\"q\" value=\"{}\"></label>",
        esc(&q.q)
    ));
    h.push_str(
        "<label>Status<select name=\"status\" id=\"status\"><option value=\"\">any</option>",
    );
    for st in STATUSES {
        h.push_str(&format!(
            "<option value=\"{st}\"{}>{st}</option>",
            if q.status == st { " selected" } else { "" }
        ));
    }
    h.push_str("</select></label><button type=\"submit\">Filter</button></form>\n");
    if total == 0 {
        h.push_str("<p id=\"no-executions\">No execution matches.</p>\n");
    } else {
        h.push_str(&executions_table(shown));
        h.push_str(&layout::pager(total, PER_PAGE, page, |n| {
            format!(
                "/history?q={}&status={}&page={n}",
                url(&q.q),
                url(&q.status)
            )
        }));
        h.push_str(
            "<div class=\"buttons\"><button type=\"button\" id=\"compare-selected\">Compare selected</button>\
             <span class=\"muted\" id=\"compare-note\" role=\"status\"></span></div>\n",
        );
    }
    h.push_str("<h2>Leaderboard across executions</h2>\n<p class=\"muted\">Each team id's best round in any execution.</p>\n");
    h.push_str(&html::leaderboard_table(&top[..top.len().min(TOP)], None));
    layout::page("History", Nav::History, &h)
}

/// History while a run holds the database: the executions known from the progress files.
fn busy(s: &AppState, pid: Option<u32>) -> Response {
    let files = live::executions(&s.logs());
    let mut h = format!(
        "<h1>History</h1><div class=\"notice\" id=\"busy\">A run is writing the database{}: the full history shows when it \
         ends. The executions the progress files know:</div>\n<table><thead><tr><th>Execution</th><th>Status</th><th>Teams</th>\
         <th>Started</th><th>Task</th></tr></thead><tbody>",
        pid.map(|p| format!(" (process {p})")).unwrap_or_default()
    );
    for f in files.iter().take(PER_PAGE) {
        let status = f.live_status();
        let link = if status == "running" {
            "live"
        } else {
            "executions"
        };
        h.push_str(&format!(
            "<tr><td><a href=\"/{link}/{}\"><code>{}</code></a></td><td><span class=\"status {status}\">{status}</span></td>\
             <td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
            esc(&url(&f.execution_id)),
            esc(f.execution_id.get(..8).unwrap_or(&f.execution_id)),
            f.total_teams,
            esc(f.started_at.as_deref().unwrap_or("")),
            esc(&f.user_prompt.chars().take(120).collect::<String>())
        ));
    }
    h.push_str("</tbody></table>");
    layout::page("History", Nav::History, &h)
}
