//! The Compare page: two or more executions side by side — their facts, each team's best
//! score, every round's score, and the differences between their configurations (recorded
//! in each execution's progress file, secrets masked).

use crate::data::{self, ReadError};
use crate::layout::{self, Nav, esc, url};
use crate::live;
use crate::pages::read_error;
use crate::server::AppState;
use axum::extract::{Query, State};
use axum::response::Response;
use mixseek_store::report::text;
use mixseek_store::{ExecutionRow, LeaderboardRow, LeaderboardScope, RoundScore, Store};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

/// Executions compared at most.
const MAX: usize = 8;

/// `?ids=a,b,c`.
#[derive(Debug, Deserialize, Default)]
pub(crate) struct CompareQuery {
    #[serde(default)]
    ids: String,
}

struct One {
    row: ExecutionRow,
    board: Vec<LeaderboardRow>,
    scores: Vec<RoundScore>,
    settings: Option<serde_json::Map<String, serde_json::Value>>,
}

/// `GET /compare`.
pub(crate) async fn page(State(s): State<AppState>, Query(q): Query<CompareQuery>) -> Response {
    let ids: Vec<String> = q
        .ids
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .take(MAX)
        .collect();
    if ids.len() < 2 {
        return pick(&s).await;
    }
    let logs = s.logs();
    let read = data::read(s.db(), move |st: &Store| {
        let mut out = Vec::new();
        for id in ids {
            let id = st.resolve_execution(&id)?;
            let row = st
                .execution(&id)?
                .ok_or_else(|| ReadError::NotFound(format!("no execution {id}")))?;
            out.push(One {
                board: st.leaderboard(&LeaderboardScope::Execution(id.clone()))?.1,
                scores: st.round_scores(&id)?,
                settings: live::execution(&logs, &id).and_then(|f| f.settings),
                row,
            });
        }
        Ok(out)
    })
    .await;
    let all = match read {
        Ok(a) => a,
        Err(e) => return read_error(e, Nav::Compare),
    };
    let mut h = String::from("<h1>Compare executions</h1>\n");
    h.push_str(&summary(&all));
    h.push_str(&best_scores(&all));
    h.push_str(&round_scores(&all));
    h.push_str(&settings_diff(&all));
    layout::page("Compare", Nav::Compare, &h)
}

fn head(all: &[One], first: &str) -> String {
    let mut h = format!("<thead><tr><th>{first}</th>");
    for o in all {
        let id = o.row.execution_id.as_str();
        h.push_str(&format!(
            "<th><a href=\"/executions/{}\"><code>{}</code></a></th>",
            esc(&url(id)),
            esc(id.get(..8).unwrap_or(id))
        ));
    }
    h.push_str("</tr></thead>");
    h
}

fn summary(all: &[One]) -> String {
    let mut h = format!(
        "<h2>Executions</h2>\n<table id=\"compare-summary\">{}<tbody>",
        head(all, "")
    );
    let line = |label: &str, f: &dyn Fn(&ExecutionRow) -> String| {
        let mut r = format!("<tr><th>{label}</th>");
        for o in all {
            r.push_str(&format!("<td>{}</td>", esc(&f(&o.row))));
        }
        r.push_str("</tr>");
        r
    };
    h.push_str(&line("Task", &|e| {
        e.user_prompt.chars().take(200).collect()
    }));
    h.push_str(&line("Status", &|e| e.status.clone()));
    h.push_str(&line("Teams", &|e| e.total_teams.to_string()));
    h.push_str(&line("Rounds", &|e| e.rounds.to_string()));
    h.push_str(&line("Best team", &|e| {
        text::or_dash(e.best_team_id.as_ref().map(|t| t.as_str()))
    }));
    h.push_str(&line("Best score", &|e| {
        e.best_score.map(text::score).unwrap_or_else(|| "—".into())
    }));
    h.push_str(&line("Tokens", &|e| {
        format!("{} in / {} out", e.input_tokens, e.output_tokens)
    }));
    h.push_str(&line("Cost", &|e| text::cost(e.cost_usd)));
    h.push_str(&line("Duration", &|e| {
        e.total_execution_time_seconds
            .map(|t| format!("{t:.1}s"))
            .unwrap_or_else(|| "—".into())
    }));
    h.push_str("</tbody></table>\n");
    h
}

