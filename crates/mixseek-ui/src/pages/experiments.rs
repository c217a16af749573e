//! The Experiments pages.
//!
//! * `/experiments`: every experiment of the workspace database, with its variants, tasks, items
//!   finished and failed, cost and last activity, each linking to its report.
//! * `/experiments?name=NAME` (also `/experiments/NAME`): one experiment's report, the one
//!   `mixseek experiment report NAME` prints, from the same code: `mixseek_experiment::report::
//!   build` computes it and `report::html_fragment` renders it (the body of `-f html`'s page, so
//!   every section of that page shows here too). Then its items, a page at a time, each linking
//!   to its execution's results page. `&format=html` and `&format=json` download the report as
//!   `-f html` and `-f json` write it.
//!
//! Names travel in the query string: `..` is a valid experiment name, and a browser resolves
//! such a path segment (even percent-encoded) before it sends the request.

use crate::data::{self, ReadError};
use crate::layout::{self, Nav, esc, url};
use crate::pages::read_error;
use crate::server::AppState;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use mixseek_experiment::ExperimentError;
use mixseek_experiment::report::{self, ExperimentReport};
use mixseek_store::report::text;
use mixseek_store::{ItemState, Store};
use serde::Deserialize;
use std::collections::{BTreeSet, HashMap};

/// Items a page in an experiment's item table.
const ITEMS_PER_PAGE: usize = 100;
/// Variant names listed in a line of the list (the count is always shown).
const VARIANTS_SHOWN: usize = 5;

/// `?name=&page=&format=`.
#[derive(Debug, Deserialize, Default)]
pub(crate) struct ExperimentQuery {
    name: Option<String>,
    page: Option<usize>,
    format: Option<String>,
}

/// The address of experiment `name`'s report page.
pub(crate) fn href(name: &str) -> String {
    format!("/experiments?name={}", url(name))
}

/// One line of the list.
struct Line {
    name: String,
    variants: Vec<String>,
    tasks: u64,
    /// Tasks × variants × repeats of the definition (a shard's database records its share).
    planned: Option<u64>,
    items: u64,
    finished: u64,
    failed: u64,
    partial: u64,
    cost_usd: f64,
    /// The latest end (else start) of its executions, else when it was recorded.
    last_activity: String,
}

