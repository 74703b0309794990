//! The Cassandra jars: `cassandra-all` and its dependencies, fetched once through Maven into a
//! cache directory and reused by every later `tailor cassandra up`.
//!
//! Cassandra's binary tarball is not in a package registry, but its server jar and every jar it
//! needs are in Maven's central repository, so a one-dependency pom and
//! `mvn dependency:copy-dependencies` give a complete class path (about 100 jars, 64 MB).

use super::LaunchError;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The Cassandra version `tailor cassandra up` runs unless told otherwise.
pub const DEFAULT_VERSION: &str = "5.0.2";

/// Where jars are cached: `$TAILOR_CASSANDRA_CACHE`, else `$XDG_CACHE_HOME/tailor/cassandra`,
/// else `~/.cache/tailor/cassandra`.
pub fn default_cache() -> PathBuf {
    if let Some(dir) = std::env::var_os("TAILOR_CASSANDRA_CACHE") {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into())).join(".cache"));
    base.join("tailor").join("cassandra")
}

/// The directory holding every jar of `version` (`cache/<version>/lib`), fetched with Maven if it
/// is not complete yet. A fetch goes to a temporary directory renamed at the end, so an
/// interrupted fetch never leaves a partial class path behind.
pub fn ensure(cache: &Path, version: &str) -> Result<PathBuf, LaunchError> {
    check_version(version)?;
    let root = cache.join(version);
    let lib = root.join("lib");
    if has_server_jar(&lib, version) {
        return Ok(lib);
    }
    require_tool("mvn", "-v", "Maven (the `mvn` command) is needed once to fetch Cassandra's jars")?;
    std::fs::create_dir_all(&root).map_err(LaunchError::io(format!("create {}", root.display())))?;
    let pom = root.join("pom.xml");
    std::fs::write(&pom, pom_xml(version)).map_err(LaunchError::io(format!("write {}", pom.display())))?;
    let partial = root.join("lib.partial");
    let _ = std::fs::remove_dir_all(&partial);
    eprintln!("fetching Cassandra {version} and its dependencies with Maven into {}", lib.display());
    let status = Command::new("mvn")
        .args(["-q", "-B", "-Dstyle.color=never", "-f"])
        .arg(&pom)
        .arg("dependency:copy-dependencies")
        .arg(format!("-DoutputDirectory={}", partial.display()))
        .status()
        .map_err(LaunchError::io("run mvn".to_string()))?;
    if !status.success() || !has_server_jar(&partial, version) {
        return Err(LaunchError::Fetch(format!(
            "`mvn dependency:copy-dependencies` for org.apache.cassandra:cassandra-all:{version} failed ({status}); \
             is that version published, and can Maven reach its repository?"
        )));
    }
    let _ = std::fs::remove_dir_all(&lib);
    std::fs::rename(&partial, &lib).map_err(LaunchError::io(format!("move jars into {}", lib.display())))?;
    Ok(lib)
}

/// A version is digits and dots only: it lands in a pom and in paths.
fn check_version(version: &str) -> Result<(), LaunchError> {
    let ok = !version.is_empty() && version.len() <= 16 && version.chars().all(|c| c.is_ascii_digit() || c == '.');
    if ok {
        Ok(())
    } else {
        Err(LaunchError::Invalid(format!("--version `{version}` is not a Cassandra version such as 5.0.2")))
    }
}

fn has_server_jar(lib: &Path, version: &str) -> bool {
    lib.join(format!("cassandra-all-{version}.jar")).is_file()
}

/// Fail with `why` when `tool` cannot be run.
pub(crate) fn require_tool(tool: &str, arg: &str, why: &str) -> Result<(), LaunchError> {
    match Command::new(tool).arg(arg).output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(LaunchError::MissingTool(format!("{why}, but `{tool} {arg}` failed ({})", out.status))),
        Err(e) => Err(LaunchError::MissingTool(format!("{why}, but `{tool}` cannot be run: {e}"))),
    }
}

/// A pom whose only dependency is the Cassandra server.
fn pom_xml(version: &str) -> String {
    format!(
        r#"<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>tailor</groupId>
  <artifactId>cassandra-classpath</artifactId>
  <version>1</version>
  <dependencies>
    <dependency>
      <groupId>org.apache.cassandra</groupId>
      <artifactId>cassandra-all</artifactId>
      <version>{version}</version>
    </dependency>
  </dependencies>
</project>
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_checked_before_reaching_a_pom() {
        assert!(check_version("5.0.2").is_ok());
        for bad in ["", "5.0.2</version>", "../x", "12345678901234567"] {
            assert!(matches!(check_version(bad), Err(LaunchError::Invalid(_))), "{bad}");
        }
    }

    #[test]
    fn the_pom_names_the_server_artifact() {
        let pom = pom_xml("4.1.7");
        assert!(pom.contains("<artifactId>cassandra-all</artifactId>"));
        assert!(pom.contains("<version>4.1.7</version>"));
    }
}
