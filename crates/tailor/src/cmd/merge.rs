//! `tailor merge`: the shard files of `tailor sim --shard I/N` back into one `results.json`
//! and `results.csv`, the same bytes and table an unsharded `tailor sim` gives.

use anyhow::{bail, Context, Result};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tailor_spec::shard::ShardResults;

/// Arguments of `tailor merge`.
#[derive(clap::Args)]
pub struct MergeArgs {
    /// Shard files (`results.shard-I-of-N.json`) or directories holding them.
    #[arg(required = true, value_name = "DIR|FILE")]
    inputs: Vec<PathBuf>,
    /// Directory for results.json, results.csv and results.parquet (default: the first input's directory).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Merge the shards, print the table and write the results.
pub fn run(args: MergeArgs) -> Result<()> {
    let files = shard_files(&args.inputs)?;
    let shards = files.iter().map(|f| read_shard(f)).collect::<Result<Vec<_>>>()?;
    let results = tailor_spec::shard::merge(shards)?;
    print!("{}", crate::table::render(&results.runs));
    // not validated again: it ran, and a strategy registered elsewhere (Python) would not be known here
    let spec: tailor_spec::Spec = toml::from_str(&results.spec).context("the shards' `spec`")?;
    if let Some(why) = tailor_sim::measured_nothing(&spec, &results) {
        bail!(why);
    }
    let out = args.out.unwrap_or_else(|| default_out(&args.inputs[0]));
    super::sim::write_results(&out, &results)?;
    eprintln!(
        "{} shard file(s), {} runs merged; results in {}",
        files.len(),
        results.runs.len(),
        out.join("results.json").display()
    );
    Ok(())
}

/// The shard files among `inputs`, a directory standing for the shard files in it; a file
/// named twice (itself and through its directory) counts once.
fn shard_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut seen = BTreeSet::new();
    let mut files = Vec::new();
    for input in inputs {
        let found = if input.is_dir() { shards_in(input)? } else { vec![input.clone()] };
        for file in found {
            let same = file.canonicalize().with_context(|| format!("reading {}", file.display()))?;
            if seen.insert(same) {
                files.push(file);
            }
        }
    }
    Ok(files)
}

/// The `results.shard-*-of-*.json` files in `dir`, sorted by name.
fn shards_in(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name.starts_with("results.shard-") && name.ends_with(".json") {
            files.push(path);
        }
    }
    if files.is_empty() {
        bail!("no results.shard-I-of-N.json in {} (written by `tailor sim --shard I/N`)", dir.display());
    }
    files.sort();
    Ok(files)
}

/// One shard file, with its path as the name merge errors give it.
fn read_shard(path: &Path) -> Result<(String, ShardResults)> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {name}"))?;
    let shard = serde_json::from_str(&text)
        .with_context(|| format!("{name} is not a shard file of `tailor sim --shard I/N`"))?;
    Ok((name, shard))
}

/// Where the merged results go by default: beside the shards.
fn default_out(first_input: &Path) -> PathBuf {
    if first_input.is_dir() {
        return first_input.to_path_buf();
    }
    first_input.parent().map(Path::to_path_buf).unwrap_or_default()
}
