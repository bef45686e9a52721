//! Writing the release: a recoding applied to the source in one streaming SQL
//! scan, into a temporary table renamed over the output in the same
//! transaction, then copied to the job's CSV / Parquet files.
//!
//! A [`Recoding`] is small and lives here, in Rust: per QI, each source value
//! → its group and the group's label; and the classes (tuples of groups) to
//! drop. The write calls it through scalar functions registered on the
//! connection for the one statement (`kanon_group_*`, `kanon_kept_*`, and
//! `kanon_label_*` when a QI has too many groups to list its labels in the
//! statement), so the statement has no join and no sort: DuckDB keeps the
//! source's row order through scan, projection and filter (a hash join would
//! not; see docs/scale.md). A level per QI is one such recoding; a partition
//! of each QI's values is another of the same shape. A per-cluster recoding
//! ([`CellRecoding`], cell-based generalization) has the same one pass: the
//! row's cluster comes from its source position, its cells from the cluster.

use crate::cells::{cell_random, CellDomain};
use crate::database::{self, SourceColumn, OUT};
use crate::hierarchy::{code_table, dim_table, node_table};
use crate::job::{Job, OutputSpec};
use crate::metrics::{Dataset, Requirement};
use crate::search::cbg::{Clusters, SUPPRESSED};
use crate::sql::{self, ident, list, literal, render};
use anyhow::{anyhow, Context, Result};
use duckdb::core::{DataChunkHandle, Inserter, LogicalTypeHandle, LogicalTypeId};
use duckdb::ffi::duckdb_string_t;
use duckdb::types::ValueRef;
use duckdb::vscalar::{ScalarFunctionSignature, VScalar};
use duckdb::vtab::arrow::WritableVector;
use duckdb::Connection;
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// One QI's groups: each source value → the index of its group, and each
/// group's label. Values are keyed as [`key_expr`] turns them into BIGINT
/// (integer columns) or text (any other type); `null` is NULL's group.
#[derive(Debug, Default, Clone)]
struct Groups {
    by_int: FxHashMap<i64, u32>,
    /// Text of up to 15 bytes, packed into the key itself ([`short_key`]): a
    /// lookup then reads no key from the heap.
    by_short: FxHashMap<u128, u32>,
    by_text: FxHashMap<Box<[u8]>, u32>,
    null: Option<u32>,
    /// None for a NULL leaf's own group at level 0.
    labels: Vec<Option<String>>,
}

impl Groups {
    fn text(&self, bytes: &[u8]) -> Option<u32> {
        match short_key(bytes) {
            Some(k) => self.by_short.get(&k).copied(),
            None => self.by_text.get(bytes).copied(),
        }
    }

    fn insert_text(&mut self, bytes: &[u8], group: u32) {
        match short_key(bytes) {
            Some(k) => self.by_short.insert(k, group),
            None => self.by_text.insert(bytes.into(), group),
        };
    }
}

/// Text of at most 15 bytes as one integer: the bytes, then the length in the top byte.
fn short_key(bytes: &[u8]) -> Option<u128> {
    (bytes.len() < 16).then(|| {
        let mut k = [0u8; 16];
        k[..bytes.len()].copy_from_slice(bytes);
        k[15] = bytes.len() as u8;
        u128::from_le_bytes(k)
    })
}

/// How the release hands a QI's values of DuckDB type `type_name` to kanon: as
/// BIGINT for integer types and dates (hashing an integer is cheaper than formatting it),
/// as they are for VARCHAR, else cast to text. The value maps use the same
/// expression, so both sides agree on every value.
fn key_expr(type_name: &str, x: &str) -> String {
    match type_name {
        "TINYINT" | "SMALLINT" | "INTEGER" | "BIGINT" | "UTINYINT" | "USMALLINT" | "UINTEGER" => {
            format!("CAST({x} AS BIGINT)")
        }
        // Days since 1970 (BIGINT); ±infinity are the int32 extremes, which no finite date reaches.
        "DATE" => format!("({x} - DATE '1970-01-01')"),
        "VARCHAR" => x.to_string(),
        _ => format!("CAST({x} AS VARCHAR)"),
    }
}

/// What the release writes: per QI the groups and their labels, and the
/// classes (one group index per QI) whose rows are dropped.
#[derive(Debug, Default)]
pub struct Recoding {
    groups: Vec<Groups>,
    dropped: FxHashSet<Box<[u32]>>,
}

