//! `results.parquet`: the one-row-per-run table of `tailor_core::flat` with each swept parameter
//! in its own column, typed as the Python package's `Results.runs` frame types it, for pandas,
//! polars, DuckDB, Spark and the like. The schema is in docs/results.md ("results.parquet").
//!
//! Written with the `parquet` crate alone (no Arrow): one row group, Snappy pages. Text is a
//! UTF-8 string, a count an unsigned 64-bit integer, a figure a nullable double (null where the
//! run has none, e.g. `bound_ratio` without a bound), a flag a boolean. A swept parameter is a
//! signed 64-bit integer when every run's value is one, else a double when every value is a
//! number, else a string: the rule of the runs frame (`pandas.to_numeric`), so that a file and a
//! frame of the same results have the same columns of the same types.

use std::sync::Arc;

use ::parquet::basic::{Compression, LogicalType, Repetition, Type as Physical};
use ::parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use ::parquet::errors::ParquetError;
use ::parquet::file::properties::WriterProperties;
use ::parquet::file::writer::{SerializedColumnWriter, SerializedFileWriter};
use ::parquet::schema::types::{Type, TypePtr};
use tailor_core::flat::{columns, Cell, Params};
use tailor_core::results::RunResult;

/// One column's values, as they are written.
#[derive(Clone, Debug, PartialEq)]
enum Values {
    /// UTF-8 strings.
    Text(Vec<String>),
    /// Counts (UINT_64, kept in INT64's bits).
    Count(Vec<u64>),
    /// Signed integers (a swept parameter's).
    Integer(Vec<i64>),
    /// Doubles, `None` as null.
    Figure(Vec<Option<f64>>),
    /// Booleans.
    Flag(Vec<bool>),
}

/// `runs` as the bytes of a Parquet file: one row per run, the columns of
/// `flat::columns(runs, Params::Split)` in order.
pub fn to_parquet(runs: &[RunResult]) -> Result<Vec<u8>, ParquetError> {
    let swept: Vec<&String> = runs.first().map(|r| r.params.keys().collect()).unwrap_or_default();
    // without runs there are no cells to read a type from: the fixed columns are the same for
    // any run, and swept parameters only exist when there are runs
    let template = columns(&[RunResult::default()], Params::Split);
    let cols = columns(runs, Params::Split)
        .into_iter()
        .map(|(name, cells)| {
            let sample = cells.first().or_else(|| template.iter().find(|(n, _)| *n == name).map(|(_, c)| &c[0]));
            let sample = sample.ok_or_else(|| ParquetError::General(format!("no type known for column {name}")))?;
            let values = match sample {
                Cell::Text(_) if swept.contains(&&name) => parameter(cells_as(&name, &cells, as_text)?),
                Cell::Text(_) => Values::Text(cells_as(&name, &cells, as_text)?),
                Cell::Count(_) => Values::Count(cells_as(&name, &cells, as_count)?),
                Cell::Figure(_) => Values::Figure(cells_as(&name, &cells, as_figure)?),
                Cell::Flag(_) => Values::Flag(cells_as(&name, &cells, as_flag)?),
            };
            Ok((name, values))
        })
        .collect::<Result<Vec<_>, ParquetError>>()?;
    let fields = cols.iter().map(|(name, values)| field(name, values)).collect::<Result<Vec<_>, _>>()?;
    let schema = Arc::new(Type::group_type_builder("runs").with_fields(fields).build()?);
    let props = Arc::new(WriterProperties::builder().set_compression(Compression::SNAPPY).build());
    let mut out = Vec::new();
    let mut writer = SerializedFileWriter::new(&mut out, schema, props)?;
    let mut group = writer.next_row_group()?;
    for (name, values) in &cols {
        let column = group.next_column()?.ok_or_else(|| ParquetError::General(format!("no writer for {name}")))?;
        write(column, values)?;
    }
    group.close()?;
    writer.close()?;
    Ok(out)
}

// what `cells_as` picks from a column of each kind
fn as_text(c: &Cell) -> Option<String> {
    match c {
        Cell::Text(t) => Some(t.clone()),
        _ => None,
    }
}

fn as_count(c: &Cell) -> Option<u64> {
    match c {
        Cell::Count(n) => Some(*n),
        _ => None,
    }
}

fn as_figure(c: &Cell) -> Option<Option<f64>> {
    match c {
        Cell::Figure(f) => Some(*f),
        _ => None,
    }
}

fn as_flag(c: &Cell) -> Option<bool> {
    match c {
        Cell::Flag(b) => Some(*b),
        _ => None,
    }
}

