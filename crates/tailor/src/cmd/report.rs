//! `tailor report`: results files to one self-contained HTML page, optionally with PNG plots.

use anyhow::{Context, Result};
use std::path::PathBuf;

/// Arguments of `tailor report`.
#[derive(clap::Args)]
pub struct ReportArgs {
    /// Results directories (holding results.json, results-sim.json, results-live.json) or files.
    #[arg(required = true, value_name = "DIR|FILE")]
    pub inputs: Vec<PathBuf>,
    /// The HTML file to write.
    #[arg(short, long, default_value = "report.html")]
    pub out: PathBuf,
    /// Also write every plot as PNG into `plots/` beside the HTML file.
    #[arg(long)]
    pub png: bool,
    /// Page title (default: the experiment names).
    #[arg(long)]
    pub title: Option<String>,
}

/// Build the report.
pub fn run(args: ReportArgs) -> Result<()> {
    let sources = tailor_report::load(&args.inputs)?;
    let report = tailor_report::render(&sources, args.title.as_deref());
    if let Some(dir) = args.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&args.out, &report.html).with_context(|| format!("writing {}", args.out.display()))?;
    eprintln!("{} results file(s), {} plots: {}", sources.len(), report.plots.len(), args.out.display());
    if args.png {
        let dir = args.out.parent().map(|d| d.join("plots")).unwrap_or_else(|| PathBuf::from("plots"));
        let export = tailor_report::write_pngs(&report.plots, &dir)?;
        for w in &export.warnings {
            eprintln!("warning: {w}");
        }
        eprintln!("{} PNG files in {}", export.written.len(), dir.display());
    }
    Ok(())
}