/// Build the recoding for a full-domain node: per QI, value → group and label
/// at the node's level; the classes `req` suppresses.
pub fn full_domain_map(
    conn: &Connection,
    job: &Job,
    columns: &[SourceColumn],
    levels: &[u8],
    req: &Requirement,
    sensitive: bool,
) -> Result<Recoding> {
    let n = levels.len();
    let types = qi_types(job, columns);
    let div = crate::hierarchy::divisors(conn, n)?;
    let mut rec = Recoding::default();
    // Per QI: the node-level code → group index.
    let mut index: Vec<FxHashMap<i64, u32>> = vec![FxHashMap::default(); n];
    for (a, &l) in levels.iter().enumerate() {
        let q = render(
            sql::fragment(sql::RELEASE_MAP, "value_map"),
            &[
                ("n", &key_expr(types[a], "k.n")),
                ("code", &format!("c{l}")),
                ("codes", &code_table(a)),
                ("dim", &dim_table(a)),
                ("nodes", &node_table(a)),
                ("level", &l.to_string()),
            ],
        );
        let mut g = Groups::default();
        let mut stmt = conn.prepare(&q)?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let code: i64 = r.get(1)?;
            let next = g.labels.len() as u32;
            let group = *index[a].entry(code).or_insert_with(|| {
                g.labels.push(None);
                next
            });
            g.labels[group as usize] = r.get(2)?;
            match r.get_ref(0)? {
                ValueRef::Null => g.null = Some(group),
                ValueRef::BigInt(v) => _ = g.by_int.insert(v, group),
                ValueRef::Text(v) => g.insert_text(v, group),
                v => return Err(anyhow!("value map of QI {a}: unexpected {:?}", v.data_type())),
            }
        }
        rec.groups.push(g);
    }
    let q = render(
        sql::fragment(sql::RELEASE_MAP, "suppressed"),
        &[
            ("classes", &list(0..n, ", ", |a| format!("(p.g{a} // {})::BIGINT AS c{a}", div[a][levels[a] as usize]))),
            ("ldiv", if sensitive { "count(DISTINCT p.s)" } else { "0" }),
            ("class_cols", &list(0..n, ", ", |a| format!("c.c{a}"))),
        ],
    );
    let mut stmt = conn.prepare(&q)?;
    let mut rows = stmt.query(duckdb::params![req.k as i64, req.l.unwrap_or(0) as i64])?;
    while let Some(r) = rows.next()? {
        let mut class = Vec::with_capacity(n);
        for (a, index) in index.iter().enumerate() {
            let code: i64 = r.get(a)?;
            class
                .push(*index.get(&code).ok_or_else(|| anyhow!("suppressed class code {code} of QI {a} has no group"))?);
        }
        rec.dropped.insert(class.into_boxed_slice());
    }
    Ok(rec)
}

/// The full-domain release on Spark ([`crate::spark`]): the value maps (each
/// source value as it is, its group's code at the node and label) and the
/// suppressed classes go to the session as small views, and one statement of
/// joins ([`sql::RELEASE_JOINED`]) writes the release table there.
#[allow(clippy::too_many_arguments)]
pub fn write_spark_full_domain(
    conn: &Connection,
    spark: &crate::spark::Spark,
    job: &Job,
    columns: &[SourceColumn],
    levels: &[u8],
    req: &Requirement,
    sensitive: bool,
) -> Result<Written> {
    let n = levels.len();
    let table = job.output.spark_table.as_deref().context("a Spark job names its release table")?;
    let div = crate::hierarchy::divisors(conn, n)?;
    for (a, &l) in levels.iter().enumerate() {
        let q = render(
            sql::fragment(sql::RELEASE_MAP, "value_map"),
            &[
                ("n", "k.n"),
                ("code", &format!("c{l}")),
                ("codes", &code_table(a)),
                ("dim", &dim_table(a)),
                ("nodes", &node_table(a)),
                ("level", &l.to_string()),
            ],
        );
        spark.share(
            conn,
            &format!("SELECT n, code::BIGINT AS code, label FROM ({q})"),
            &[],
            &format!("kanon_release_map_{a}"),
        )?;
    }
    let q = render(
        sql::fragment(sql::RELEASE_MAP, "suppressed"),
        &[
            ("classes", &list(0..n, ", ", |a| format!("(p.g{a} // {})::BIGINT AS c{a}", div[a][levels[a] as usize]))),
            ("ldiv", if sensitive { "count(DISTINCT p.s)" } else { "0" }),
            ("class_cols", &list(0..n, ", ", |a| format!("c.c{a}"))),
        ],
    );
    spark.share(conn, &q, &[req.k as i64, req.l.unwrap_or(0) as i64], "kanon_release_dropped")?;
    let qis = job.qi_names();
    let select = list(columns.iter().filter(|c| !job.output.drop.iter().any(|d| d.name == c.name)), ", ", |c| {
        let name = ident(&c.name);
        match qis.iter().position(|q| *q == c.name) {
            Some(a) => format!("m{a}.label AS {name}"),
            None => format!("s.{name}"),
        }
    });
    let select = render(
        sql::RELEASE_JOINED,
        &[
            ("columns", &select),
            (
                "joins",
                &list(qis.iter().enumerate(), "\n", |(a, q)| {
                    format!("JOIN kanon_release_map_{a} m{a} ON s.{} IS NOT DISTINCT FROM m{a}.n", ident(q))
                }),
            ),
            ("match", &list(0..n, " AND ", |a| format!("d.c{a} = m{a}.code"))),
        ],
    );
    let rows = spark.write_table(table, &select)?;
    Ok(Written { rows })
}

