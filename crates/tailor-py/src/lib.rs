//! `tailor._native`: the Rust half of the Python package (`python/tailor` is the other).
//!
//! It wraps the crates the command line uses and simulates nothing itself: specs load through
//! `tailor_spec::load`, runs through `tailor_sim::simulate`, result rows through
//! `tailor_core::flat`. Strategies written in Python enter as plugins of `tailor_core::plugin`,
//! so every engine builds them by name exactly as it builds a built-in.

mod analysis;
pub mod embed;
mod fault;
mod local;
mod selector;
mod sim;
mod views;

use pyo3::prelude::*;

pyo3::create_exception!(
    tailor,
    TailorError,
    pyo3::exceptions::PyException,
    "An error Tailor reports, with the command line's message."
);

/// A Tailor error as the Python exception, with the command line's message.
fn tailor_err(e: impl std::fmt::Display) -> PyErr {
    TailorError::new_err(e.to_string())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("TailorError", m.py().get_type::<TailorError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    sim::add(m)?;
    analysis::add(m)?;
    views::add(m)?;
    selector::add(m)?;
    local::add(m)?;
    Ok(())
}
