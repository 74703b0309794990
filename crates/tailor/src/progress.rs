//! Progress of long commands on stderr: a bar on a terminal, and where stderr is not one (a
//! log file, CI, `nohup`) a plain line every few seconds, so a long run is never silent.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How often a line is printed when stderr is not a terminal: every 10 s, or every
/// `TAILOR_PROGRESS_EVERY` seconds (a CI log that wants more, or fewer).
fn line_every() -> Duration {
    std::env::var("TAILOR_PROGRESS_EVERY")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.05)
        .map_or(Duration::from_secs(10), Duration::from_secs_f64)
}

/// A progress bar of `len` runs on stderr that only appears when a run lasts more than a
/// second; with stderr not a terminal, a line every 10 s instead ([`line_every`]; `quiet`:
/// nothing).
pub fn progress_bar(quiet: bool, len: u64) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    if !std::io::stderr().is_terminal() {
        let bar = ProgressBar::hidden();
        bar.set_length(len);
        bar.set_message("eta after the first requests");
        print_lines(&bar);
        return bar;
    }
    let bar = ProgressBar::with_draw_target(Some(len), indicatif::ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} runs, {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    // indicatif's own ETA said `eta 0s` while the first (or only) run went on; the message
    // follows the requests done, which runs report as they go
    bar.set_message("eta after the first requests");
    // nothing is drawn before the first tick, one second in
    bar.enable_steady_tick(Duration::from_secs(1));
    bar
}

/// Print `bar`'s state every [`line_every`] until it is finished or dropped.
fn print_lines(bar: &ProgressBar) {
    let weak = bar.downgrade();
    let started = Instant::now();
    let every = line_every();
    std::thread::spawn(move || loop {
        std::thread::sleep(every);
        let Some(bar) = weak.upgrade() else { return };
        if bar.is_finished() {
            return;
        }
        eprintln!("{}", line(started.elapsed(), bar.position(), bar.length().unwrap_or(0), &bar.message()));
    });
}

/// `[1m 20s] 12/48 runs, <message>`.
fn line(elapsed: Duration, pos: u64, len: u64, message: &str) -> String {
    let s = elapsed.as_secs();
    format!("[{}m {:02}s] {pos}/{len} runs, {message}", s / 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_says_time_runs_and_the_message() {
        assert_eq!(line(Duration::from_secs(80), 12, 48, "eta 1m 00s"), "[1m 20s] 12/48 runs, eta 1m 00s");
    }
}