/// Ambiguity (am) of a full-domain release: the mean over records of the
/// product over QIs of the leaves under the record's released value, a
/// suppressed record counting every leaf. Read off `kanon_f0` at the node.
pub fn ambiguity(conn: &Connection, levels: &[u8], req: &Requirement, sensitive: bool, data: &Dataset) -> Result<f64> {
    let n = levels.len();
    let div = crate::hierarchy::divisors(conn, n)?;
    let q = render(
        sql::fragment(sql::RELEASE_MAP, "ambiguity"),
        &[
            ("classes", &list(0..n, ", ", |a| format!("(p.g{a} // {})::BIGINT AS c{a}", div[a][levels[a] as usize]))),
            ("ldiv", if sensitive { "count(DISTINCT p.s)" } else { "0" }),
            (
                "joins",
                &list(0..n, " ", |a| {
                    format!("JOIN {} h{a} ON h{a}.level = {} AND h{a}.code = c.c{a}", node_table(a), levels[a])
                }),
            ),
            ("product", &list(0..n, " * ", |a| format!("h{a}.leaves::DOUBLE"))),
        ],
    );
    let (kept, records): (f64, i64) =
        conn.query_row(&q, duckdb::params![req.k as i64, req.l.unwrap_or(0) as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let suppressed = data.rows as f64 - records as f64;
    let all: f64 = data.leaves.iter().map(|&l| l as f64).product();
    Ok((kept + suppressed * all) / data.rows as f64)
}

/// Build the recoding for one partition per QI (the scheme search): per QI,
/// `blocks[a][i]` is the block of leaf index `i` (the rank of the leaf code in
/// `leaf_codes[a]`) and `labels[a]` the blocks' labels; `dropped` the classes
/// (block ids per QI) whose rows are suppressed. Each QI's leaf → block map is
/// written as table `kanon_block_{a}` and read back keyed as the release keys
/// values, so the write is the same one pass as for a full-domain node.
pub fn partition_map(
    conn: &Connection,
    job: &Job,
    columns: &[SourceColumn],
    leaf_codes: &[Vec<i64>],
    blocks: &[&[u32]],
    labels: &[Vec<Option<String>>],
    dropped: Vec<Vec<u32>>,
) -> Result<Recoding> {
    let types = qi_types(job, columns);
    let mut rec = Recoding::default();
    for a in 0..blocks.len() {
        let table = format!("kanon_block_{a}");
        conn.execute_batch(&format!(
            "CREATE OR REPLACE TEMP TABLE {} (c0 BIGINT, block INTEGER, label VARCHAR)",
            ident(&table)
        ))?;
        let mut app = conn.appender_to_catalog_and_db(&table, "temp", "main")?;
        for (i, &b) in blocks[a].iter().enumerate() {
            app.append_row(duckdb::params![leaf_codes[a][i], b as i32, labels[a][b as usize]])?;
        }
        app.flush()?;
        drop(app);
        let q = render(
            sql::fragment(sql::RELEASE_MAP, "block_map"),
            &[("n", &key_expr(types[a], "k.n")), ("codes", &code_table(a)), ("blocks", &ident(&table))],
        );
        let mut g = Groups { labels: labels[a].clone(), ..Groups::default() };
        let mut stmt = conn.prepare(&q)?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let group = r.get::<_, i32>(1)? as u32;
            match r.get_ref(0)? {
                ValueRef::Null => g.null = Some(group),
                ValueRef::BigInt(v) => _ = g.by_int.insert(v, group),
                ValueRef::Text(v) => g.insert_text(v, group),
                v => return Err(anyhow!("block map of QI {a}: unexpected {:?}", v.data_type())),
            }
        }
        rec.groups.push(g);
    }
    rec.dropped = dropped.into_iter().map(|c| c.into_boxed_slice()).collect();
    Ok(rec)
}

/// The QIs' DuckDB types, in QI order.
fn qi_types<'a>(job: &Job, columns: &'a [SourceColumn]) -> Vec<&'a str> {
    job.qi_names()
        .iter()
        .map(|q| columns.iter().find(|c| c.name == *q).map_or("VARCHAR", |c| c.type_name.as_str()))
        .collect()
}

