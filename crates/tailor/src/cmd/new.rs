//! `tailor new selector NAME` / `tailor new local NAME`: a new strategy from the template
//! (`tailor-core/src/{selector,local}/template.rs`, compiled and tested with the crate), renamed,
//! written into the source tree and registered with one line, then the commands to try it.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// Arguments of `tailor new`.
#[derive(clap::Args)]
pub struct NewArgs {
    /// What to create.
    #[arg(value_enum)]
    kind: Kind,
    /// Its name in specs and reports: lower-case letters, digits and `-`, starting with a letter.
    name: String,
    /// The Tailor source tree to write into (default: the one around the current directory).
    #[arg(long)]
    root: Option<PathBuf>,
}

/// A kind of strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Kind {
    /// A replica selector (the coordinator's choice of replica).
    Selector,
    /// A local queue policy (a replica's order of waiting requests).
    Local,
}

impl Kind {
    fn dir(self) -> &'static str {
        match self {
            Kind::Selector => "selector",
            Kind::Local => "local",
        }
    }

    fn template(self) -> &'static str {
        match self {
            Kind::Selector => include_str!("../../../tailor-core/src/selector/template.rs"),
            Kind::Local => include_str!("../../../tailor-core/src/local/template.rs"),
        }
    }

    fn taken(self, name: &str) -> bool {
        match self {
            Kind::Selector => tailor_core::selector::SELECTORS.contains(&name),
            Kind::Local => tailor_core::local::LOCALS.contains(&name),
        }
    }
}

/// Create the strategy and print what to do next.
pub fn run(args: NewArgs) -> Result<()> {
    let root = match args.root {
        Some(r) => r,
        None => find_root(&std::env::current_dir()?)?,
    };
    let created = create(&root, args.kind, &args.name)?;
    let (name, module) = (&args.name, created.module);
    println!(
        "wrote {} ({} lines: a compiling {} with a unit test)",
        created.file.display(),
        created.lines,
        args.kind.dir()
    );
    println!("registered it in {} (one line: `{module}`)", created.registry.display());
    println!("\nnext, from {}:", root.display());
    println!("  cargo test --profile quick -p tailor-core {module}      # its unit test");
    let run = match args.kind {
        Kind::Selector => format!("--set compare.selectors=c3,{name}"),
        Kind::Local => format!("--set compare.locals=fcfs,{name}"),
    };
    println!("  cargo run --profile quick -- sim c3 {run} --set workload.requests=200000 --set seeds=[1]");
    println!("  (the first quick build takes minutes; the one after this, about a minute; after an edit of {module}.rs, seconds: docs/write-a-strategy.md)");
    Ok(())
}

/// What [`create`] wrote.
#[derive(Debug)]
struct Created {
    /// The strategy's file.
    pub file: PathBuf,
    /// Its lines.
    pub lines: usize,
    /// The file that registers it.
    pub registry: PathBuf,
    /// Its module name.
    pub module: String,
}

/// Write strategy `name` of `kind` from the template under `root` and register it.
fn create(root: &Path, kind: Kind, name: &str) -> Result<Created> {
    check_name(name)?;
    if kind.taken(name) {
        bail!("a {} called `{name}` exists already", kind.dir());
    }
    let module = name.replace('-', "_");
    let dir = root.join("crates/tailor-core/src").join(kind.dir());
    let registry = dir.join("mod.rs");
    let file = dir.join(format!("{module}.rs"));
    if file.exists() {
        bail!("{} exists already: pick another name or remove it", file.display());
    }
    let mod_rs = std::fs::read_to_string(&registry)
        .with_context(|| format!("reading {} (is --root a Tailor source tree?)", registry.display()))?;
    let registered = register(&mod_rs, &module).with_context(|| format!("registering in {}", registry.display()))?;
    let text = renamed(kind.template(), name, &module);
    std::fs::write(&file, &text).with_context(|| format!("writing {}", file.display()))?;
    std::fs::write(&registry, registered).with_context(|| format!("writing {}", registry.display()))?;
    Ok(Created { file, lines: text.lines().count(), registry, module })
}

