//! What `kanon pareto` reports: a typed report per search ([`FrontReport`],
//! [`ObjectivesReport`]) whose fields, in order, are the `--json` file, and
//! from which the CSV and the printed table are made.

use crate::measure::metrics::Metrics;
use crate::measure::objectives::{Objective, Scored};
use crate::report::by_qi;
use crate::search::front::Point;
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use std::fmt::Write as _;

/// A report as the command writes it: the JSON (its fields), the CSV and the
/// printed table.
pub(super) trait Rendered: Serialize {
    fn csv(&self) -> String;
    fn text(&self) -> String;
}

/// The front of k against one loss.
#[derive(Serialize)]
pub(super) struct FrontReport<'a> {
    pub(super) quasi_identifiers: &'a [String],
    pub(super) budget: u64,
    pub(super) metric: &'static str,
    pub(super) method: &'static str,
    pub(super) depth: Option<u32>,
    pub(super) front: Points<'a>,
    pub(super) nodes_evaluated: u64,
    pub(super) lattice_size: u64,
    pub(super) evaluated_percent: f64,
    pub(super) seconds: f64,
    pub(super) exhaustive: Option<TrueFront<'a>>,
}

/// `--exhaustive`: the true front, and how much of it the method found.
#[derive(Serialize)]
pub(super) struct TrueFront<'a> {
    pub(super) front: Points<'a>,
    pub(super) true_front_size: usize,
    pub(super) found: usize,
    pub(super) recall: f64,
    pub(super) missed: Points<'a>,
    pub(super) dominated_reported: Points<'a>,
    pub(super) seconds: f64,
}

/// Nodes with their k under the budget, as the JSON lists them.
pub(super) struct Points<'a> {
    pub(super) qis: &'a [String],
    pub(super) points: &'a [Point],
}

#[derive(Serialize)]
struct PointJson<'a> {
    node: serde_json::Map<String, serde_json::Value>,
    k: u64,
    suppressed: u64,
    metrics: &'a Metrics,
}

impl Serialize for Points<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.points.len()))?;
        for p in self.points {
            let node = by_qi(self.qis, &p.levels);
            seq.serialize_element(&PointJson { node, k: p.k, suppressed: p.suppressed, metrics: &p.metrics })?;
        }
        seq.end()
    }
}

impl Rendered for FrontReport<'_> {
    /// The front as CSV: the levels, k, suppressed records and every metric.
    fn csv(&self) -> String {
        let mut csv =
            format!("{},k,suppressed,glm,glm_normalized,dm,precision,height,cm\n", self.quasi_identifiers.join(","));
        for p in self.front.points {
            let m = &p.metrics;
            let levels: Vec<String> = p.levels.iter().map(|l| l.to_string()).collect();
            let cm = m.cm.map_or(String::new(), |c| c.to_string());
            let _ = writeln!(
                csv,
                "{},{},{},{},{},{},{},{},{cm}",
                levels.join(","),
                p.k,
                p.suppressed,
                m.glm,
                m.glm_normalized,
                m.dm,
                m.precision,
                m.height
            );
        }
        csv
    }

    fn text(&self) -> String {
        let mut out = format!("k\tsuppressed\t{}\tnode\n", self.metric);
        for p in self.front.points {
            let _ = writeln!(
                out,
                "{}\t{}\t{}\t{}",
                p.k,
                p.suppressed,
                p.loss,
                node_text(self.quasi_identifiers, &p.levels)
            );
        }
        let _ = writeln!(
            out,
            "{} front nodes, {} of {} nodes evaluated ({:.1}%), {}{}, {:.2} s",
            self.front.points.len(),
            self.nodes_evaluated,
            self.lattice_size,
            self.evaluated_percent,
            self.method,
            self.depth.map_or(String::new(), |d| format!(" depth {d}")),
            self.seconds
        );
        if let Some(t) = &self.exhaustive {
            let _ = writeln!(
                out,
                "exhaustive: true front {} nodes, {} found {} (recall {:.3}), {} dominated reported",
                t.true_front_size,
                self.method,
                t.found,
                t.recall,
                t.dominated_reported.points.len()
            );
        }
        out
    }
}

