//! `dotted.path=value` overrides on a spec's TOML table.

use crate::SpecError;
use toml::{Table, Value};

/// Set `path` (e.g. `workload.requests`) to `raw` in `table`.
///
/// `raw` is read as a TOML value when it parses (`3`, `0.9`, `true`, `[1, 2]`, `"x"`), else as a
/// bare string. Where the current value is a list, a comma-separated `raw` becomes a list
/// (`compare.selectors=c3,lor`); where it is a float, integers are widened. Paths under `sweep.`
/// name a swept parameter, itself a dotted path (`sweep.workload.load=0.5,0.9`). Unknown fields
/// are caught when the table is deserialised back into a spec.
pub fn apply_override(table: &mut Table, path: &str, raw: &str) -> Result<(), SpecError> {
    if path.is_empty() || path.split('.').any(str::is_empty) {
        return Err(SpecError::BadOverride(format!("{path}={raw}")));
    }
    if let Some(swept) = path.strip_prefix("sweep.") {
        let sweep = table.entry("sweep").or_insert_with(|| Value::Table(Table::new()));
        let Value::Table(sweep) = sweep else { unreachable!("sweep is always a table") };
        sweep.insert(swept.to_string(), Value::Array(parse_list(raw)));
        return Ok(());
    }
    let mut parts: Vec<&str> = path.split('.').collect();
    let last = parts.pop().expect("path is not empty");
    let mut cursor = table;
    let mut walked = String::new();
    for part in parts {
        walked = if walked.is_empty() { part.to_string() } else { format!("{walked}.{part}") };
        let next = cursor.entry(part).or_insert_with(|| Value::Table(Table::new()));
        cursor = match next {
            Value::Table(t) => t,
            _ => {
                return Err(SpecError::Invalid { field: path.into(), reason: format!("`{walked}` is not a section") });
            }
        };
    }
    let value = match cursor.get(last) {
        Some(Value::Array(_)) => Value::Array(parse_list(raw)),
        Some(Value::Float(_)) => match parse_value(raw) {
            Value::Integer(i) => Value::Float(i as f64),
            v => v,
        },
        _ => parse_value(raw),
    };
    cursor.insert(last.to_string(), value);
    Ok(())
}

/// A TOML literal, or the raw text as a string.
pub(crate) fn parse_value(raw: &str) -> Value {
    toml::from_str::<Table>(&format!("v = {raw}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| Value::String(raw.to_string()))
}

/// A TOML array literal, or comma-separated values.
fn parse_list(raw: &str) -> Vec<Value> {
    match parse_value(raw) {
        Value::Array(items) => items,
        _ => raw.split(',').map(|s| parse_value(s.trim())).collect(),
    }
}

#[cfg(test)]
mod tests {
    use crate::{Spec, SpecError};

    #[test]
    fn sets_numbers_lists_and_strings() {
        let spec = Spec::default()
            .with_overrides(&[
                "workload.requests=5000",
                "compare.selectors=c3,lor",
                "workload.load=1",
                "cluster.service.model=size",
                "sweep.workload.load=0.5,0.9",
            ])
            .unwrap();
        assert_eq!(spec.workload.requests, 5000);
        assert_eq!(spec.compare.selectors, ["c3", "lor"]);
        assert_eq!(spec.workload.load, 1.0);
        assert_eq!(spec.cluster.service.model, crate::ServiceModel::Size);
        assert_eq!(spec.sweep["workload.load"], vec![toml::Value::Float(0.5), toml::Value::Float(0.9)]);
    }

    #[test]
    fn unknown_field_is_named() {
        let err = Spec::default().with_overrides(&["workload.reqests=5"]).unwrap_err();
        assert!(err.to_string().contains("reqests"), "{err}");
        let err = Spec::default().with_overrides(&["nosuch.section.x=1"]).unwrap_err();
        assert!(err.to_string().contains("nosuch"), "{err}");
    }

    #[test]
    fn malformed_override_is_an_error() {
        assert!(matches!(Spec::default().with_overrides(&["workload.requests"]), Err(SpecError::BadOverride(_))));
        assert!(matches!(Spec::default().with_overrides(&["workload..x=1"]), Err(SpecError::BadOverride(_))));
        let err = Spec::default().with_overrides(&["workload.requests=lots"]).unwrap_err();
        assert!(err.to_string().contains("requests") || err.to_string().contains("integer"), "{err}");
    }
}
