//! Tailor's report: one or more results files (simulated and measured) to a single
//! self-contained HTML page — the experiment spec, a comparison table and SVG plots — and, on
//! request, a PNG of every plot.
//!
//! The SVG is written by hand (`svg`, `scale`, `chart`, `plots/*`) so the page needs no
//! script and no external asset; `png` rasterises the same SVG with resvg.

pub mod chart;
pub mod compare;
pub mod data;
pub mod error;
pub mod escape;
pub mod failover;
pub mod html;
pub mod input;
pub mod palette;
pub mod parquet;
pub mod plots;
pub mod png;
pub mod scale;
pub mod svg;
pub mod table;
pub mod validity;

pub use error::ReportError;
pub use input::{load, Source};
pub use plots::Plot;
pub use png::{write_pngs, PngExport};

use crate::data::{Strategy, View};
use crate::escape::slug;
use crate::plots::{Ctx, Section, Styles};

/// A rendered report: the page and every figure in it (for PNG export).
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The HTML page.
    pub html: String,
    /// Every figure on the page, in page order; names are unique.
    pub plots: Vec<Plot>,
}

/// Render the page for `sources`; `title` defaults to the experiment names.
///
/// Each results file gets its own part (spec, table, figures). Every `sim` file is overlaid with
/// each `live` file of the same experiment; when names differ but there is exactly one of each,
/// those two are overlaid. A strategy keeps one colour across the files of one experiment.
pub fn render(sources: &[Source], title: Option<&str>) -> Report {
    let views: Vec<View> = sources.iter().map(|s| View::new(&s.results)).collect();
    // one palette per experiment: a strategy keeps its colour between the simulated and measured
    // files of an experiment, and each experiment uses the fewest colours it can
    let mut palettes: Vec<(String, Styles)> = Vec::new();
    for (source, _) in sources.iter().zip(&views) {
        let name = &source.results.experiment;
        if palettes.iter().any(|(n, _)| n == name) {
            continue;
        }
        let mut all: Vec<Strategy> = Vec::new();
        for (other, v) in sources.iter().zip(&views) {
            if &other.results.experiment == name {
                for s in &v.strategies {
                    if !all.contains(s) {
                        all.push(s.clone());
                    }
                }
            }
        }
        palettes.push((name.clone(), Styles::new(&all)));
    }
    let fallback = Styles::new(&[]);
    let styles_of = |i: usize| -> &Styles {
        palettes.iter().find(|(n, _)| *n == sources[i].results.experiment).map(|(_, s)| s).unwrap_or(&fallback)
    };
    let ids = unique_ids(sources);
    let mut parts = Vec::new();
    for (i, ((source, view), id)) in sources.iter().zip(&views).zip(&ids).enumerate() {
        let ctx = Ctx { id: id.clone(), view, styles: styles_of(i) };
        let r = &source.results;
        let seeds: std::collections::BTreeSet<u64> = r.runs.iter().map(|x| x.seed).collect();
        let meta = format!(
            "{} · engine {} · tailor {} · {} runs ({} points × {} strategies × {} seeds)",
            source.path.display(),
            r.engine,
            r.tailor_version,
            r.runs.len(),
            view.points.len(),
            view.strategies.len(),
            seeds.len()
        );
        let sections: Vec<Section> = vec![
            plots::cdf::section(&ctx),
            plots::percentiles::section(&ctx),
            plots::stretch::section(&ctx),
            plots::heatmap::section(&ctx),
            plots::sbl::section(&ctx, r.engine == "live"),
            plots::bound::section(&ctx),
        ];
        let mut sections = sections;
        if r.engine == "live" {
            sections.push(plots::timeseries::section(&ctx, &source.timeseries));
        }
        sections.extend(plots::failover::section(&ctx));
        let invalidity = validity::Invalidity::of(&r.runs);
        if let Some(inv) = &invalidity {
            // the file's figures pool or compare its runs: each may draw an invalid one
            let text = validity::mark(inv.runs.len(), inv.live);
            sections.iter_mut().for_each(|s| s.mark(&text));
        }
        parts.push(html::Part {
            id: id.clone(),
            title: format!("{} ({})", r.experiment, engine_name(&r.engine)),
            meta,
            spec: r.spec.clone(),
            invalidity,
            table: table::render(view) + &failover::html(&r.runs),
            sections,
        });
    }
    let mut extra = Vec::new();
    for (a, b) in overlay_pairs(sources) {
        let id = format!("{}-vs-{}", ids[a], ids[b]);
        let heading = format!(
            "{}: simulated vs measured",
            if sources[a].results.experiment == sources[b].results.experiment {
                sources[a].results.experiment.clone()
            } else {
                format!("{} / {}", sources[a].results.experiment, sources[b].results.experiment)
            }
        );
        let mut section = plots::overlay::section(&id, &views[a], &views[b], styles_of(a));
        section.invalidity = validity::Invalidity::of(&sources[b].results.runs);
        section.warnings.extend(spec_mismatch(&sources[a], &sources[b]));
        extra.push((heading, section));
    }
    let mut names: Vec<String> = sources.iter().map(|s| s.results.experiment.clone()).collect();
    names.dedup();
    let title = title.map(str::to_string).unwrap_or_else(|| format!("Tailor report: {}", names.join(", ")));
    let subtitle = format!(
        "{} results file{}: {}",
        sources.len(),
        if sources.len() == 1 { "" } else { "s" },
        sources.iter().map(|s| s.path.display().to_string()).collect::<Vec<_>>().join(", ")
    );
    let html = html::page(&title, &subtitle, &parts, &extra);
    let plots = parts
        .iter()
        .flat_map(|p| p.sections.iter())
        .chain(extra.iter().map(|(_, s)| s))
        .flat_map(|s| s.plots.iter().cloned())
        .collect();
    Report { html, plots }
}