/// The values of a column whose cells are all of one kind (`pick` answers `None` for another).
fn cells_as<T>(name: &str, cells: &[Cell], pick: impl Fn(&Cell) -> Option<T>) -> Result<Vec<T>, ParquetError> {
    cells
        .iter()
        .map(|c| pick(c).ok_or_else(|| ParquetError::General(format!("column {name} mixes cell kinds"))))
        .collect()
}

/// A swept parameter's values: integers when all are, else numbers when all are, else text.
fn parameter(texts: Vec<String>) -> Values {
    if let Ok(ints) = texts.iter().map(|t| t.parse::<i64>()).collect() {
        return Values::Integer(ints);
    }
    if let Ok(numbers) = texts.iter().map(|t| t.parse::<f64>().map(Some)).collect() {
        return Values::Figure(numbers);
    }
    Values::Text(texts)
}

/// The schema field of one column.
fn field(name: &str, values: &Values) -> Result<TypePtr, ParquetError> {
    let (physical, logical, repetition) = match values {
        Values::Text(_) => (Physical::BYTE_ARRAY, Some(LogicalType::String), Repetition::REQUIRED),
        Values::Count(_) => (Physical::INT64, Some(LogicalType::integer(64, false)), Repetition::REQUIRED),
        Values::Integer(_) => (Physical::INT64, None, Repetition::REQUIRED),
        Values::Figure(_) => (Physical::DOUBLE, None, Repetition::OPTIONAL),
        Values::Flag(_) => (Physical::BOOLEAN, None, Repetition::REQUIRED),
    };
    let built =
        Type::primitive_type_builder(name, physical).with_logical_type(logical).with_repetition(repetition).build()?;
    Ok(Arc::new(built))
}

