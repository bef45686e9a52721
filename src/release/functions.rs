//! The scalar functions a release statement calls: per QI a value's group
//! (`kanon_group_*`) and a group's label (`kanon_label_*`), whether a class
//! is kept (`kanon_kept_*`); for cells a record's cluster by position
//! (`kanon_cluster_*`), the cluster's cell (`kanon_cell_*`) and a leaf drawn
//! under it (`kanon_leaf_*`). Registered on the connection for one statement,
//! under names no other release on it uses; [`Calls`] are the SQL pieces.

use super::maps::{key_expr, qi_types, DroppedClasses, GroupMaps, Groups, INLINE_BYTES};
use super::CellRecoding;
use crate::engine::embedded::SourceColumn;
use crate::job::Job;
use crate::pseudonym::Key;
use crate::search::cbg::SUPPRESSED;
use crate::search::cells::cell_random;
use crate::sql::{ident, list, literal};
use anyhow::Result;
use duckdb::core::{DataChunkHandle, Inserter, LogicalTypeHandle, LogicalTypeId};
use duckdb::ffi::duckdb_string_t;
use duckdb::vscalar::{ScalarFunctionSignature, VScalar};
use duckdb::vtab::arrow::WritableVector;
use duckdb::Connection;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// `kanon_group_*(value BIGINT | VARCHAR) -> UINTEGER`: one QI's group of each value.
/// Volatile, so the optimizer evaluates it once per row where it is written,
/// instead of copying it into the filter above.
struct GroupFn;

