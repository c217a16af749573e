//! An arena as text (`mixseek arena`, and the "Arena" section of `mixseek show EXECUTION_ID`,
//! table and Markdown) and as the section of the HTML report: the ratings and one line saying
//! how they were obtained; the HTML report also lists each pair's games with the judges'
//! answers.

use super::Format;
use super::html::escape;
use super::text::{self, Align, Grid};
use crate::arena::{ArenaDetail, ArenaGameRow, ArenaRatingRow};
use std::fmt::Write as _;

/// A count that is usually whole (`3`), else with one decimal (`2.5`).
fn count(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// The confidence level as a percentage: `95`, `97.5`.
fn percent(confidence: f64) -> String {
    count((confidence * 1000.0).round() / 10.0)
}

fn rating(v: f64) -> String {
    format!("{v:.2}")
}

/// The table's interval column title: `95 % interval`.
fn interval_title(a: &ArenaDetail) -> String {
    format!("{} % interval", percent(a.summary.confidence))
}

/// `lower – upper`.
fn interval(r: &ArenaRatingRow) -> String {
    format!("{} – {}", rating(r.lower), rating(r.upper))
}

/// `W-L-T`.
fn record(r: &ArenaRatingRow) -> String {
    format!("{}-{}-{}", count(r.wins), count(r.losses), count(r.ties))
}

/// Whether the arena compared submissions of several executions (the team cells then name
/// the execution).
fn several_executions(a: &ArenaDetail) -> bool {
    a.summary.execution_ids.len() > 1
}

/// `Team name (team_id)`, with the execution's short id when the arena spans several.
fn team(a: &ArenaDetail, r: &ArenaRatingRow) -> String {
    if several_executions(a) {
        format!(
            "{} ({}, {})",
            r.team_name,
            r.team_id,
            text::short_id(&r.execution_id)
        )
    } else {
        format!("{} ({})", r.team_name, r.team_id)
    }
}

/// The submission a game shows in one position, named as in the ratings.
fn side(a: &ArenaDetail, execution_id: &str, team_id: &str) -> String {
    match a
        .ratings
        .iter()
        .find(|r| r.execution_id == execution_id && r.team_id == team_id)
    {
        Some(r) => team(a, r),
        None if several_executions(a) => format!("{team_id} ({})", text::short_id(execution_id)),
        None => team_id.to_string(),
    }
}

/// `N pairs, M games judged by J (K unparseable, D pairs disagreed with positions swapped);
/// ratings: Bradley–Terry, bootstrap R rounds`.
pub(super) fn summary_line(a: &ArenaDetail) -> String {
    let s = &a.summary;
    let judges = if s.judge_models.is_empty() {
        "—".to_string()
    } else {
        s.judge_models.join(", ")
    };
    format!(
        "{} pairs, {} games judged by {judges} ({} unparseable, {} pairs disagreed with positions \
         swapped); ratings: Bradley–Terry{}, bootstrap {} rounds",
        s.pairs,
        s.games,
        s.games.saturating_sub(s.parsed_games),
        s.disagreeing_pairs,
        if s.regularized { " (regularized)" } else { "" },
        s.bootstrap_rounds
    )
}

fn title(a: &ArenaDetail) -> String {
    format!(
        "Arena {} — {}",
        a.summary.arena_id,
        text::time(&a.summary.created_at)
    )
}

/// The arena in a table or Markdown (a `## Arena` section; empty for the other formats).
pub(super) fn text_section(a: &ArenaDetail, fmt: Format) -> String {
    let interval_title = interval_title(a);
    let mut g = Grid::new(&[
        ("Rank", Align::Right),
        ("Team", Align::Left),
        ("Rating", Align::Right),
        (interval_title.as_str(), Align::Right),
        ("W-L-T", Align::Right),
        ("Games", Align::Right),
    ]);
    for r in &a.ratings {
        g.push(vec![
            r.rank.to_string(),
            team(a, r),
            rating(r.rating),
            interval(r),
            record(r),
            count(r.games),
        ]);
    }
    let md = fmt == Format::Markdown;
    let table = match (a.ratings.is_empty(), md) {
        (true, _) => "No ratings.\n".to_string(),
        (false, true) => g.to_markdown(),
        (false, false) => format!("{}\n", g.to_table()),
    };
    match fmt {
        Format::Markdown => format!(
            "## Arena\n\n{}\n\n{table}\n{}\n",
            text::md_inline(&title(a)),
            text::md_inline(&summary_line(a))
        ),
        Format::Table => format!("{}\n{table}{}\n", title(a), summary_line(a)),
        Format::Json | Format::Csv => String::new(),
    }
}

/// A game's verdict cell: the label, or why there is none (the judge answered without a
/// readable verdict, or the call failed).
fn verdict(g: &ArenaGameRow) -> String {
    match (&g.verdict, &g.raw_output) {
        (Some(v), _) => v.clone(),
        (None, Some(_)) => "unparseable".into(),
        (None, None) => "failed".into(),
    }
}

/// The section of the HTML report: the ratings, the summary line and each pair's games
/// (collapsed), every text escaped.
pub(super) fn html_section(a: &ArenaDetail) -> String {
    let mut h = String::new();
    let s = &a.summary;
    let _ = writeln!(
        h,
        "<h2>Arena</h2>\n<p class=\"muted\">Arena <code>{}</code> — {}</p>",
        escape(&s.arena_id),
        escape(&text::time(&s.created_at))
    );
    if a.ratings.is_empty() {
        h.push_str("<p>No ratings.</p>\n");
    } else {
        let _ = writeln!(
            h,
            "<table class=\"arena\">\n<thead><tr><th>Rank</th><th>Team</th><th>Rating</th><th>{}</th>\
             <th>W-L-T</th><th>Games</th></tr></thead>\n<tbody>",
            escape(&interval_title(a))
        );
        for r in &a.ratings {
            let _ = writeln!(
                h,
                "<tr{}><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                if r.rank == 1 { " class=\"top\"" } else { "" },
                r.rank,
                escape(&team(a, r)),
                escape(&rating(r.rating)),
                escape(&interval(r)),
                escape(&record(r)),
                escape(&count(r.games)),
            );
        }
        h.push_str("</tbody>\n</table>\n");
    }
    let _ = writeln!(h, "<p>{}</p>", escape(&summary_line(a)));
    let usage = format!(
        "Judges' usage: {} input / {} output tokens, cost {}",
        s.input_tokens,
        s.output_tokens,
        s.cost_usd.map_or_else(|| "unpriced".into(), text::cost)
    );
    let _ = writeln!(h, "<p class=\"muted\">{}</p>", escape(&usage));
    // the games, pair by pair (they are sorted by pair, game and judge)
    let mut i = 0;
    while i < a.games.len() {
        let pair = a.games[i].pair_index;
        let end = a.games[i..]
            .iter()
            .position(|g| g.pair_index != pair)
            .map_or(a.games.len(), |n| i + n);
        h.push_str(&pair_section(a, &a.games[i..end]));
        i = end;
    }
    h
}