fn engine_name(engine: &str) -> &str {
    match engine {
        "sim" => "simulated",
        "live" => "measured",
        other => other,
    }
}

/// Page-unique ids per source: `<experiment>-<engine>`, numbered when repeated.
fn unique_ids(sources: &[Source]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for s in sources {
        let base = slug(&format!("{}-{}", s.results.experiment, s.results.engine));
        let mut id = base.clone();
        let mut n = 2;
        while ids.contains(&id) {
            id = format!("{base}-{n}");
            n += 1;
        }
        ids.push(id);
    }
    ids
}

/// A banner when an overlaid pair was not run from one spec (e.g. a europar simulation beside a
/// heron bench): its lines then compare different workloads, not the simulator with the store.
fn spec_mismatch(sim: &Source, live: &Source) -> Option<String> {
    let (a, b) = (&sim.results, &live.results);
    if a.experiment == b.experiment && a.spec == b.spec {
        return None;
    }
    Some(format!(
        "different specs overlaid: {} ({}) and {} ({}) were not run from the same spec, so their lines may compare \
         different workloads, not only the simulator with the store",
        a.experiment,
        sim.path.display(),
        b.experiment,
        live.path.display()
    ))
}

/// (sim, live) index pairs to overlay.
fn overlay_pairs(sources: &[Source]) -> Vec<(usize, usize)> {
    let sims: Vec<usize> = (0..sources.len()).filter(|&i| sources[i].results.engine == "sim").collect();
    let lives: Vec<usize> = (0..sources.len()).filter(|&i| sources[i].results.engine == "live").collect();
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for &s in &sims {
        for &l in &lives {
            if sources[s].results.experiment == sources[l].results.experiment {
                pairs.push((s, l));
            }
        }
    }
    if pairs.is_empty() && sims.len() == 1 && lives.len() == 1 {
        pairs.push((sims[0], lives[0]));
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::tests::results;
    use crate::svg::balanced;
    use std::path::PathBuf;

    fn source(engine: &str) -> Source {
        Source {
            path: PathBuf::from(format!("/tmp/x/results-{engine}.json")),
            results: results(engine),
            timeseries: Vec::new(),
        }
    }

    #[test]
    fn page_is_self_contained_and_balanced() {
        let report = render(&[source("sim")], None);
        balanced(&report.html).unwrap();
        assert!(report.html.contains("<title>Tailor report: synthetic</title>"));
        assert!(report.html.contains("<details><summary>Experiment spec</summary>"));
        assert!(!report.html.contains("<script"));
        assert!(!report.html.contains("src=\"http") && !report.html.contains("href=\"http"));
        // 2 latency + 4 percentile + 2 stretch + 4 heatmaps + 1 bars
        assert_eq!(report.plots.len(), 13);
        let mut names: Vec<&str> = report.plots.iter().map(|p| p.name.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 13, "plot names are unique");
        assert!(report.html.contains("No run carries a lower bound"));
    }

    #[test]
    fn sim_and_live_are_overlaid() {
        let report = render(&[source("sim"), source("live")], Some("Both <engines>"));
        balanced(&report.html).unwrap();
        assert!(report.html.contains("<h1>Both &lt;engines&gt;</h1>"));
        assert!(report.html.contains("synthetic: simulated vs measured"));
        assert!(report.plots.iter().any(|p| p.name == "synthetic-sim-vs-synthetic-live-sim-vs-live-interval-ms-100"));
        assert_eq!(report.plots.len(), 13 * 2 + 4);
        assert!(!report.html.contains("live run invalid"));
        assert!(!report.html.contains("different specs overlaid"));
    }

    /// `tailor cassandra experiment`'s directory: the live `results.json` and the simulator's
    /// `results-sim.json` of the same spec, runs named by policy (`driver-default` is simulated
    /// as `random` but carries the live name), both loaded from the directory and overlaid.
    #[test]
    fn a_cassandra_experiment_is_overlaid_with_its_simulator_twin() {
        let dir = std::env::temp_dir().join(format!("tailor-report-cassandra-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spec = "name = \"live-cassandra\"\n[cluster]\nservers = 3\n\n[[cluster.slow_servers]]\nserver = 2\n";
        for (engine, stem, scale) in [("live", "results", 1.0), ("sim", "results-sim", 0.8)] {
            let runs = ["driver-default", "c3"].map(|p| data::tests::run(p, "cassandra", &[], 1, scale)).to_vec();
            let mut r = results(engine);
            (r.experiment, r.spec, r.runs) = ("live-cassandra".into(), spec.into(), runs);
            std::fs::write(dir.join(format!("{stem}.json")), serde_json::to_string(&r).unwrap()).unwrap();
        }
        let sources = load(std::slice::from_ref(&dir)).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(overlay_pairs(&sources).len(), 1);
        let report = render(&sources, None);
        assert!(report.html.contains("live-cassandra: simulated vs measured"));
        assert!(!report.html.contains("different specs overlaid"));
        assert!(!report.html.contains("share no strategy"));
    }

    #[test]
    fn overlaying_different_specs_raises_a_banner() {
        let mut live = source("live");
        live.results.experiment = "heron".into();
        live.results.spec = "name = \"heron\"\n".into();
        let report = render(&[source("sim"), live], None);
        assert!(report.html.contains("synthetic / heron: simulated vs measured"));
        assert_eq!(report.html.matches("different specs overlaid: synthetic").count(), 1);
    }

    #[test]
    fn an_invalid_live_run_gets_a_banner_in_its_part_and_in_the_overlay() {
        let mut live = source("live");
        let run = &mut live.results.runs[1];
        run.valid = Some(false);
        run.invalid_reasons = vec!["load generator 1.9 s behind schedule (send lag p99 1900.0 ms > 5 ms)".into()];
        let report = render(&[source("sim"), live], None);
        balanced(&report.html).unwrap();
        let banner = "<p class=\"invalid\">live run invalid: load generator 1.9 s behind schedule \
                      (send lag p99 1900.0 ms &gt; 5 ms) (c3 + fcfs, interval_ms=100, seed 2)</p>";
        assert_eq!(report.html.matches(banner).count(), 2, "in the live part and in the overlay");
        let overlay = report.html.find("synthetic: simulated vs measured</h2>").unwrap();
        assert!(report.html[overlay..].contains(banner));
    }

    #[test]
    fn repeated_sources_get_distinct_ids_and_empty_results_do_not_panic() {
        let mut empty = source("sim");
        empty.results.runs.clear();
        let report = render(&[source("sim"), source("sim"), empty], None);
        balanced(&report.html).unwrap();
        assert!(report.html.contains("id=\"synthetic-sim-2\""));
        assert!(report.html.contains("No runs in this results file."));
    }
}
