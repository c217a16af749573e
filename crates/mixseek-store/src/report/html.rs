//! `mixseek report EXECUTION_ID -o report.html`: one self-contained HTML file (inline CSS and
//! SVG, no script, no external resource) with the execution, the leaderboard, a score-over-
//! rounds chart per team, and every round's submission, metric comments, judgment, member
//! outputs and usage (rounds without an evaluation are listed too, marked `not evaluated`;
//! metrics that failed show `failed` and their error), and the execution's latest arena when
//! there is one (ratings, and each pair's games with the judges' answers), and its latest
//! analysis of the judges' comments (themes with their quotes). Every stored text is
//! HTML-escaped.
//!
//! The report is assembled from public view pieces ([`execution_meta`], [`leaderboard_table`],
//! [`failed_teams`], [`analysis_sections`], [`chart`], [`team_heading`], [`round_section`] and
//! [`CSS`]) that the web UI (`mixseek ui`) composes into its pages too: one set of views.

use super::text;
use crate::model::{ExecutionOverview, LeaderboardRow, RoundDetail};
use std::fmt::Write as _;

/// Escapes `& < > " '` for HTML text and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const PALETTE: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

/// The report's style sheet (the web UI's pages use it too).
pub const CSS: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI','Hiragino Sans','Noto Sans JP',sans-serif;margin:2rem auto;max-width:1100px;padding:0 1rem;color:#222;line-height:1.5}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{margin-top:2.2rem;border-bottom:2px solid #eee;padding-bottom:.2rem}
table{border-collapse:collapse;margin:.6rem 0;width:100%}th,td{border:1px solid #ddd;padding:.35rem .55rem;text-align:left;vertical-align:top}
th{background:#f6f6f6}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.top td{background:#d4edda}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dl.meta dt{font-weight:600}dl.meta dd{margin:0}
pre{white-space:pre-wrap;word-wrap:break-word;background:#fafafa;border:1px solid #eee;padding:.7rem;border-radius:4px;font-size:.9rem}
details{margin:.5rem 0;border:1px solid #e5e5e5;border-radius:4px;padding:.3rem .8rem}summary{cursor:pointer;font-weight:600}
.badge{display:inline-block;padding:0 .45rem;border-radius:3px;font-size:.8rem;background:#eee;margin-left:.4rem}
.final{background:#ffe8a3}.stop{background:#f8d7da}.cont{background:#d1ecf1}.unevaluated{background:#e2e3e5}
tr.failed td{background:#fdecea}
.chart text{font-size:12px;fill:#444}.muted{color:#777}
table.themes blockquote{margin:.2rem 0;padding-left:.5rem;border-left:3px solid #ddd;color:#444}table.themes p{margin:0 0 .3rem}
";

/// The data of one report.
#[derive(Debug, Clone)]
pub struct ReportData<'a> {
    /// The execution and its teams
    /// ([`Store::execution_overview`](crate::Store::execution_overview)).
    pub overview: &'a ExecutionOverview,
    /// The execution's leaderboard ([`Store::leaderboard`](crate::Store::leaderboard) of
    /// [`LeaderboardScope::Execution`](crate::LeaderboardScope::Execution)).
    pub leaderboard: &'a [LeaderboardRow],
    /// Every round of the execution, by team then round.
    pub rounds: &'a [RoundDetail],
}

/// Renders the report.
pub fn render(data: &ReportData<'_>) -> String {
    let o = data.overview;
    let e = &o.execution;
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"ja\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>MixSeek report — {}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        escape(e.execution_id.as_str())
    );
    let _ = writeln!(
        h,
        "<h1>MixSeek report</h1>\n<p class=\"muted\">Execution <code>{}</code></p>",
        escape(e.execution_id.as_str())
    );

    h.push_str(&execution_meta(o));
    let _ = writeln!(
        h,
        "<h2>Task</h2>\n<pre class=\"prompt\">{}</pre>",
        escape(&e.user_prompt)
    );
    h.push_str("<h2>Leaderboard</h2>\n");
    h.push_str(&leaderboard_table(data.leaderboard, None));
    h.push_str(&failed_teams(o));
    h.push_str(&analysis_sections(o));
    h.push_str("<h2>Score over rounds</h2>\n");
    h.push_str(&chart(&series_of(data.rounds)));

    // Rounds per team
    let mut team_order: Vec<(&str, &str)> = Vec::new();
    for r in data.rounds {
        if !team_order.iter().any(|(id, _)| *id == r.team_id) {
            team_order.push((r.team_id.as_str(), &r.team_name));
        }
    }
    for (team_id, _) in &team_order {
        let rounds: Vec<&RoundDetail> = data
            .rounds
            .iter()
            .filter(|r| r.team_id == *team_id)
            .collect();
        let name = rounds
            .last()
            .map(|r| r.team_name.as_str())
            .unwrap_or(team_id);
        h.push_str(&team_heading(team_id, name));
        for r in rounds {
            h.push_str(&round_section(r));
        }
    }
    h.push_str("<p class=\"muted\">Generated by mixseek from the workspace database.</p>\n</body>\n</html>\n");
    h
}

/// The execution's facts (status, times, teams, rounds, best, usage, cost), as a `<dl>`.
pub fn execution_meta(o: &ExecutionOverview) -> String {
    let e = &o.execution;
    let mut h = String::new();
    h.push_str("<dl class=\"meta\">\n");
    let mut meta = |k: &str, v: String| {
        let _ = writeln!(h, "<dt>{}</dt><dd>{}</dd>", escape(k), v);
    };
    meta("Status", escape(&e.status));
    meta("Started", escape(&text::time(&e.created_at)));
    meta(
        "Completed",
        escape(&text::opt_time(e.completed_at.as_ref())),
    );
    meta(
        "Duration",
        escape(
            &e.total_execution_time_seconds
                .map(|t| format!("{t:.1}s"))
                .unwrap_or_else(|| "—".into()),
        ),
    );
    meta("Teams", e.total_teams.to_string());
    let unevaluated: u32 = o.teams.iter().map(|t| t.unevaluated_rounds).sum();
    meta(
        "Rounds",
        if unevaluated > 0 {
            format!("{} (+{unevaluated} not evaluated)", e.rounds)
        } else {
            e.rounds.to_string()
        },
    );
    meta(
        "Best",
        match (&e.best_team_id, e.best_score) {
            (Some(t), Some(s)) => format!("{} ({})", escape(t.as_str()), text::score(s)),
            _ => "—".into(),
        },
    );
    meta(
        "Usage",
        escape(&format!(
            "{} input / {} output tokens, {} requests",
            o.usage.input_tokens, o.usage.output_tokens, o.usage.requests
        )),
    );
    meta("Cost", escape(&text::cost(o.usage.cost_usd)));
    if let Some(r) = &o.stop_reason {
        meta("Stopped", escape(r));
    }
    h.push_str("</dl>\n");
    h
}

/// A link target per leaderboard row (the UI links each team to its rounds).
pub type TeamHref<'a> = &'a dyn Fn(&LeaderboardRow) -> String;

/// The leaderboard table (rank 1 highlighted); `team_href` makes each team name a link.
pub fn leaderboard_table(rows: &[LeaderboardRow], team_href: Option<TeamHref<'_>>) -> String {
    let mut h = String::new();
    if rows.is_empty() {
        h.push_str("<p>No evaluated rounds.</p>\n");
    } else {
        h.push_str(
            "<table class=\"leaderboard\">\n<thead><tr><th>Rank</th><th>Team</th><th>Team ID</th><th>Score</th>\
             <th>Round</th><th>Rounds</th><th>Exit reason</th></tr></thead>\n<tbody>\n",
        );
        for r in rows {
            let _ = writeln!(
                h,
                "<tr{}><td class=\"num\">{}</td><td>{}</td><td><code>{}</code></td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                if r.rank == 1 { " class=\"top\"" } else { "" },
                r.rank,
                match team_href {
                    Some(href) => format!(
                        "<a href=\"{}\">{}</a>",
                        escape(&href(r)),
                        escape(&r.team_name)
                    ),
                    None => escape(&r.team_name),
                },
                escape(r.team_id.as_str()),
                text::score(r.score),
                r.round_number,
                r.total_rounds,
                escape(&if r.final_submission {
                    text::or_dash(r.exit_reason.as_deref())
                } else {
                    "(running)".into()
                }),
            );
        }
        h.push_str("</tbody>\n</table>\n");
    }
    h
}

/// The failed teams with their errors (empty when none failed).
pub fn failed_teams(o: &ExecutionOverview) -> String {
    let mut h = String::new();
    let failed: Vec<_> = o
        .teams
        .iter()
        .filter(|t| t.error_message.is_some())
        .collect();
    if !failed.is_empty() {
        h.push_str("<h2>Failed teams</h2>\n<ul>\n");
        for t in failed {
            let _ = writeln!(
                h,
                "<li><b>{}</b> (<code>{}</code>): {}</li>",
                escape(&t.team_name),
                escape(t.team_id.as_str()),
                escape(t.error_message.as_deref().unwrap_or(""))
            );
        }
        h.push_str("</ul>\n");
    }

    h
}

/// The jury agreement, the latest arena and the latest theme analysis, when there are any.
pub fn analysis_sections(o: &ExecutionOverview) -> String {
    let mut h = String::new();
    h.push_str(&super::agreement_section::html_section(&o.agreement));
    if let Some(a) = &o.arena {
        h.push_str(&super::arena_section::html_section(a));
    }
    if let Some(t) = &o.themes {
        h.push_str(&super::themes_section::html_section(t));
    }

    h
}

/// A team's heading above its rounds.
pub fn team_heading(team_id: &str, team_name: &str) -> String {
    format!(
        "<h2>{} <span class=\"muted\">(<code>{}</code>)</span></h2>\n",
        escape(team_name),
        escape(team_id)
    )
}

/// One team's line in the chart: id, name and (round, score) points.
pub type Series<'a> = (&'a str, &'a str, Vec<(u32, f64)>);

/// The chart's series from round details: evaluated rounds only (an unevaluated round has no
/// score), teams in order of first appearance.
pub fn series_of(rounds: &[RoundDetail]) -> Vec<Series<'_>> {
    let mut teams: Vec<Series<'_>> = Vec::new();
    for r in rounds {
        let Some(score) = r.score else { continue };
        match teams.iter_mut().find(|(id, _, _)| *id == r.team_id) {
            Some(t) => t.2.push((r.round_number, score)),
            None => teams.push((
                r.team_id.as_str(),
                &r.team_name,
                vec![(r.round_number, score)],
            )),
        }
    }
    teams
}

/// One round: badges, metrics with comments, judgment, submission, members, usage and prompt.
pub fn round_section(r: &RoundDetail) -> String {
    let mut h = String::new();
    let mut badges = String::new();
    match r.decision.should_continue {
        Some(true) => badges.push_str("<span class=\"badge cont\">continue</span>"),
        Some(false) => badges.push_str("<span class=\"badge stop\">stop</span>"),
        None => {}
    }
    if r.final_submission {
        let _ = write!(
            badges,
            "<span class=\"badge final\">final — {}</span>",
            escape(&text::or_dash(r.exit_reason.as_deref()))
        );
    }
    if !r.evaluated {
        badges.push_str("<span class=\"badge unevaluated\">not evaluated</span>");
    }
    let _ = writeln!(
        h,
        "<details class=\"round\"{}>\n<summary>Round {}{}{}</summary>",
        if r.final_submission { " open" } else { "" },
        r.round_number,
        r.score
            .map(|s| format!(" — score {}", text::score(s)))
            .unwrap_or_default(),
        badges
    );
    if !r.evaluated {
        h.push_str(
            "<p class=\"muted\">Not evaluated: the evaluation of this round failed or did not finish, \
             so it has no score and is not ranked.</p>\n",
        );
    }
    if r.round_started_at.is_some() || r.round_ended_at.is_some() {
        let _ = writeln!(
            h,
            "<p class=\"muted\">{} → {}</p>",
            escape(&text::opt_time(r.round_started_at.as_ref())),
            escape(&text::opt_time(r.round_ended_at.as_ref()))
        );
    }
    let metrics = r.metrics();
    if !metrics.is_empty() {
        h.push_str("<table class=\"metrics\">\n<thead><tr><th>Metric</th><th>Score</th><th>Comment</th></tr></thead>\n<tbody>\n");
        for m in metrics {
            let _ = writeln!(
                h,
                "<tr{}><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                if m.failed() { " class=\"failed\"" } else { "" },
                escape(&m.metric_name),
                escape(&super::metric_score(&m)),
                escape(&super::metric_comment(&m))
            );
        }
        h.push_str("</tbody>\n</table>\n");
    }
    if r.decision.should_continue.is_some() {
        let _ = writeln!(
            h,
            "<p><b>Judgment:</b> {}{} — {}</p>",
            escape(&text::decision(r.decision.should_continue)),
            r.decision
                .confidence_score
                .map(|c| format!(" (confidence {c:.2})"))
                .unwrap_or_default(),
            escape(r.decision.reasoning.as_deref().unwrap_or(""))
        );
    }
    let _ = writeln!(
        h,
        "<h4>Submission</h4>\n<pre class=\"submission\">{}</pre>",
        escape(&r.submission_content)
    );
    let members = super::members_of(r);
    if !members.is_empty() {
        h.push_str("<h4>Member agents</h4>\n");
        for (name, status, tokens, content) in members {
            let _ = writeln!(
                h,
                "<details class=\"member\"><summary>{} <span class=\"badge\">{}</span> <span class=\"muted\">{} tokens</span></summary>\n<pre>{}</pre></details>",
                escape(&name),
                escape(&status),
                tokens,
                escape(&content)
            );
        }
    }
    let u = &r.usage;
    let t = u.total();
    let _ = writeln!(
        h,
        "<p class=\"muted\">Usage: {} input / {} output tokens, {} requests, cost {} — agents {}, evaluation {}, judgment {} tokens</p>",
        t.input_tokens,
        t.output_tokens,
        t.requests,
        escape(&text::cost(t.cost_usd)),
        u.agent.total_tokens(),
        u.evaluation.total_tokens(),
        u.judgment.total_tokens()
    );
    if let Some(p) = &r.prompt {
        let _ = writeln!(
            h,
            "<details class=\"prompt\"><summary>Prompt</summary>\n<pre>{}</pre></details>",
            escape(p)
        );
    }
    h.push_str("</details>\n");
    h
}

/// An inline SVG line chart: x = round, y = score, one polyline with markers per team.
pub fn chart(teams: &[Series<'_>]) -> String {
    if teams.is_empty() {
        return "<p>No evaluated rounds.</p>\n".into();
    }
    let max_round = teams
        .iter()
        .flat_map(|t| t.2.iter().map(|p| p.0))
        .max()
        .unwrap_or(1)
        .max(1);
    let (mut lo, mut hi) = (0.0_f64, 100.0_f64);
    for (_, _, pts) in teams {
        for (_, s) in pts {
            lo = lo.min(*s);
            hi = hi.max(*s);
        }
    }
    let (w, hgt, left, right, top, bottom) = (760.0, 320.0, 50.0, 20.0, 15.0, 35.0);
    let pw = w - left - right;
    let ph = hgt - top - bottom;
    let x = |round: u32| {
        if max_round == 1 {
            left + pw / 2.0
        } else {
            left + pw * f64::from(round - 1) / f64::from(max_round - 1)
        }
    };
    let y = |score: f64| top + ph * (1.0 - (score - lo) / (hi - lo));
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {hgt}\" width=\"100%\" role=\"img\" aria-label=\"Score over rounds\">"
    );
    // grid and y labels
    for i in 0..=4 {
        let v = lo + (hi - lo) * f64::from(i) / 4.0;
        let yy = y(v);
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"#e5e5e5\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{v:.0}</text>",
            w - right,
            left - 6.0,
            yy + 4.0
        );
    }
    for round in 1..=max_round {
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{round}</text>",
            x(round),
            hgt - bottom + 18.0
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">round</text>",
        left + pw / 2.0,
        hgt - 2.0
    );
    for (i, (team_id, team_name, pts)) in teams.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let points: Vec<String> = pts
            .iter()
            .map(|(r, sc)| format!("{:.1},{:.1}", x(*r), y(*sc)))
            .collect();
        let _ = writeln!(
            s,
            "<g class=\"team\"><title>{} ({})</title><polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>",
            escape(team_name),
            escape(team_id),
            points.join(" ")
        );
        for (r, sc) in pts {
            let _ = writeln!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{color}\"><title>{} — round {r}: {}</title></circle>",
                x(*r),
                y(*sc),
                escape(team_name),
                text::score(*sc)
            );
        }
        s.push_str("</g>\n");
    }
    s.push_str("</svg>\n<ul class=\"legend\">\n");
    for (i, (team_id, team_name, _)) in teams.iter().enumerate() {
        let _ = writeln!(
            s,
            "<li><span style=\"color:{}\">■</span> {} <span class=\"muted\">({})</span></li>",
            PALETTE[i % PALETTE.len()],
            escape(team_name),
            escape(team_id)
        );
    }
    s.push_str("</ul>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape("<script>alert('x') && \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp;&amp; &quot;y&quot;&lt;/script&gt;"
        );
    }
}