/// The archive (or the minimal nodes) over several objectives.
#[derive(Serialize)]
pub(super) struct ObjectivesReport<'a> {
    pub(super) method: &'static str,
    pub(super) objectives: Vec<&'static str>,
    pub(super) epsilon: &'a [f64],
    pub(super) seed: Option<u64>,
    pub(super) population: Option<usize>,
    pub(super) iterations: Option<usize>,
    pub(super) quasi_identifiers: &'a [String],
    pub(super) budget: u64,
    pub(super) solutions: Solutions<'a>,
    pub(super) nodes_evaluated: u64,
    pub(super) lattice_size: u64,
    pub(super) evaluated_percent: f64,
    pub(super) seconds: f64,
    pub(super) comparison: Option<Comparison>,
}

/// `--exhaustive`: the archive against every minimal node (docs/pareto.md).
#[derive(Serialize)]
pub(super) struct Comparison {
    pub(super) minimal: usize,
    pub(super) boxes: usize,
    pub(super) ce: f64,
    pub(super) ce_per_solution: f64,
    pub(super) rr: f64,
    pub(super) seconds: f64,
}

/// Scored nodes as the JSON lists them: levels, node, each objective by
/// name, suppressed records.
pub(super) struct Solutions<'a> {
    pub(super) qis: &'a [String],
    pub(super) objectives: &'a [Objective],
    pub(super) solutions: &'a [Scored],
}

impl Serialize for Solutions<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.solutions.len()))?;
        for solution in self.solutions {
            seq.serialize_element(&Solution { qis: self.qis, objectives: self.objectives, solution })?;
        }
        seq.end()
    }
}

struct Solution<'a> {
    qis: &'a [String],
    objectives: &'a [Objective],
    solution: &'a Scored,
}

impl Serialize for Solution<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let sol = self.solution;
        let mut map = s.serialize_map(Some(self.objectives.len() + 3))?;
        map.serialize_entry("levels", &sol.levels)?;
        map.serialize_entry("node", &by_qi(self.qis, &sol.levels))?;
        for (o, &x) in self.objectives.iter().zip(&sol.values) {
            map.serialize_entry(o.name(), &Number::of(x))?;
        }
        map.serialize_entry("suppressed", &sol.suppressed)?;
        map.end()
    }
}

impl Rendered for ObjectivesReport<'_> {
    /// The solutions as CSV: the levels, each objective, suppressed records.
    fn csv(&self) -> String {
        let mut csv = format!("{},{},suppressed\n", self.quasi_identifiers.join(","), self.objectives.join(","));
        for s in self.solutions.solutions {
            let cells: Vec<String> =
                s.levels.iter().map(|l| l.to_string()).chain(s.values.iter().map(|v| v.to_string())).collect();
            let _ = writeln!(csv, "{},{}", cells.join(","), s.suppressed);
        }
        csv
    }

    fn text(&self) -> String {
        let solutions = self.solutions.solutions;
        let mut out = format!("{}\tsuppressed\tnode\n", self.objectives.join("\t"));
        for s in solutions {
            let values: Vec<String> = s.values.iter().map(|&v| Number::of(v).to_string()).collect();
            let node = node_text(self.quasi_identifiers, &s.levels);
            let _ = writeln!(out, "{}\t{}\t{}", values.join("\t"), s.suppressed, node);
        }
        let _ = writeln!(
            out,
            "{} solutions, {} of {} nodes evaluated ({:.1}%), {}, {:.2} s",
            solutions.len(),
            self.nodes_evaluated,
            self.lattice_size,
            self.evaluated_percent,
            self.method,
            self.seconds
        );
        if let Some(c) = &self.comparison {
            let _ = writeln!(
                out,
                "exhaustive: {} minimal nodes in {} non-dominated boxes; RR {:.3}, CE {:.3e} ({:.3e} per solution)",
                c.minimal, c.boxes, c.rr, c.ce, c.ce_per_solution
            );
        }
        out
    }
}

/// An objective's value: an integer when it is one (k, l, sk, sl, dm).
#[derive(Serialize)]
#[serde(untagged)]
enum Number {
    Integer(i64),
    Real(f64),
}

impl Number {
    fn of(v: f64) -> Number {
        if v.is_finite() && v.fract() == 0.0 && v.abs() < 9e15 {
            Number::Integer(v as i64)
        } else {
            Number::Real(v)
        }
    }
}

impl std::fmt::Display for Number {
    /// As the JSON writes it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&serde_json::to_string(self).map_err(|_| std::fmt::Error)?)
    }
}

/// "q1=l1,q2=l2,…".
fn node_text(qis: &[String], levels: &[u8]) -> String {
    let node: Vec<String> = qis.iter().zip(levels).map(|(q, l)| format!("{q}={l}")).collect();
    node.join(",")
}