/// Write one column chunk.
fn write(mut column: SerializedColumnWriter<'_>, values: &Values) -> Result<(), ParquetError> {
    match values {
        Values::Text(texts) => {
            let bytes: Vec<ByteArray> = texts.iter().map(|t| ByteArray::from(t.as_str())).collect();
            column.typed::<ByteArrayType>().write_batch(&bytes, None, None)?;
        }
        Values::Count(counts) => {
            // UINT_64 is stored in INT64's bits: readers that know the annotation read the u64
            // back (pandas uint64, polars UInt64, DuckDB UBIGINT)
            let bits: Vec<i64> = counts.iter().map(|&n| n as i64).collect();
            column.typed::<Int64Type>().write_batch(&bits, None, None)?;
        }
        Values::Integer(ints) => {
            column.typed::<Int64Type>().write_batch(ints, None, None)?;
        }
        Values::Figure(figures) => {
            // a null is a definition level of 0 with no value
            let present: Vec<f64> = figures.iter().flatten().copied().collect();
            let defined: Vec<i16> = figures.iter().map(|f| i16::from(f.is_some())).collect();
            column.typed::<DoubleType>().write_batch(&present, Some(&defined), None)?;
        }
        Values::Flag(flags) => {
            column.typed::<BoolType>().write_batch(flags, None, None)?;
        }
    }
    column.close()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::parquet::file::reader::{FileReader, SerializedFileReader};
    use ::parquet::record::RowAccessor;
    use std::fs::File;
    use std::path::{Path, PathBuf};
    use tailor_core::results::BoundRatio;

    /// A run with three swept parameters: integers, numbers, and text (`zipf`, then `1`).
    fn run(selector: &str, seed: u64, bound: Option<f64>) -> RunResult {
        let mut r =
            RunResult { selector: selector.into(), local: "fcfs".into(), seed, requests: 1000, ..Default::default() };
        let (interval, load, popularity) = if seed == 1 { ("50", "0.9", "zipf") } else { ("500", "1", "1") };
        r.params.insert("cluster.fluctuation.interval_ms".into(), interval.into());
        r.params.insert("workload.load".into(), load.into());
        r.params.insert("workload.popularity".into(), popularity.into());
        r.read_latency_ms.p99 = 12.5;
        r.bound = bound.map(|ratio| BoundRatio { ratio, ..Default::default() });
        r
    }

    /// `runs` written to a file of the temporary directory, and a reader of it.
    fn written(tag: &str, runs: &[RunResult]) -> (PathBuf, SerializedFileReader<File>) {
        let path = std::env::temp_dir().join(format!("tailor-parquet-{tag}-{}.parquet", std::process::id()));
        std::fs::write(&path, to_parquet(runs).unwrap()).unwrap();
        let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        (path, reader)
    }

    #[test]
    fn writes_the_split_table_and_reads_it_back() {
        let runs = [run("c3", 1, Some(1.75)), run("lor", 2, None)];
        let (path, reader) = written("runs", &runs);

        let meta = reader.metadata().file_metadata();
        assert_eq!(meta.num_rows(), 2);
        let schema = meta.schema_descr();
        let names: Vec<&str> = schema.columns().iter().map(|c| c.name()).collect();
        let expected: Vec<String> = columns(&runs, Params::Split).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, expected);
        assert_eq!(names[..4], ["selector", "local", "cluster.fluctuation.interval_ms", "workload.load"]);
        let typed = |name: &str| {
            let c = schema.columns().iter().find(|c| c.name() == name).unwrap();
            (c.physical_type(), c.logical_type_ref().cloned(), c.self_type().is_optional())
        };
        let string = (Physical::BYTE_ARRAY, Some(LogicalType::String), false);
        assert_eq!(typed("selector"), string);
        assert_eq!(typed("workload.popularity"), string);
        assert_eq!(typed("cluster.fluctuation.interval_ms"), (Physical::INT64, None, false));
        assert_eq!(typed("workload.load"), (Physical::DOUBLE, None, true));
        assert_eq!(typed("seed"), (Physical::INT64, Some(LogicalType::integer(64, false)), false));
        assert_eq!(typed("bound_ratio"), (Physical::DOUBLE, None, true));
        assert_eq!(typed("valid"), (Physical::BOOLEAN, None, false));

        let rows: Vec<_> = reader.get_row_iter(None).unwrap().map(Result::unwrap).collect();
        let at = |name: &str| names.iter().position(|n| *n == name).unwrap();
        assert_eq!(rows[1].get_string(at("selector")).unwrap(), "lor");
        assert_eq!(rows[1].get_long(at("cluster.fluctuation.interval_ms")).unwrap(), 500);
        assert_eq!(rows[1].get_double(at("workload.load")).unwrap(), 1.0);
        assert_eq!(rows[1].get_string(at("workload.popularity")).unwrap(), "1");
        assert_eq!(rows[1].get_ulong(at("seed")).unwrap(), 2);
        assert_eq!(rows[0].get_double(at("p99_ms")).unwrap(), 12.5);
        assert_eq!(rows[0].get_double(at("bound_ratio")).unwrap(), 1.75);
        assert!(rows[1].is_null(at("bound_ratio")).unwrap());
        assert!(rows[1].get_bool(at("valid")).unwrap());

        pyarrow_reads(&path);
        std::fs::remove_file(&path).unwrap();
    }

    /// The same file through pyarrow, when `python3` has it (it is not required).
    fn pyarrow_reads(path: &Path) {
        let has = std::process::Command::new("python3").args(["-c", "import pyarrow"]).output();
        if !has.is_ok_and(|o| o.status.success()) {
            eprintln!("pyarrow not importable: skipping the pyarrow check");
            return;
        }
        let check = "import sys, pyarrow.parquet as pq\n\
                     t = pq.read_table(sys.argv[1])\n\
                     assert t.num_rows == 2, t.num_rows\n\
                     types = {f.name: str(f.type) for f in t.schema}\n\
                     want = {'selector': 'string', 'cluster.fluctuation.interval_ms': 'int64',\n\
                             'workload.load': 'double', 'workload.popularity': 'string',\n\
                             'seed': 'uint64', 'bound_ratio': 'double', 'valid': 'bool'}\n\
                     assert all(types[k] == v for k, v in want.items()), types\n\
                     assert t.column('bound_ratio').to_pylist() == [1.75, None]\n";
        let out = std::process::Command::new("python3").args(["-c", check]).arg(path).output().unwrap();
        assert!(out.status.success(), "pyarrow: {}", String::from_utf8_lossy(&out.stderr));
    }

    #[test]
    fn no_runs_still_give_a_file_with_the_fixed_columns() {
        let (path, reader) = written("empty", &[]);
        std::fs::remove_file(path).unwrap();
        let meta = reader.metadata().file_metadata();
        assert_eq!(meta.num_rows(), 0);
        assert_eq!(meta.schema_descr().num_columns(), columns(&[RunResult::default()], Params::Split).len());
    }

    #[test]
    fn swept_parameters_are_typed_as_the_runs_frame_types_them() {
        let texts = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(parameter(texts(&["50", "-3"])), Values::Integer(vec![50, -3]));
        assert_eq!(parameter(texts(&["1", "0.5", "1e3"])), Values::Figure(vec![Some(1.0), Some(0.5), Some(1000.0)]));
        assert_eq!(parameter(texts(&["zipf", "1"])), Values::Text(texts(&["zipf", "1"])));
    }
}