/// `kanon_group_*(value BIGINT | VARCHAR) -> UINTEGER`: one QI's group of each value.
/// Volatile, so the optimizer evaluates it once per row where it is written,
/// instead of copying it into the filter above.
struct GroupFn;

impl VScalar for GroupFn {
    type State = (Arc<Recoding>, usize);

    fn invoke(
        (rec, a): &Self::State,
        input: &mut DataChunkHandle,
        output: &mut dyn WritableVector,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let g = &rec.groups[*a];
        let len = input.len();
        let values = input.flat_vector(0);
        let mut out = output.flat_vector();
        let missing = |v: String| format!("QI {a}: value {v} has no group in the recoding");
        let is_int = values.logical_type().id() == LogicalTypeId::Bigint;
        // SAFETY: the vector holds `len` values of its logical type (BIGINT: i64;
        // VARCHAR: duckdb_string_t); the output UINTEGER vector `len` u32s.
        let groups = unsafe { out.as_mut_slice_with_len::<u32>(len) };
        let ints = unsafe { values.as_slice_with_len::<i64>(if is_int { len } else { 0 }) };
        let texts = unsafe { values.as_slice_with_len::<duckdb_string_t>(if is_int { 0 } else { len }) };
        for (i, group) in groups.iter_mut().enumerate() {
            *group = if values.row_is_null(i as u64) {
                g.null.ok_or_else(|| missing("NULL".into()))?
            } else if is_int {
                *g.by_int.get(&ints[i]).ok_or_else(|| missing(ints[i].to_string()))?
            } else {
                let bytes = text_bytes(&texts[i]);
                g.text(bytes).ok_or_else(|| missing(format!("{:?}", String::from_utf8_lossy(bytes))))?
            };
        }
        Ok(())
    }

    fn signatures() -> Vec<ScalarFunctionSignature> {
        [LogicalTypeId::Bigint, LogicalTypeId::Varchar]
            .into_iter()
            .map(|t| ScalarFunctionSignature::exact(vec![t.into()], LogicalTypeId::UInteger.into()))
            .collect()
    }

    fn volatile() -> bool {
        true
    }
}

/// The bytes of a DuckDB string: up to 12 are stored in the value itself, longer
/// ones behind its pointer (DuckDB's documented `duckdb_string_t` layout).
fn text_bytes(s: &duckdb_string_t) -> &[u8] {
    // SAFETY: both union variants start with the length; a string of at most 12
    // bytes is inlined, a longer one points to `length` bytes that live as long
    // as the vector holding `s`.
    unsafe {
        let len = s.value.inlined.length as usize;
        if len <= 12 {
            std::slice::from_raw_parts(s.value.inlined.inlined.as_ptr().cast(), len)
        } else {
            std::slice::from_raw_parts(s.value.pointer.ptr.cast(), len)
        }
    }
}

/// `kanon_label_*(group UINTEGER) -> VARCHAR`: the label of one QI's group.
struct LabelFn;

impl VScalar for LabelFn {
    type State = (Arc<Recoding>, usize);

    fn invoke(
        (rec, a): &Self::State,
        input: &mut DataChunkHandle,
        output: &mut dyn WritableVector,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let labels = &rec.groups[*a].labels;
        // SAFETY: a UINTEGER input vector holds len() u32s; groups come from GroupFn, never NULL.
        let vector = input.flat_vector(0);
        let groups = unsafe { vector.as_slice_with_len::<u32>(input.len()) };
        let mut out = output.flat_vector();
        for (i, &g) in groups.iter().enumerate() {
            match &labels[g as usize] {
                Some(l) => out.insert(i, l.as_str()),
                None => out.set_null(i),
            }
        }
        Ok(())
    }