fn best_scores(all: &[One]) -> String {
    let teams: BTreeSet<&str> = all
        .iter()
        .flat_map(|o| o.board.iter().map(|r| r.team_id.as_str()))
        .collect();
    let mut h = format!(
        "<h2>Best score per team</h2>\n<table id=\"compare-teams\">{}<tbody>",
        head(all, "Team")
    );
    for t in teams {
        h.push_str(&format!("<tr><th><code>{}</code></th>", esc(t)));
        for o in all {
            let cell = o
                .board
                .iter()
                .find(|r| r.team_id.as_str() == t)
                .map(|r| {
                    format!(
                        "{} (round {}, rank {})",
                        text::score(r.score),
                        r.round_number,
                        r.rank
                    )
                })
                .unwrap_or_else(|| "—".into());
            h.push_str(&format!("<td class=\"num\">{}</td>", esc(&cell)));
        }
        h.push_str("</tr>");
    }
    h.push_str("</tbody></table>\n");
    h
}

fn round_scores(all: &[One]) -> String {
    let keys: BTreeSet<(&str, u32)> = all
        .iter()
        .flat_map(|o| {
            o.scores
                .iter()
                .map(|s| (s.team_id.as_str(), s.round_number))
        })
        .collect();
    let mut h = format!(
        "<h2>Score per team and round</h2>\n<table id=\"compare-rounds\">{}<tbody>",
        head(all, "Team · round")
    );
    for (t, r) in keys.iter().take(2000) {
        h.push_str(&format!("<tr><th><code>{}</code> · {r}</th>", esc(t)));
        for o in all {
            let cell = o
                .scores
                .iter()
                .find(|s| s.team_id.as_str() == *t && s.round_number == *r)
                .map(|s| text::score(s.score))
                .unwrap_or_else(|| "—".into());
            h.push_str(&format!("<td class=\"num\">{cell}</td>"));
        }
        h.push_str("</tr>");
    }
    h.push_str("</tbody></table>\n");
    h
}

fn settings_diff(all: &[One]) -> String {
    let mut h = String::from("<h2>Configuration differences</h2>\n");
    let missing: Vec<&str> = all
        .iter()
        .filter(|o| o.settings.is_none())
        .map(|o| o.row.execution_id.as_str())
        .collect();
    if !missing.is_empty() {
        h.push_str(&format!(
            "<p class=\"notice\">Not recorded for {} (an execution started by an older mixseek, by the original, or in \
             another workspace).</p>\n",
            esc(&missing
                .iter()
                .map(|m| m.get(..8).unwrap_or(m))
                .collect::<Vec<_>>()
                .join(", "))
        ));
    }
    let known: Vec<&One> = all.iter().filter(|o| o.settings.is_some()).collect();
    if known.len() < 2 {
        return h;
    }
    let mut keys: BTreeMap<&str, ()> = BTreeMap::new();
    for o in &known {
        for k in o.settings.iter().flat_map(|s| s.keys()) {
            keys.insert(k, ());
        }
    }
    let mut rows = String::new();
    for k in keys.keys() {
        let values: Vec<Option<&serde_json::Value>> = known
            .iter()
            .map(|o| o.settings.as_ref().and_then(|s| s.get(*k)))
            .collect();
        if values.windows(2).all(|w| w[0] == w[1]) {
            continue;
        }
        rows.push_str(&format!("<tr><th><code>{}</code></th>", esc(k)));
        for v in values {
            let shown = match v {
                None => "(not set)".to_string(),
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            };
            rows.push_str(&format!("<td class=\"diff\">{}</td>", esc(&shown)));
        }
        rows.push_str("</tr>");
    }
    if rows.is_empty() {
        h.push_str("<p id=\"same-config\">The configurations are the same.</p>\n");
    } else {
        let mut head = String::from("<thead><tr><th>Setting</th>");
        for o in &known {
            let id = o.row.execution_id.as_str();
            head.push_str(&format!(
                "<th><code>{}</code></th>",
                esc(id.get(..8).unwrap_or(id))
            ));
        }
        head.push_str("</tr></thead>");
        h.push_str(&format!(
            "<table id=\"compare-config\">{head}<tbody>{rows}</tbody></table>\n"
        ));
    }
    h
}

/// Compare without two executions: pick them from the most recent ones.
async fn pick(s: &AppState) -> Response {
    let read = data::read(s.db(), |st: &Store| Ok(st.executions(Some(25))?)).await;
    let rows = match read {
        Ok(r) => r,
        Err(e) => return read_error(e, Nav::Compare),
    };
    let mut h = String::from(
        "<h1>Compare executions</h1>\n<p>Pick two executions or more (the same task with different configurations, say). \
         Older ones are on the <a href=\"/history\">History</a> page.</p>\n",
    );
    h.push_str(&crate::pages::history::executions_table(&rows));
    h.push_str(
        "<div class=\"buttons\"><button type=\"button\" id=\"compare-selected\">Compare selected</button>\
         <span class=\"muted\" id=\"compare-note\" role=\"status\"></span></div>\n",
    );
    layout::page("Compare", Nav::Compare, &h)
}
