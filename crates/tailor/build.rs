//! With `--features python`, the binary embeds CPython: point its run-time search path at the
//! interpreter's libpython (under pyenv or a venv's base it lies outside the loader's paths).

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=PYO3_PYTHON");
    if std::env::var_os("CARGO_FEATURE_PYTHON").is_none() {
        return;
    }
    let python = std::env::var("PYO3_PYTHON").unwrap_or_else(|_| "python3".into());
    let libdir = Command::new(&python)
        .args(["-c", "import sysconfig; print(sysconfig.get_config_var('LIBDIR') or '')"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    if !libdir.is_empty() {
        println!("cargo:rustc-link-arg-bins=-Wl,-rpath,{libdir}");
    }
}