    fn signatures() -> Vec<ScalarFunctionSignature> {
        vec![ScalarFunctionSignature::exact(vec![LogicalTypeId::UInteger.into()], LogicalTypeId::Varchar.into())]
    }
}

/// `kanon_kept_*(group UINTEGER, …) -> BOOLEAN`, one group per QI: is the row's class kept?
struct KeptFn;

impl VScalar for KeptFn {
    type State = Arc<Recoding>;

    fn invoke(
        rec: &Self::State,
        input: &mut DataChunkHandle,
        output: &mut dyn WritableVector,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let len = input.len();
        // SAFETY: each input is a UINTEGER vector of len() u32s; the output BOOLEAN one byte per row.
        let vectors: Vec<_> = (0..rec.groups.len()).map(|a| input.flat_vector(a)).collect();
        let columns: Vec<&[u32]> = vectors.iter().map(|v| unsafe { v.as_slice_with_len::<u32>(len) }).collect();
        let mut out = output.flat_vector();
        let kept = unsafe { out.as_mut_slice_with_len::<bool>(len) };
        let mut class = vec![0u32; columns.len()];
        for (i, k) in kept.iter_mut().enumerate() {
            for (c, col) in class.iter_mut().zip(&columns) {
                *c = col[i];
            }
            *k = !rec.dropped.contains(&class[..]);
        }
        Ok(())
    }

    fn signatures() -> Vec<ScalarFunctionSignature> {
        vec![ScalarFunctionSignature::variadic(
            LogicalTypeId::UInteger.into(),
            LogicalTypeHandle::from(LogicalTypeId::Boolean),
        )]
    }
}

/// A per-record recoding: each record's cluster by its source position, and
/// each cluster's cell per QI in the QIs' domains.
pub struct CellRecoding {
    /// By position (`kanon_source_rows`): the record's cluster, or [`SUPPRESSED`].
    pub cluster_of: Vec<u32>,
    pub clusters: Clusters,
    pub domains: Vec<CellDomain>,
    /// The position column of `kanon_source_rows`.
    pub position: String,
}

/// `kanon_cluster_*(position BIGINT) -> UINTEGER`: a record's cluster.
struct ClusterFn;

impl VScalar for ClusterFn {
    type State = Arc<CellRecoding>;

    fn invoke(
        rec: &Self::State,
        input: &mut DataChunkHandle,
        output: &mut dyn WritableVector,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let len = input.len();
        let vector = input.flat_vector(0);
        // SAFETY: a BIGINT input vector holds len() i64s (positions are never NULL); the output len() u32s.
        let positions = unsafe { vector.as_slice_with_len::<i64>(len) };
        let mut out = output.flat_vector();
        let clusters = unsafe { out.as_mut_slice_with_len::<u32>(len) };
        for (c, &p) in clusters.iter_mut().zip(positions) {
            *c = *rec.cluster_of.get(p as usize).ok_or_else(|| format!("source position {p} was not clustered"))?;
        }
        Ok(())
    }

    fn signatures() -> Vec<ScalarFunctionSignature> {
        vec![ScalarFunctionSignature::exact(vec![LogicalTypeId::Bigint.into()], LogicalTypeId::UInteger.into())]
    }

    fn volatile() -> bool {
        true
    }
}

/// `kanon_cell_*(cluster UINTEGER) -> UINTEGER`: the cluster's cell on one QI
/// (an index into the QI's distinct cells; 0 for a suppressed record, never written).
struct CellFn;

impl VScalar for CellFn {
    type State = (Arc<CellRecoding>, usize);

    fn invoke(
        (rec, a): &Self::State,
        input: &mut DataChunkHandle,
        output: &mut dyn WritableVector,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let len = input.len();
        let n = rec.domains.len();
        let vector = input.flat_vector(0);
        // SAFETY: UINTEGER vectors of len() u32s in and out.
        let clusters = unsafe { vector.as_slice_with_len::<u32>(len) };
        let mut out = output.flat_vector();
        let cells = unsafe { out.as_mut_slice_with_len::<u32>(len) };
        for (cell, &c) in cells.iter_mut().zip(clusters) {
            *cell = if c == SUPPRESSED { 0 } else { rec.clusters.cells[c as usize * n + a] };
        }
        Ok(())
    }

