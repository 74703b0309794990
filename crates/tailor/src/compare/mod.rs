//! `tailor compare`'s parts, one job per file: the setup from the arguments, the pairs and why
//! some cannot run, the runs, the statistics and ranking, the recommendation, the files and the
//! page.

pub mod execute;
pub mod output;
pub mod page;
pub mod pairs;
pub mod rank;
pub mod recommend;
pub mod setup;
pub mod stats;