/// Refuse a name that is not a plain strategy name.
fn check_name(name: &str) -> Result<()> {
    let ok = name.len() <= 40
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.ends_with('-')
        && !matches!(name, "template" | "registry" | "mod");
    if !ok {
        bail!("`{name}` is not a strategy name: lower-case letters, digits and `-`, starting with a letter (at most 40), not `template`");
    }
    Ok(())
}

/// The template as strategy `name` (module `module`): its type, its name and its header.
fn renamed(template: &str, name: &str, module: &str) -> String {
    let ty: String = module
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next().map_or(String::new(), |f| f.to_ascii_uppercase().to_string() + c.as_str())
        })
        .collect();
    // the template's first paragraph says what the template is: the new file says what it will be
    let body = template.split_once("\n//!\n").map_or(template, |(_, rest)| rest);
    let header = format!(
        "//! `{name}`: TODO say what it does and where its rule is published (it starts as a copy of\n//! `template.rs`: {}).\n//!\n",
        first_sentence(template)
    );
    (header + body)
        .replace("Template", &ty)
        .replace("\"template\"", &format!("\"{name}\""))
        .replace("`template`", &format!("`{name}`"))
        .replace(" (a template)", "")
}

/// What the template's rule is, from its header's second sentence.
fn first_sentence(template: &str) -> String {
    let header: String = template
        .lines()
        .take_while(|l| l.starts_with("//!") && *l != "//!")
        .map(|l| l[3..].trim())
        .collect::<Vec<_>>()
        .join(" ");
    header.split(". ").nth(1).unwrap_or("").trim_end_matches('.').to_string()
}

/// `mod_rs` with `module` added at the end of its `register!(...)` list.
fn register(mod_rs: &str, module: &str) -> Result<String> {
    let start = mod_rs.find("\nregister!(").context("no `register!(` list")?;
    let end = start + mod_rs[start..].find(");").context("the `register!(` list does not end")?;
    let list = &mod_rs[start..end];
    if list.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|w| w == module) {
        bail!("`{module}` is registered already");
    }
    let line = if list.ends_with(",\n") { format!("    {module},\n") } else { format!(", {module}") };
    Ok(format!("{}{line}{}", &mod_rs[..end], &mod_rs[end..]))
}

/// The source tree around `from`: the nearest directory holding `crates/tailor-core`.
fn find_root(from: &Path) -> Result<PathBuf> {
    from.ancestors()
        .find(|d| d.join("crates/tailor-core/src/selector/mod.rs").is_file())
        .map(Path::to_path_buf)
        .context("not inside a Tailor source tree (clone it, or give --root)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_and_the_template_renamed() {
        assert!(check_name("lew").is_ok() && check_name("least-wait-2").is_ok());
        for bad in ["", "Lew", "2x", "a_b", "x-", "template", &"a".repeat(41)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        let text = renamed(Kind::Selector.template(), "least-wait", "least_wait");
        assert!(text.starts_with("//! `least-wait`: TODO"), "{}", &text[..200]);
        assert!(text.contains("pub struct LeastWait") && text.contains("name: \"least-wait\""));
        assert!(!text.contains("Template") && !text.contains("\"template\""));
        let local = renamed(Kind::Local.template(), "edf", "edf");
        assert!(local.contains("pub struct Edf<T>") && local.contains("name: \"edf\""));
    }

    #[test]
    fn registration_is_one_line_in_either_list_style() {
        let multi = "x\nregister!(\n    random,\n    c3,\n);\nrest";
        assert_eq!(register(multi, "lew").unwrap(), "x\nregister!(\n    random,\n    c3,\n    lew,\n);\nrest");
        let single = "x\nregister!(fcfs, sjf);\n";
        assert_eq!(register(single, "edf").unwrap(), "x\nregister!(fcfs, sjf, edf);\n");
        assert!(register(single, "sjf").is_err());
    }
}