    fn signatures() -> Vec<ScalarFunctionSignature> {
        vec![ScalarFunctionSignature::exact(vec![LogicalTypeId::UInteger.into()], LogicalTypeId::UInteger.into())]
    }
}

/// `kanon_leaf_*(cluster UINTEGER, position BIGINT) -> VARCHAR`: a leaf
/// drawn uniformly under the record's cell on one QI, by a random number of
/// the seed, the position and the QI ([`crate::cells::cell_random`]).
struct LeafFn;

impl VScalar for LeafFn {
    type State = (Arc<CellRecoding>, usize, u64);

    fn invoke(
        (rec, a, seed): &Self::State,
        input: &mut DataChunkHandle,
        output: &mut dyn WritableVector,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let len = input.len();
        let (cv, pv) = (input.flat_vector(0), input.flat_vector(1));
        // SAFETY: a UINTEGER and a BIGINT vector of len() values each.
        let clusters = unsafe { cv.as_slice_with_len::<u32>(len) };
        let positions = unsafe { pv.as_slice_with_len::<i64>(len) };
        let mut out = output.flat_vector();
        let d = &rec.domains[*a];
        for (i, (&c, &p)) in clusters.iter().zip(positions).enumerate() {
            let leaf = (c != SUPPRESSED).then(|| d.draw(rec.clusters.cell(c, *a), cell_random(*seed, p as u64, *a)));
            match leaf.flatten() {
                Some(l) => out.insert(i, l.as_str()),
                None => out.set_null(i),
            }
        }
        Ok(())
    }

    fn signatures() -> Vec<ScalarFunctionSignature> {
        vec![ScalarFunctionSignature::exact(
            vec![LogicalTypeId::UInteger.into(), LogicalTypeId::Bigint.into()],
            LogicalTypeId::Varchar.into(),
        )]
    }
}

/// The calls of a per-record write: the cluster by position, then per QI the
/// cell's label (or, reconstructing, a leaf drawn under it).
fn register_cells(
    conn: &Connection,
    rec: &Arc<CellRecoding>,
    job: &Job,
    columns: &[SourceColumn],
    reconstruct: Option<u64>,
) -> Result<Calls> {
    static SERIAL: AtomicUsize = AtomicUsize::new(0);
    let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
    let prefix = (0..)
        .map(|i| format!("kanon_cluster{i}_"))
        .find(|p| !columns.iter().any(|c| c.name.to_lowercase().starts_with(p)))
        .unwrap_or_default();
    let cluster_col = ident(&format!("{prefix}c"));
    let types = qi_types(job, columns);
    let cluster = format!("kanon_cluster_{serial}");
    conn.register_scalar_function_with_state::<ClusterFn>(&cluster, rec)?;
    let mut calls = Calls {
        groups: vec![format!("{cluster}(s.{}) AS {cluster_col}", ident(&rec.position))],
        labels: Vec::new(),
        kept: format!("s.{cluster_col} <> {SUPPRESSED}"),
    };
    for a in 0..job.quasi_identifiers.len() {
        if let Some(seed) = reconstruct {
            let leaf = format!("kanon_leaf_{serial}_{a}");
            conn.register_scalar_function_with_state::<LeafFn>(&leaf, &(rec.clone(), a, seed))?;
            let drawn = format!("{leaf}(s.{cluster_col}, s.{})", ident(&rec.position));
            // Leaves go back to the column's type, so the reconstruction reads like the source.
            calls.labels.push(match types[a] {
                "VARCHAR" => drawn,
                t => format!("CAST({drawn} AS {t})"),
            });
            continue;
        }
        let cell = format!("kanon_cell_{serial}_{a}");
        conn.register_scalar_function_with_state::<CellFn>(&cell, &(rec.clone(), a))?;
        let d = &rec.domains[a];
        let labels: Vec<Option<String>> = rec.clusters.distinct[a].iter().map(|c| d.label(c)).collect();
        if labels.len() <= LITERAL_LABELS {
            calls.labels.push(format!(
                "([{}]::VARCHAR[])[{cell}(s.{cluster_col}) + 1]",
                list(&labels, ", ", |l| l.as_deref().map_or("NULL".into(), literal))
            ));
        } else {
            let label = format!("kanon_cell_label_{serial}_{a}");
            let mut holder = Recoding::default();
            holder.groups = vec![Groups::default(); a + 1];
            holder.groups[a].labels = labels;
            conn.register_scalar_function_with_state::<LabelFn>(&label, &(Arc::new(holder), a))?;
            calls.labels.push(format!("{label}({cell}(s.{cluster_col}))"));
        }
    }
    Ok(calls)
}