impl VScalar for GroupFn {
    type State = (Arc<GroupMaps>, usize);

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
        let valid = validity(input, 0, len);
        let is_valid = |i: usize| valid.is_none_or(|m| m[i / 64] >> (i % 64) & 1 == 1);
        // SAFETY: the vector holds `len` values of its logical type (BIGINT: i64;
        // VARCHAR: duckdb_string_t); the output UINTEGER vector `len` u32s.
        let groups = unsafe { out.as_mut_slice_with_len::<u32>(len) };
        if values.logical_type().id() == LogicalTypeId::Bigint {
            let ints = unsafe { values.as_slice_with_len::<i64>(len) };
            for (i, group) in groups.iter_mut().enumerate() {
                *group = match is_valid(i) {
                    true => g.int(ints[i]).ok_or_else(|| missing(ints[i].to_string()))?,
                    false => g.null.ok_or_else(|| missing("NULL".into()))?,
                };
            }
            return Ok(());
        }
        let texts = unsafe { values.as_slice_with_len::<duckdb_string_t>(len) };
        for (i, group) in groups.iter_mut().enumerate() {
            if !is_valid(i) {
                *group = g.null.ok_or_else(|| missing("NULL".into()))?;
                continue;
            }
            // SAFETY: a duckdb_string_t is 16 bytes: the length (u32), then up
            // to 12 bytes inline, or a prefix and a pointer.
            let raw = u128::from_le_bytes(unsafe { std::mem::transmute::<duckdb_string_t, [u8; 16]>(texts[i]) });
            let bytes = raw as u32 as usize;
            let found = match bytes <= INLINE_BYTES {
                // The length and its bytes only, whatever the padding holds.
                true => g.inline(raw & (u128::MAX >> (8 * (INLINE_BYTES - bytes)))),
                false => g.text(text_bytes(&texts[i])),
            };
            *group = found.ok_or_else(|| missing(format!("{:?}", String::from_utf8_lossy(text_bytes(&texts[i])))))?;
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

/// Column `idx`'s validity bits (bit `i % 64` of word `i / 64` set when row
/// `i` is not NULL), read once per chunk; None when no row is NULL.
fn validity(input: &DataChunkHandle, idx: usize, len: usize) -> Option<&[u64]> {
    // SAFETY: the chunk holds column `idx`; DuckDB's validity mask, when there
    // is one, has a bit for each of the chunk's `len` rows and lives as long as the chunk.
    unsafe {
        let vector = duckdb::ffi::duckdb_data_chunk_get_vector(input.get_ptr(), idx as u64);
        let mask = duckdb::ffi::duckdb_vector_get_validity(vector);
        (!mask.is_null()).then(|| std::slice::from_raw_parts(mask.cast_const(), len.div_ceil(64)))
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
    type State = (Arc<GroupMaps>, usize);

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

thread_local! {
    /// Each DuckDB worker's packed class keys, kept from chunk to chunk.
    static KEYS: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `kanon_kept_*(group UINTEGER, …) -> BOOLEAN`, one group per QI: is the row's class kept?
struct KeptFn;

impl VScalar for KeptFn {
    type State = Arc<DroppedClasses>;

    fn invoke(
        dropped: &Self::State,
        input: &mut DataChunkHandle,
        output: &mut dyn WritableVector,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let len = input.len();
        // SAFETY: each input is a UINTEGER vector of len() u32s; the output BOOLEAN one byte per row.
        let vectors: Vec<_> = (0..input.num_columns()).map(|a| input.flat_vector(a)).collect();
        let columns: Vec<&[u32]> = vectors.iter().map(|v| unsafe { v.as_slice_with_len::<u32>(len) }).collect();
        let mut out = output.flat_vector();
        let kept = unsafe { out.as_mut_slice_with_len::<bool>(len) };
        KEYS.with(|keys| dropped.kept(&columns, kept, &mut keys.borrow_mut()));
        Ok(())
    }

    fn signatures() -> Vec<ScalarFunctionSignature> {
        vec![ScalarFunctionSignature::variadic(
            LogicalTypeId::UInteger.into(),
            LogicalTypeHandle::from(LogicalTypeId::Boolean),
        )]
    }
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
/// the seed, the position and the QI ([`crate::search::cells::cell_random`]).
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
pub(super) fn register_cells(
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
            let mut holder = GroupMaps::default();
            holder.groups = vec![Groups::default(); a + 1];
            holder.groups[a].labels = labels;
            conn.register_scalar_function_with_state::<LabelFn>(&label, &(Arc::new(holder), a))?;
            calls.labels.push(format!("{label}({cell}(s.{cluster_col}))"));
        }
    }
    Ok(calls)
}

/// `kanon_pseudonym_*(value VARCHAR) -> VARCHAR`: [`Key::pseudonym`] of
/// each value's text; NULL stays NULL. The key is the function's state, never
/// part of a statement.
struct PseudonymFn;

impl VScalar for PseudonymFn {
    type State = Key;

    fn invoke(
        key: &Self::State,
        input: &mut DataChunkHandle,
        output: &mut dyn WritableVector,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let len = input.len();
        let valid = validity(input, 0, len);
        let values = input.flat_vector(0);
        // SAFETY: a VARCHAR vector holds `len` duckdb_string_t values.
        let texts = unsafe { values.as_slice_with_len::<duckdb_string_t>(len) };
        let mut out = output.flat_vector();
        for (i, text) in texts.iter().enumerate() {
            match valid.is_none_or(|m| m[i / 64] >> (i % 64) & 1 == 1) {
                true => out.insert(i, key.pseudonym(text_bytes(text)).as_str()),
                false => out.set_null(i),
            }
        }
        Ok(())
    }

    fn signatures() -> Vec<ScalarFunctionSignature> {
        vec![ScalarFunctionSignature::exact(vec![LogicalTypeId::Varchar.into()], LogicalTypeId::Varchar.into())]
    }
}

/// Register the pseudonym function under `key`; returns the SQL of a column's pseudonym.
pub(super) fn register_pseudonym(conn: &Connection, key: &Key) -> Result<impl Fn(&str) -> String> {
    static SERIAL: AtomicUsize = AtomicUsize::new(0);
    let name = format!("kanon_pseudonym_{}", SERIAL.fetch_add(1, Ordering::Relaxed));
    conn.register_scalar_function_with_state::<PseudonymFn>(&name, key)?;
    Ok(move |column: &str| format!("{name}(CAST({column} AS VARCHAR))"))
}

/// The SQL pieces of the write, calling `rec` through functions registered on
/// `conn` under names no other release on this connection uses.
pub(super) struct Calls {
    /// Per QI: `kanon_group_…(key) AS <group column>`, for the inner SELECT.
    pub(super) groups: Vec<String>,
    /// Per QI: `kanon_label_…(<group column>)`.
    pub(super) labels: Vec<String>,
    /// The WHERE condition.
    pub(super) kept: String,
}

/// Up to this many groups, a QI's labels are written into the statement as a
/// list; DuckDB rebuilds a constant list for every chunk of rows, so longer
/// ones go through a function.
const LITERAL_LABELS: usize = 256;

pub(super) fn register(conn: &Connection, mut rec: GroupMaps, job: &Job, columns: &[SourceColumn]) -> Result<Calls> {
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
    let dropped = std::mem::take(&mut rec.dropped);
    let rec = Arc::new(rec);
    let mut calls = Calls { groups: Vec::new(), labels: Vec::new(), kept: "true".into() };
    for (a, q) in qis.iter().enumerate() {
        let group = format!("kanon_group_{serial}_{a}");
        conn.register_scalar_function_with_state::<GroupFn>(&group, &(rec.clone(), a))?;
        calls.groups.push(format!("{group}({}) AS {}", key_expr(types[a], &format!("s.{}", ident(q))), group_col(a)));
        let labels = &rec.groups[a].labels;
        if rec.groups[a].identity {
            calls.labels.push(format!("s.{}", ident(q)));
        } else if labels.len() <= LITERAL_LABELS {
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
    if !dropped.is_empty() {
        let kept = format!("kanon_kept_{serial}");
        let dropped = Arc::new(DroppedClasses::new(&rec.groups, dropped));
        conn.register_scalar_function_with_state::<KeptFn>(&kept, &dropped)?;
        calls.kept = format!("{kept}({})", list(0..qis.len(), ", ", |a| format!("s.{}", group_col(a))));
    }
    Ok(calls)
}