/// The variant names of a stored definition, in its order.
fn defined_variants(definition: &serde_json::Value) -> Vec<String> {
    definition["variants"]
        .as_array()
        .map(|vs| {
            vs.iter()
                .filter_map(|v| v["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Every experiment with its counts (one read).
fn lines(st: &Store) -> Result<Vec<Line>, ReadError> {
    let listed = st.experiments()?;
    if listed.is_empty() {
        return Ok(Vec::new());
    }
    // When each execution last did something: its end, else its start.
    let activity: HashMap<String, _> = st
        .executions(None)?
        .into_iter()
        .map(|e| {
            (
                e.execution_id.as_str().to_string(),
                e.completed_at.unwrap_or(e.created_at),
            )
        })
        .collect();
    let mut out = Vec::with_capacity(listed.len());
    for x in listed {
        let definition = st
            .experiment(&x.experiment_id)?
            .map(|r| r.definition)
            .unwrap_or_default();
        let items = st.experiment_items(&x.experiment_id)?;
        let mut variants = defined_variants(&definition);
        let defined = variants.len() as u64;
        for i in &items {
            if !variants.contains(&i.item.variant) {
                variants.push(i.item.variant.clone());
            }
        }
        let task_ids: BTreeSet<&str> = items.iter().map(|i| i.item.task_id.as_str()).collect();
        let tasks = definition["tasks"]
            .as_u64()
            .unwrap_or(task_ids.len() as u64);
        let planned = definition["repeats"]
            .as_u64()
            .map(|r| tasks.saturating_mul(defined).saturating_mul(r));
        let last = items
            .iter()
            .filter_map(|i| activity.get(&i.item.execution_id))
            .max()
            .copied()
            .or(x.created_at);
        let status = |s: &str| {
            items
                .iter()
                .filter(|i| i.status.as_deref() == Some(s))
                .count() as u64
        };
        out.push(Line {
            variants,
            tasks,
            planned,
            items: items.len() as u64,
            finished: items.iter().filter(|i| i.finished()).count() as u64,
            failed: status("failed"),
            partial: status("partial_failure"),
            cost_usd: items.iter().map(|i| i.cost_usd).sum(),
            last_activity: text::opt_time(last.as_ref()),
            name: x.experiment_id,
        });
    }
    Ok(out)
}

/// While a run or an experiment holds the database.
fn busy(pid: Option<u32>) -> Response {
    layout::page_with_status(
        StatusCode::SERVICE_UNAVAILABLE,
        "A run is writing",
        Nav::Experiments,
        &format!(
            "<h1>Experiments</h1><div class=\"notice\" id=\"busy\">A run or an experiment is writing the database{}: \
             DuckDB lets one process use <code>mixseek.db</code> while it writes. The experiments show here when it \
             ends; meanwhile its executions can be followed live on the <a href=\"/run\">Run page</a>.</div>",
            pid.map(|p| format!(" (process {p})")).unwrap_or_default()
        ),
    )
}

/// `GET /experiments`: the list, or with `?name=` an experiment's report.
pub(crate) async fn page(State(s): State<AppState>, Query(q): Query<ExperimentQuery>) -> Response {
    match q.name {
        Some(name) if !name.trim().is_empty() => {
            experiment(&s, name, q.page, q.format.as_deref()).await
        }
        _ => list(&s).await,
    }
}

/// `GET /experiments/{name}`: an experiment's report, for an address typed by hand (the
/// pages link to `/experiments?name=`).
pub(crate) async fn by_path(
    State(s): State<AppState>,
    name: Result<Path<String>, PathRejection>,
    Query(q): Query<ExperimentQuery>,
) -> Response {
    match name {
        Ok(Path(name)) => experiment(&s, name, q.page, q.format.as_deref()).await,
        Err(e) => {
            tracing::debug!(error = %e, "an experiment address that is not a name");
            layout::page_with_status(
                StatusCode::NOT_FOUND,
                "No such experiment",
                Nav::Experiments,
                "<h1>No such experiment</h1><p id=\"unknown-experiment\">This address names no experiment. \
                 <a href=\"/experiments\">See every experiment.</a></p>",
            )
        }
    }
}

async fn list(s: &AppState) -> Response {
    let (lines, no_db) = match data::read(s.db(), lines).await {
        Ok(l) => (l, false),
        Err(ReadError::NoDatabase) => (Vec::new(), true),
        Err(ReadError::Busy { pid }) => return busy(pid),
        Err(e) => return read_error(e, Nav::Experiments),
    };
    let mut h = String::from("<h1>Experiments</h1>\n");
    if lines.is_empty() {
        h.push_str(&format!(
            "<p id=\"no-experiments\">{} An experiment runs a task set with several configurations (variants), \
             each task several times, as ordinary executions, and reports which variant scores better, with \
             confidence intervals: <code>mixseek experiment run FILE</code> (user guide, section 7).</p>\n",
            if no_db {
                "No experiments yet: this workspace has no database yet."
            } else {
                "No experiments in this workspace's database yet."
            }
        ));
        return layout::page("Experiments", Nav::Experiments, &h);
    }
    h.push_str(
        "<p class=\"muted\">The experiments of this workspace's database, newest first. Each one links to \
         its report: per variant the mean score with its bootstrap interval, each variant against the baseline, \
         the per-task scores and every item's execution.</p>\n\
         <table class=\"experiments\" id=\"experiments\"><thead><tr><th>Experiment</th><th>Variants</th>\
         <th>Tasks</th><th>Items finished</th><th>Failed</th><th>Cost</th><th>Last activity</th></tr></thead><tbody>\n",
    );
    for l in &lines {
        let mut names: Vec<String> = l
            .variants
            .iter()
            .take(VARIANTS_SHOWN)
            .map(|v| esc(v))
            .collect();
        if l.variants.len() > VARIANTS_SHOWN {
            names.push("…".into());
        }
        let planned = match l.planned {
            Some(p) if p != l.items => format!(" <span class=\"muted\">({p} planned)</span>"),
            _ => String::new(),
        };
        let partial = if l.partial > 0 {
            format!(" <span class=\"muted\">(+{} partial)</span>", l.partial)
        } else {
            String::new()
        };
        h.push_str(&format!(
            "<tr data-experiment=\"{}\"><td><a href=\"{}\">{}</a></td><td>{} <span class=\"muted\">{}</span></td>\
             <td class=\"num\">{}</td><td class=\"num\">{} / {}{planned}</td><td class=\"num\">{}{partial}</td>\
             <td class=\"num\">{}</td><td>{}</td></tr>\n",
            esc(&l.name),
            esc(&href(&l.name)),
            esc(&l.name),
            l.variants.len(),
            names.join(", "),
            l.tasks,
            l.finished,
            l.items,
            l.failed,
            esc(&text::cost(l.cost_usd)),
            esc(&l.last_activity),
        ));
    }
    h.push_str("</tbody></table>\n");
    layout::page("Experiments", Nav::Experiments, &h)
}

/// What a read of one experiment found.
enum Found {
    /// The report, and the items when asked for.
    Report(Box<ExperimentReport>, Vec<ItemState>),
    /// No such experiment: the names the database has.
    Unknown(Vec<String>),
}

/// The report of `name` (as `mixseek experiment report` builds it) and, with `with_items`, its
/// items.
async fn load(s: &AppState, name: String, with_items: bool) -> Result<Found, ReadError> {
    let db = s.db();
    data::read(db.clone(), move |st: &Store| {
        match report::build(st, &db, &name) {
            Ok(r) => {
                let items = if with_items {
                    st.experiment_items(&name)?
                } else {
                    Vec::new()
                };
                Ok(Found::Report(Box::new(r), items))
            }
            Err(ExperimentError::NotFound { known, .. }) => Ok(Found::Unknown(known)),
            Err(ExperimentError::Store(e)) => Err(e.into()),
            Err(e) => Err(ReadError::Failed(e.to_string())),
        }
    })
    .await
}

/// An experiment's report page, or a download of it.
async fn experiment(
    s: &AppState,
    name: String,
    page: Option<usize>,
    format: Option<&str>,
) -> Response {
    let format = match format {
        None | Some("") => None,
        Some(f @ ("html" | "json")) => Some(f.to_string()),
        Some(other) => {
            return layout::page_with_status(
                StatusCode::NOT_FOUND,
                "Not found",
                Nav::Experiments,
                &format!(
                    "<h1>Not found</h1><p>The report comes as <code>format=html</code> or <code>format=json</code>, \
                     not <code>{}</code>. <a href=\"{}\">See the report.</a></p>",
                    esc(other),
                    esc(&href(&name))
                ),
            );
        }
    };
    let found = load(s, name.clone(), format.is_none()).await;
    match found {
        Ok(Found::Report(r, items)) => match format.as_deref() {
            Some(f) => download(&r, f),
            None => report_page(&r, &items, page.unwrap_or(1)),
        },
        Ok(Found::Unknown(known)) => unknown(&name, &known, false),
        Err(ReadError::NoDatabase) => unknown(&name, &[], true),
        Err(ReadError::Busy { pid }) => busy(pid),
        Err(e) => read_error(e, Nav::Experiments),
    }
}

/// The 404 of an unknown experiment, with the nearest known name.
fn unknown(name: &str, known: &[String], no_db: bool) -> Response {
    let mut h = format!(
        "<h1>No such experiment</h1>\n<p id=\"unknown-experiment\">There is no experiment <code>{}</code> in this \
         workspace's database.",
        esc(name)
    );
    if no_db {
        h.push_str(" This workspace has no database yet.");
    } else if known.is_empty() {
        h.push_str(" It has no experiment at all.");
    } else if let Some(c) = mixseek_config::closest(name, known.iter().map(String::as_str)) {
        h.push_str(&format!(
            " Did you mean <a id=\"nearest\" href=\"{}\">{}</a>?",
            esc(&href(c)),
            esc(c)
        ));
    }
    h.push_str("</p>\n");
    if known.is_empty() {
        h.push_str(
            "<p>Run one with <code>mixseek experiment run FILE</code>; <code>mixseek experiment list</code> lists \
             them.</p>\n",
        );
    } else {
        h.push_str(&format!(
            "<p><a href=\"/experiments\">See every experiment ({}).</a></p>\n",
            known.len()
        ));
    }
    layout::page_with_status(
        StatusCode::NOT_FOUND,
        "No such experiment",
        Nav::Experiments,
        &h,
    )
}

/// The report, then the items of page `page`.
fn report_page(r: &ExperimentReport, items: &[ItemState], page: usize) -> Response {
    let name = r.experiment.as_str();
    let me = href(name);
    let mut h = String::from("<p><a href=\"/experiments\">← every experiment</a></p>\n");
    h.push_str("<section class=\"experiment-report\" id=\"experiment-report\">\n");
    h.push_str(&report::html_fragment(r));
    h.push_str("\n</section>\n");
    h.push_str(&format!(
        "<p class=\"downloads\" id=\"downloads\">Download: <a href=\"{}\">HTML report</a> <a href=\"{}\">JSON</a> \
         <span class=\"muted\">(what <code>mixseek experiment report {} -f html</code> and <code>-f json</code> \
         write)</span></p>\n",
        esc(&format!("{me}&format=html")),
        esc(&format!("{me}&format=json")),
        esc(name)
    ));
    h.push_str(&items_section(&me, items, page));
    layout::page(&format!("Experiment {name}"), Nav::Experiments, &h)
}

/// The item table (a page of it), each item linking to its execution.
fn items_section(me: &str, items: &[ItemState], page: usize) -> String {
    let total = items.len();
    let page = page.clamp(1, total.div_ceil(ITEMS_PER_PAGE).max(1));
    let shown =
        &items[((page - 1) * ITEMS_PER_PAGE).min(total)..(page * ITEMS_PER_PAGE).min(total)];
    let mut h = String::from(
        "<h2 id=\"items\">Items</h2>\n<p class=\"muted\">Each item (a task played by a variant, once per repeat) is \
         an ordinary execution: open it for its teams, rounds and submissions. Its score is the execution's best \
         score.</p>\n",
    );
    if total == 0 {
        h.push_str("<p id=\"no-items\">No item is recorded yet.</p>\n");
        return h;
    }
    h.push_str(
        "<table class=\"items\" id=\"experiment-items\"><thead><tr><th>Task</th><th>Variant</th><th>Repeat</th>\
         <th>Status</th><th>Score</th><th>Cost</th><th>Tokens</th><th>Execution</th></tr></thead><tbody>\n",
    );
    for i in shown {
        let id = i.item.execution_id.as_str();
        let short = text::short_id(id);
        let (status, execution) = match &i.status {
            Some(st) => (
                format!("<span class=\"status {0}\">{0}</span>", esc(st)),
                format!(
                    "<a href=\"/executions/{}\"><code>{}</code></a>",
                    esc(&url(id)),
                    esc(&short)
                ),
            ),
            None => (
                "<span class=\"status\">not started</span>".to_string(),
                format!("<code class=\"muted\">{}</code>", esc(&short)),
            ),
        };
        h.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{status}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td>{execution}</td></tr>\n",
            esc(&i.item.task_id),
            esc(&i.item.variant),
            i.item.repeat_index,
            text::opt_score(i.best_score),
            esc(&text::cost(i.cost_usd)),
            i.input_tokens + i.output_tokens,
        ));
    }
    h.push_str("</tbody></table>\n");
    h.push_str(&layout::pager(total, ITEMS_PER_PAGE, page, |n| {
        format!("{me}&page={n}#items")
    }));
    h
}

/// The report as `mixseek experiment report NAME -f html|json` writes it, as a download.
fn download(r: &ExperimentReport, format: &str) -> Response {
    let (ctype, body) = if format == "json" {
        match serde_json::to_string_pretty(r) {
            Ok(j) => ("application/json", j + "\n"),
            Err(e) => {
                return read_error(
                    ReadError::Failed(format!("the report cannot be written as JSON: {e}")),
                    Nav::Experiments,
                );
            }
        }
    } else {
        ("text/html; charset=utf-8", report::html(r))
    };
    // A file name of safe characters only (the name itself may hold anything).
    let stem: String = r
        .experiment
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    (
        [
            (header::CONTENT_TYPE, ctype.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"experiment-{stem}.{format}\""),
            ),
            (header::CACHE_CONTROL, "no-store".to_string()),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mixseek_store::ExperimentItem;

    fn item(task: &str, variant: &str, status: Option<&str>, score: Option<f64>) -> ItemState {
        ItemState {
            item: ExperimentItem {
                experiment_id: "x".into(),
                task_id: task.into(),
                variant: variant.into(),
                repeat_index: 0,
                execution_id: format!("{task}/{variant}\"<id>"),
                task_metadata: serde_json::json!({}),
            },
            status: status.map(str::to_string),
            best_score: score,
            input_tokens: 3,
            output_tokens: 4,
            cost_usd: 0.5,
            seconds: None,
        }
    }

    const EVIL: &str = "<script>alert(\"x\")</script>'/../é";

    async fn body(r: Response) -> String {
        let bytes = axum::body::to_bytes(r.into_body(), usize::MAX)
            .await
            .expect("the body");
        String::from_utf8_lossy(&bytes).into_owned()
    }

    #[tokio::test]
    async fn hostile_names_stay_text_and_links_keep_them_whole() {
        let items = vec![
            item(EVIL, EVIL, Some("completed"), Some(10.0)),
            item("t2", EVIL, None, None),
        ];
        let r = report::compute(EVIL, &[EVIL.to_string()], EVIL, 0.95, 0, 100, &items);
        let resp = report_page(&r, &items, 1);
        assert_eq!(resp.status(), StatusCode::OK);
        let h = body(resp).await;
        let main = h.split("<main>").nth(1).expect("the page's main");
        assert!(!main.contains("<script") && !main.contains("\"x\""), "{h}");
        assert!(main.contains("&lt;script&gt;alert(&quot;x&quot;)"), "{h}");
        // the execution's link is one percent-encoded path segment
        let link = format!("href=\"/executions/{}\"", url(&items[0].item.execution_id));
        assert!(
            link.contains("%2F..%2F%C3%A9%2F") && main.contains(&link),
            "{h}"
        );
        assert!(main.contains("not started"), "{h}");
        // the experiment's own address keeps it in the query, encoded
        assert_eq!(href(".."), "/experiments?name=..");
        let me = href(EVIL);
        assert!(
            !me["/experiments".len()..].contains(['/', '<', '"', '\'']),
            "{me}"
        );
        assert!(main.contains(&esc(&format!("{me}&format=json"))), "{h}");
    }

    #[test]
    fn the_fragment_is_the_body_of_the_report_page() {
        let items = vec![item("t", "a", Some("completed"), Some(1.0))];
        let r = report::compute("x", &["a".to_string()], "a", 0.95, 0, 100, &items);
        let f = report::html_fragment(&r);
        assert!(f.starts_with("<h1>Experiment x</h1>"), "{f}");
        assert!(!f.contains("<body") && !f.contains("<style") && !f.contains("</html>"));
        assert!(report::html(&r).contains(&f));
    }

    #[test]
    fn items_are_paged() {
        let items: Vec<ItemState> = (0..250)
            .map(|n| item(&format!("t{n:03}"), "a", Some("completed"), Some(1.0)))
            .collect();
        let p3 = items_section("/experiments?name=x", &items, 3);
        assert!(p3.contains("t249") && !p3.contains("t199"), "page 3");
        assert!(p3.contains("page 3 of 3 (250)"), "{p3}");
        let far = items_section("/experiments?name=x", &items, 99);
        assert!(
            far.contains("page 3 of 3"),
            "a page past the end shows the last"
        );
    }

    #[tokio::test]
    async fn an_unknown_name_is_a_404_naming_the_nearest() {
        let r = unknown("coper", &["copper".into(), "zinc".into()], false);
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        let h = body(r).await;
        assert!(
            h.contains("<a id=\"nearest\" href=\"/experiments?name=copper\">copper</a>"),
            "{h}"
        );
        let r = unknown(EVIL, &[], true);
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        let h = body(r).await;
        assert!(
            h.contains("no database yet") && !h.contains("<script>"),
            "{h}"
        );
    }
}