/// The SQL pieces of the write, calling `rec` through functions registered on
/// `conn` under names no other release on this connection uses.
struct Calls {
    /// Per QI: `kanon_group_…(key) AS <group column>`, for the inner SELECT.
    groups: Vec<String>,
    /// Per QI: `kanon_label_…(<group column>)`.
    labels: Vec<String>,
    /// The WHERE condition.
    kept: String,
}

/// Up to this many groups, a QI's labels are written into the statement as a list.
const LITERAL_LABELS: usize = 100_000;

fn register(conn: &Connection, rec: Recoding, job: &Job, columns: &[SourceColumn]) -> Result<Calls> {
    static SERIAL: AtomicUsize = AtomicUsize::new(0);
    let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
    let qis = job.qi_names();
    let types = qi_types(job, columns);
    // Group columns named apart from every source column.
    let prefix = (0..)
        .map(|i| format!("kanon_group{i}_"))
        .find(|p| !columns.iter().any(|c| c.name.to_lowercase().starts_with(p)))
        .unwrap_or_default();
    let group_col = |a: usize| ident(&format!("{prefix}{a}"));
    let any_dropped = !rec.dropped.is_empty();
    let rec = Arc::new(rec);
    let mut calls = Calls { groups: Vec::new(), labels: Vec::new(), kept: "true".into() };
    for (a, q) in qis.iter().enumerate() {
        let group = format!("kanon_group_{serial}_{a}");
        conn.register_scalar_function_with_state::<GroupFn>(&group, &(rec.clone(), a))?;
        calls.groups.push(format!("{group}({}) AS {}", key_expr(types[a], &format!("s.{}", ident(q))), group_col(a)));
        let labels = &rec.groups[a].labels;
        if labels.len() <= LITERAL_LABELS {
            // A constant list indexed per row: DuckDB reads each label in place, no copy.
            calls.labels.push(format!(
                "([{}]::VARCHAR[])[s.{} + 1]",
                list(labels, ", ", |l| l.as_deref().map_or("NULL".into(), literal)),
                group_col(a)
            ));
        } else {
            let label = format!("kanon_label_{serial}_{a}");
            conn.register_scalar_function_with_state::<LabelFn>(&label, &(rec.clone(), a))?;
            calls.labels.push(format!("{label}(s.{})", group_col(a)));
        }
    }
    if any_dropped {
        let kept = format!("kanon_kept_{serial}");
        conn.register_scalar_function_with_state::<KeptFn>(&kept, &rec)?;
        calls.kept = format!("{kept}({})", list(0..qis.len(), ", ", |a| format!("s.{}", group_col(a))));
    }
    Ok(calls)
}

/// What was written.
#[derive(Debug, Clone)]
pub struct Written {
    pub rows: u64,
}

/// Apply the recoding to the source and publish the result atomically: the
/// table (when the job names one), then its file copies; or, with no table,
/// each file streamed straight from the source. Nothing is left behind on failure.
pub fn write(conn: &Connection, job: &Job, columns: &[SourceColumn], recoding: Recoding) -> Result<Written> {
    let calls = register(conn, recoding, job, columns)?;
    write_select(conn, job, &job.output, columns, &calls, "kanon_source")
}

/// Write a per-record recoding (cell-based generalization) to `out`: each
/// kept record's QIs as its cluster's cells, or with `reconstruct` (a seed)
/// as leaves drawn under them. Reads `kanon_source_rows`.
pub fn write_cells(
    conn: &Connection,
    job: &Job,
    out: &OutputSpec,
    columns: &[SourceColumn],
    rec: &Arc<CellRecoding>,
    reconstruct: Option<u64>,
) -> Result<Written> {
    let calls = register_cells(conn, rec, job, columns, reconstruct)?;
    write_select(conn, job, out, columns, &calls, "kanon_source_rows")
}