/// One pair: its games (both orders, every judge) with their verdicts and the judges' answers.
fn pair_section(a: &ArenaDetail, games: &[ArenaGameRow]) -> String {
    let mut h = String::new();
    let Some(first) = games.first() else {
        return h;
    };
    let mut agreements: Vec<&str> = Vec::new();
    for g in games {
        if !agreements.contains(&g.agreement.as_str()) {
            agreements.push(&g.agreement);
        }
    }
    let badges: String = agreements
        .iter()
        .map(|w| format!("<span class=\"badge\">{}</span>", escape(w)))
        .collect();
    let _ = writeln!(
        h,
        "<details class=\"pair\">\n<summary>Pair {}: {} vs {}{badges}</summary>",
        first.pair_index,
        escape(&side(a, &first.a_execution_id, &first.a_team_id)),
        escape(&side(a, &first.b_execution_id, &first.b_team_id)),
    );
    h.push_str(
        "<table class=\"games\">\n<thead><tr><th>Game</th><th>Judge</th><th>A</th><th>B</th>\
         <th>Verdict</th></tr></thead>\n<tbody>\n",
    );
    for g in games {
        let _ = writeln!(
            h,
            "<tr{}><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            if g.verdict.is_none() {
                " class=\"failed\""
            } else {
                ""
            },
            g.game,
            escape(&g.judge),
            escape(&side(a, &g.a_execution_id, &g.a_team_id)),
            escape(&side(a, &g.b_execution_id, &g.b_team_id)),
            escape(&verdict(g)),
        );
    }
    h.push_str("</tbody>\n</table>\n");
    for g in games {
        let label = format!("Game {} — {}", g.game, g.judge);
        if let Some(e) = &g.error {
            let _ = writeln!(h, "<p><b>{}:</b> {}</p>", escape(&label), escape(e));
        }
        if let Some(out) = &g.raw_output {
            let _ = writeln!(
                h,
                "<h4>{}</h4>\n<pre class=\"judge\">{}</pre>",
                escape(&label),
                escape(out)
            );
        }
    }
    h.push_str("</details>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_percentages_read_naturally() {
        assert_eq!(count(3.0), "3");
        assert_eq!(count(2.5), "2.5");
        assert_eq!(percent(0.95), "95");
        assert_eq!(percent(0.975), "97.5");
    }
}