/// The release statement from `calls` over `relation`, published to `out`.
fn write_select(
    conn: &Connection,
    job: &Job,
    out: &OutputSpec,
    columns: &[SourceColumn],
    calls: &Calls,
    relation: &str,
) -> Result<Written> {
    let qis = job.qi_names();
    let select = list(columns.iter().filter(|c| !out.drop.iter().any(|d| d.name == c.name)), ", ", |c| {
        let name = ident(&c.name);
        match qis.iter().position(|q| *q == c.name) {
            Some(a) => format!("{} AS {name}", calls.labels[a]),
            None => format!("s.{name}"),
        }
    });
    let select = render(
        sql::RELEASE_SELECT,
        &[("columns", &select), ("groups", &calls.groups.join(", ")), ("kept", &calls.kept), ("relation", relation)],
    );
    let copies: Vec<(&PathBuf, &str)> =
        [(out.csv.as_ref(), "FORMAT CSV, HEADER"), (out.parquet.as_ref(), "FORMAT PARQUET")]
            .into_iter()
            .filter_map(|(p, f)| p.map(|p| (p, f)))
            .collect();
    let Some(table) = &out.table else {
        return write_files(conn, &select, &copies);
    };
    let created = database::attach_output(conn, job, table, false)?;
    let result = write_table(conn, &table.name, &select, &copies);
    if result.is_err() && created {
        let _ = conn.execute_batch(&format!("DETACH {}", ident(OUT)));
        let _ = std::fs::remove_file(&table.database);
        let _ = std::fs::remove_file(PathBuf::from(format!("{}.wal", table.database.display())));
    }
    result
}

fn tmp_path(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".kanon-tmp");
    PathBuf::from(s)
}

/// Run `copy` (which writes each file under its [`tmp_path`]), then rename
/// every file into place; on failure remove the temporary files.
fn publish_files(copies: &[(&PathBuf, &str)], copy: impl FnOnce() -> Result<u64>) -> Result<Written> {
    match copy() {
        Ok(rows) => {
            for (path, _) in copies {
                std::fs::rename(tmp_path(path), path).with_context(|| format!("writing {}", path.display()))?;
            }
            Ok(Written { rows })
        }
        Err(e) => {
            for (path, _) in copies {
                let _ = std::fs::remove_file(tmp_path(path));
            }
            Err(e)
        }
    }
}

fn copy_to(conn: &Connection, relation: &str, path: &Path, format: &str) -> Result<u64> {
    let rows: i64 = conn
        .query_row(&format!("COPY {relation} TO {} ({format})", literal(&tmp_path(path).to_string_lossy())), [], |r| {
            r.get(0)
        })
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(rows as u64)
}

/// No table: each file is one streaming pass over the source (a second file
/// is a second pass, cheaper than holding the release).
fn write_files(conn: &Connection, select: &str, copies: &[(&PathBuf, &str)]) -> Result<Written> {
    publish_files(copies, || {
        let t = std::time::Instant::now();
        let mut rows = None;
        for (path, format) in copies {
            let n = copy_to(conn, &format!("({select})"), path, format)?;
            crate::trace(|| format!("release {}: {:.3}s", path.display(), t.elapsed().as_secs_f64()));
            if rows.is_some_and(|r| r != n) {
                anyhow::bail!("the release passes wrote {} and {n} rows", rows.unwrap_or(0));
            }
            rows = Some(n);
        }
        Ok(rows.unwrap_or(0))
    })
}

fn write_table(conn: &Connection, table: &str, select: &str, copies: &[(&PathBuf, &str)]) -> Result<Written> {
    let final_name = format!("{}.main.{}", ident(OUT), ident(table));
    let tmp_name = format!("{}.main.{}", ident(OUT), ident(&format!("{table}__kanon_tmp")));
    let run = || -> Result<u64> {
        let t = std::time::Instant::now();
        let trace = |what: &str| crate::trace(|| format!("release {what}: {:.3}s", t.elapsed().as_secs_f64()));
        conn.execute_batch("BEGIN TRANSACTION")?;
        conn.execute_batch(&format!("DROP TABLE IF EXISTS {tmp_name}"))?;
        conn.execute_batch(&format!("CREATE TABLE {tmp_name} AS {select}")).context("writing the release")?;
        trace("table");
        let rows: i64 = conn.query_row(&format!("SELECT count(*) FROM {tmp_name}"), [], |r| r.get(0))?;
        for (path, format) in copies {
            copy_to(conn, &tmp_name, path, format)?;
        }
        conn.execute_batch(&format!("DROP TABLE IF EXISTS {final_name}"))?;
        conn.execute_batch(&format!("ALTER TABLE {tmp_name} RENAME TO {}", ident(table)))?;
        trace("copies, rename");
        conn.execute_batch("COMMIT")?;
        trace("commit");
        Ok(rows as u64)
    };
    publish_files(copies, || {
        run().inspect_err(|_| {
            let _ = conn.execute_batch("ROLLBACK");
        })
    })
}
