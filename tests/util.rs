//! What the test modules share: the binary runner, where Adult is (with the
//! one skip notice) and the hierarchy-file reader.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What one run of the binary produced.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    pub fn show(&self) -> String {
        format!("exit {}\n--- stdout\n{}\n--- stderr\n{}", self.code, self.stdout, self.stderr)
    }

    /// stdout then stderr, for tests that search both.
    pub fn both(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// Runs `kanon ARGS` with `cwd` as working directory.
pub fn kanon(cwd: &Path, args: &[&str]) -> Out {
    kanon_env(cwd, args, &[])
}

/// [`kanon`] with environment variables set; the pseudonymization key
/// (`KANON_KEY`) only when `env` gives it.
pub fn kanon_env(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_kanon"))
        .args(args)
        .current_dir(cwd)
        .env_remove("KANON_KEY")
        .envs(env.iter().copied())
        .output()
        .expect("cannot start kanon");
    Out {
        code: out.status.code().unwrap_or(-1), // -1: killed by a signal
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The repository's root.
pub fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// What a test needs is missing (a server, the shared data). In CI (`CI`
/// is `true`, as `.ci/run` sets it) that fails the test, naming it: a green
/// CI has run every test. Elsewhere (a user's clone) the test skips: the
/// notice goes to stderr and to the run's list of skips (the file
/// `KANON_SKIPS` names), which `tests/spark.sh` prints in its summary.
pub fn missing(what: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
        panic!("CI: {what} is missing, so this test cannot run (.ci/run installs and starts what the tests need)");
    }
    let test = std::thread::current().name().unwrap_or("a test").to_string();
    eprintln!("notice: {what} is missing; {test} skips");
    if let Some(path) = std::env::var_os("KANON_SKIPS") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = writeln!(f, "{test}: {what}");
        }
    }
}

/// UCI Adult with its ARX hierarchies (`../shared/data/adult`, beside the
/// clone, never part of it), canonical; None after [`missing`] when absent.
pub fn adult_dir() -> Option<PathBuf> {
    let dir = manifest_dir().join("../shared/data/adult");
    if dir.join("adult.csv").is_file() {
        Some(dir.canonicalize().unwrap())
    } else {
        missing("../shared/data/adult (UCI Adult)");
        None
    }
}

/// A hierarchy file as written: rows `leaf;level1;…;top`, in file order.
pub fn hierarchy_rows(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| l.split(';').map(String::from).collect()).collect()
}

/// A run's report without what differs by engine: timings, where the release
/// went, the job's hash.
pub fn engine_report(path: &Path) -> serde_json::Value {
    let mut r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for key in ["seconds", "output", "job_sha256"] {
        r.as_object_mut().unwrap().remove(key);
    }
    r
}

/// Every row of the DuckDB relation `relation` as text, sorted (Spark and
/// PostgreSQL keep no row order).
pub fn sorted_rows(conn: &duckdb::Connection, relation: &str) -> Vec<String> {
    let texts = |q: &str| -> Vec<String> {
        conn.prepare(q).unwrap().query_map([], |r| r.get(0)).unwrap().collect::<duckdb::Result<_>>().unwrap()
    };
    let columns = texts(&format!("SELECT column_name FROM (DESCRIBE SELECT * FROM {relation})"));
    let text = columns
        .iter()
        .map(|c| format!("coalesce(CAST(\"{c}\" AS VARCHAR), '∅')"))
        .collect::<Vec<_>>()
        .join(" || '|' || ");
    let mut rows = texts(&format!("SELECT {text} FROM {relation}"));
    rows.sort();
    rows
}

/// A minimal job on engine `kind` at `url` (written in `dir`), for a test's
/// own session with a Spark or PostgreSQL server.
pub fn engine_job(dir: &Path, kind: &str, url: &str) -> kanon::job::Job {
    let path = dir.join("session.toml");
    std::fs::write(
        &path,
        format!(
            "[engine]\nkind = \"{kind}\"\nurl = \"{url}\"\n[source]\ntable = \"t\"\n[output]\ntable = \"o\"\n\
             [privacy]\nk = 2\n[[quasi_identifiers]]\ncolumn = \"a\"\nhierarchy = \"suppress\"\n"
        ),
    )
    .unwrap();
    kanon::job::Job::load(&path).unwrap()
}

// ---------------------------------------------------------------------------------------------
// The brute force: what a node means, computed over the source rows, independent of kanon's
// evaluator and scoring (docs/semantics.md, docs/job.md for the definitions).
// ---------------------------------------------------------------------------------------------

use kanon::options::Metric;
use std::collections::HashMap;

/// A source row as the brute force reads it: each QI's value as text (as kanon matches it
/// against a hierarchy), the sensitive value and the class label (empty when unused).
#[derive(Debug, Clone)]
pub struct Row {
    pub qi: Vec<String>,
    pub sensitive: String,
    pub label: String,
}

/// A hierarchy as rows `leaf;level1;…;top`.
pub type Hierarchy = Vec<Vec<String>>;

/// Per-class models beyond k and distinct ℓ (docs/job.md).
#[derive(Debug, Clone, Copy, Default)]
pub struct Models {
    /// Entropy ℓ: a class's −Σ p ln p is at least ln ℓ.
    pub entropy_l: Option<u64>,
    /// t-closeness with the equal distance, t = numerator / denominator: ½ Σ |p − q| ≤ t,
    /// q the whole source's distribution of the sensitive column.
    pub t: Option<(u64, u64)>,
}

/// One equivalence class of a node.
#[derive(Debug, Clone)]
pub struct Class {
    pub size: u64,
    /// The generalized value of each QI (an index at the node's level).
    pub values: Vec<usize>,
    /// Records per sensitive value present: (value index, records).
    pub sensitive: Vec<(usize, u64)>,
    /// Records of the class's most frequent label.
    pub majority: u64,
    /// What one of its records costs in glm: Σ over QIs of (leaves under the value − 1) /
    /// (leaves of the QI − 1), 0 for a QI of one leaf.
    pub glm_cost: f64,
    /// The product over QIs of the leaves under the value (am).
    pub span: f64,
}

/// What the brute force requires of a node: k, distinct ℓ, the budget in rows.
#[derive(Debug, Clone, Copy)]
pub struct Req {
    pub k: u64,
    pub l: Option<u64>,
    pub budget: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BruteMetrics {
    pub glm: f64,
    pub glm_normalized: f64,
    pub dm: f64,
    pub precision: f64,
    pub height: f64,
    /// NaN without a class label.
    pub cm: f64,
    pub am: f64,
}

impl BruteMetrics {
    pub fn get(&self, m: Metric) -> f64 {
        match m {
            Metric::Glm => self.glm,
            Metric::Dm => self.dm,
            Metric::Precision => self.precision,
            Metric::Height => self.height,
            Metric::Cm => self.cm,
            Metric::Hdm => panic!("hdm is the scheme search's"),
        }
    }
}

/// A node judged against a requirement.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub levels: Vec<u8>,
    pub feasible: bool,
    pub suppressed: u64,
    /// Smallest kept class; fewest distinct sensitive values in a kept class (when ℓ is asked).
    pub k: Option<u64>,
    pub l: Option<u64>,
    /// Kept classes.
    pub classes: u64,
    pub metrics: BruteMetrics,
}

/// A node on the k-against-loss plane: its k under the budget (the largest k whose
/// suppressed records fit), what that suppresses, the chosen metric on what is kept.
#[derive(Debug, Clone, PartialEq)]
pub struct BrutePoint {
    pub levels: Vec<u8>,
    pub k: u64,
    pub suppressed: u64,
    pub loss: f64,
    /// The metric with every class kept, nothing suppressed.
    pub floor: f64,
}

/// Equal up to rounding (sums added in another order).
pub fn same(x: f64, y: f64) -> bool {
    (x.is_nan() && y.is_nan()) || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0)
}

/// A source's rows coded against its hierarchies, ready to be grouped at any node.
pub struct BruteForce {
    pub heights: Vec<u8>,
    /// Leaves per QI (rows of its hierarchy).
    pub leaves: Vec<u64>,
    pub rows: u64,
    pub models: Models,
    /// Is there a class label (for cm)?
    labelled: bool,
    /// Per QI, level and leaf: the index of the leaf's value at that level.
    up: Vec<Vec<Vec<usize>>>,
    /// Per QI, level and value index: the leaves under the value.
    under: Vec<Vec<Vec<u64>>>,
    /// The rows grouped: leaf per QI, sensitive index, label index, records.
    groups: Vec<(Vec<usize>, usize, usize, u64)>,
    /// Records per sensitive value index over the whole source.
    source_sensitive: Vec<u64>,
}

impl BruteForce {
    /// Code `rows` against `hierarchies` (one per QI, in QI order; blank rows and repeated
    /// identical rows dropped as kanon does). Panics on a value that is no leaf.
    pub fn new(rows: &[Row], hierarchies: &[Hierarchy], labelled: bool, models: Models) -> BruteForce {
        let mut up = Vec::new();
        let mut under = Vec::new();
        let mut heights = Vec::new();
        let mut leaves = Vec::new();
        let mut leaf_index: Vec<HashMap<String, usize>> = Vec::new();
        for h in hierarchies {
            let mut seen = std::collections::HashSet::new();
            let h: Vec<&Vec<String>> =
                h.iter().filter(|r| !(r.len() == 1 && r[0].is_empty())).filter(|r| seen.insert(r.to_vec())).collect();
            let height = h[0].len() - 1;
            assert!(h.iter().all(|r| r.len() == height + 1), "ragged hierarchy");
            let (mut per_level, mut counts) = (Vec::new(), Vec::new());
            for l in 0..=height {
                let mut ids: HashMap<&str, usize> = HashMap::new();
                let mut count: Vec<u64> = Vec::new();
                let mut of_leaf = Vec::new();
                for r in &h {
                    let next = ids.len();
                    let id = *ids.entry(r[l].as_str()).or_insert(next);
                    if id == count.len() {
                        count.push(0);
                    }
                    count[id] += 1;
                    of_leaf.push(id);
                }
                per_level.push(of_leaf);
                counts.push(count);
            }
            assert_eq!(counts[height].len(), 1, "the top level must be one value");
            leaf_index.push(h.iter().enumerate().map(|(i, r)| (r[0].clone(), i)).collect());
            heights.push(height as u8);
            leaves.push(h.len() as u64);
            up.push(per_level);
            under.push(counts);
        }
        let (mut sensitive_ids, mut label_ids): (HashMap<&str, usize>, HashMap<&str, usize>) = Default::default();
        let mut grouped: HashMap<(Vec<usize>, usize, usize), u64> = HashMap::new();
        let mut source_sensitive: Vec<u64> = Vec::new();
        for r in rows {
            let leaf: Vec<usize> = (r.qi.iter().zip(&leaf_index))
                .map(|(v, ix)| *ix.get(v).unwrap_or_else(|| panic!("{v:?} is no leaf")))
                .collect();
            let next = sensitive_ids.len();
            let s = *sensitive_ids.entry(r.sensitive.as_str()).or_insert(next);
            if s == source_sensitive.len() {
                source_sensitive.push(0);
            }
            source_sensitive[s] += 1;
            let next = label_ids.len();
            let y = *label_ids.entry(r.label.as_str()).or_insert(next);
            *grouped.entry((leaf, s, y)).or_insert(0) += 1;
        }
        let mut groups: Vec<(Vec<usize>, usize, usize, u64)> =
            grouped.into_iter().map(|((l, s, y), c)| (l, s, y, c)).collect();
        groups.sort();
        BruteForce { heights, leaves, rows: rows.len() as u64, models, labelled, up, under, groups, source_sensitive }
    }

    /// Every node of the lattice, lexicographically.
    pub fn nodes(&self) -> Vec<Vec<u8>> {
        let mut out = vec![Vec::new()];
        for &h in &self.heights {
            out = out.into_iter().flat_map(|n: Vec<u8>| (0..=h).map(move |l| [n.clone(), vec![l]].concat())).collect();
        }
        out
    }

    /// The node's equivalence classes: the rows grouped by their generalized values.
    pub fn classes(&self, levels: &[u8]) -> Vec<Class> {
        // A class is named by its values in mixed radix (the values each QI has at its level):
        // per QI and leaf, what the leaf's value adds to the name.
        let mut stride: u128 = 1;
        let mut adds: Vec<Vec<u128>> = Vec::new();
        for (a, &l) in levels.iter().enumerate() {
            adds.push(self.up[a][l as usize].iter().map(|&v| v as u128 * stride).collect());
            stride = stride.checked_mul(self.under[a][l as usize].len() as u128).expect("too many classes for a key");
        }
        let mut index: rustc_hash::FxHashMap<u128, usize> = Default::default();
        let mut classes: Vec<Class> = Vec::new();
        let mut labels: Vec<Vec<(usize, u64)>> = Vec::new();
        // Add `count` to value `v`'s tally in a short list of (value, records).
        let tally = |list: &mut Vec<(usize, u64)>, v: usize, count: u64| match list.iter_mut().find(|(x, _)| *x == v) {
            Some((_, n)) => *n += count,
            None => list.push((v, count)),
        };
        for (leaf, s, y, count) in &self.groups {
            let key: u128 = adds.iter().zip(leaf).map(|(add, &leaf)| add[leaf]).sum();
            let i = *index.entry(key).or_insert_with(|| {
                let values = (0..levels.len()).map(|a| self.up[a][levels[a] as usize][leaf[a]]).collect();
                classes.push(Class { size: 0, values, sensitive: Vec::new(), majority: 0, glm_cost: 0.0, span: 0.0 });
                labels.push(Vec::new());
                classes.len() - 1
            });
            classes[i].size += count;
            tally(&mut classes[i].sensitive, *s, *count);
            tally(&mut labels[i], *y, *count);
        }
        for (c, l) in classes.iter_mut().zip(labels) {
            c.majority = l.iter().map(|&(_, n)| n).max().unwrap();
            let under: Vec<f64> =
                (0..levels.len()).map(|a| self.under[a][levels[a] as usize][c.values[a]] as f64).collect();
            c.glm_cost = (0..levels.len())
                .filter(|&a| self.leaves[a] > 1)
                .map(|a| (under[a] - 1.0) / (self.leaves[a] - 1) as f64)
                .sum();
            c.span = under.iter().product();
        }
        classes
    }

    /// Do the per-class models (entropy ℓ, t-closeness) accept the class?
    pub fn admitted(&self, c: &Class) -> bool {
        let entropy_ok = self.models.entropy_l.is_none_or(|l| {
            let n = c.size as f64;
            let h: f64 = c.sensitive.iter().map(|&(_, x)| x as f64 / n).map(|p| -p * p.ln()).sum();
            h >= (l as f64).ln() - 1e-12
        });
        let t_ok = self.models.t.is_none_or(|(num, den)| {
            // ½ Σ |c_v / n − q_v / N| ≤ num / den, in whole numbers.
            let (n, total) = (c.size as i128, self.rows as i128);
            let count = |v: usize| c.sensitive.iter().find(|&&(x, _)| x == v).map_or(0, |&(_, n)| n);
            let sum: i128 = (self.source_sensitive.iter().enumerate())
                .map(|(v, &q)| (count(v) as i128 * total - q as i128 * n).abs())
                .sum();
            sum * den as i128 <= 2 * num as i128 * n * total
        });
        entropy_ok && t_ok
    }

    /// The metrics of a release keeping `kept` (the rest suppressed).
    pub fn metrics(&self, levels: &[u8], kept: &[&Class]) -> BruteMetrics {
        let n = levels.len();
        let rows = self.rows as f64;
        let suppressed = self.rows - kept.iter().map(|c| c.size).sum::<u64>();
        let glm = (suppressed * n as u64) as f64 + kept.iter().map(|c| c.size as f64 * c.glm_cost).sum::<f64>();
        let dm = kept.iter().map(|c| (c.size * c.size) as f64).sum::<f64>() + suppressed as f64 * rows;
        let precision = 1.0
            - (0..n)
                .map(|a| if self.heights[a] == 0 { 0.0 } else { levels[a] as f64 / self.heights[a] as f64 })
                .sum::<f64>()
                / n as f64;
        let cm = if self.labelled {
            (kept.iter().map(|c| c.size - c.majority).sum::<u64>() + suppressed) as f64 / rows
        } else {
            f64::NAN
        };
        let all: f64 = self.leaves.iter().map(|&l| l as f64).product();
        let am = (kept.iter().map(|c| c.size as f64 * c.span).sum::<f64>() + suppressed as f64 * all) / rows;
        BruteMetrics {
            glm,
            glm_normalized: glm / (rows * n as f64),
            dm,
            precision,
            height: levels.iter().map(|&l| l as f64).sum(),
            cm,
            am,
        }
    }

    /// The node under `req`: the classes under k, under distinct ℓ or rejected by the models
    /// are suppressed; feasible when they fit the budget.
    pub fn judge(&self, levels: &[u8], classes: &[Class], req: &Req) -> Judged {
        let kept: Vec<&Class> = (classes.iter())
            .filter(|c| c.size >= req.k && req.l.is_none_or(|l| c.sensitive.len() as u64 >= l) && self.admitted(c))
            .collect();
        let suppressed = self.rows - kept.iter().map(|c| c.size).sum::<u64>();
        Judged {
            levels: levels.to_vec(),
            feasible: suppressed <= req.budget,
            suppressed,
            k: kept.iter().map(|c| c.size).min(),
            l: req.l.and(kept.iter().map(|c| c.sensitive.len() as u64).min()),
            classes: kept.len() as u64,
            metrics: self.metrics(levels, &kept),
        }
    }

    /// The node on the k-against-loss plane under `budget` (docs/searches.md): k is the largest
    /// class size s for which the records in classes under s, and in classes the models reject,
    /// fit the budget (0 when none does).
    pub fn point(&self, levels: &[u8], classes: &[Class], budget: u64, metric: Metric) -> BrutePoint {
        let rejected: u64 = classes.iter().filter(|c| !self.admitted(c)).map(|c| c.size).sum();
        // The admitted sizes ascending: at each, the records of the admitted classes smaller.
        let mut sizes: Vec<u64> = classes.iter().filter(|c| self.admitted(c)).map(|c| c.size).collect();
        sizes.sort_unstable();
        let (mut k, mut smaller, mut before) = (0, 0, 0);
        for (i, &size) in sizes.iter().enumerate() {
            if i > 0 && sizes[i - 1] < size {
                smaller = before; // Σ sizes[..i], every one under `size`
            }
            if rejected + smaller <= budget {
                k = size;
            }
            before += size;
        }
        let kept: Vec<&Class> = classes.iter().filter(|c| c.size >= k && self.admitted(c)).collect();
        let everything: Vec<&Class> = classes.iter().collect();
        BrutePoint {
            levels: levels.to_vec(),
            k,
            suppressed: self.rows - kept.iter().map(|c| c.size).sum::<u64>(),
            loss: self.metrics(levels, &kept).get(metric),
            floor: self.metrics(levels, &everything).get(metric),
        }
    }

    /// Every node judged against `req`, lexicographically.
    pub fn judge_all(&self, req: &Req) -> Vec<Judged> {
        self.judge_many(std::slice::from_ref(req)).pop().unwrap()
    }

    /// Per requirement, every node judged against it, lexicographically (each node grouped once).
    pub fn judge_many(&self, reqs: &[Req]) -> Vec<Vec<Judged>> {
        let mut out = vec![Vec::new(); reqs.len()];
        for levels in self.nodes() {
            let classes = self.classes(&levels);
            for (req, judged) in reqs.iter().zip(&mut out) {
                judged.push(self.judge(&levels, &classes, req));
            }
        }
        out
    }

    /// Per (budget, metric), every node's point, lexicographically (each node grouped once).
    pub fn points_many(&self, cases: &[(u64, Metric)]) -> Vec<Vec<BrutePoint>> {
        let mut out = vec![Vec::new(); cases.len()];
        for levels in self.nodes() {
            let classes = self.classes(&levels);
            for (&(budget, metric), points) in cases.iter().zip(&mut out) {
                points.push(self.point(&levels, &classes, budget, metric));
            }
        }
        out
    }

    /// Per QI, glm's loss with nothing suppressed: Σ over classes of size × (leaves under − 1)
    /// / (leaves − 1).
    pub fn glm_per_qi(&self, levels: &[u8], classes: &[Class]) -> Vec<f64> {
        (0..levels.len())
            .map(|a| {
                if self.leaves[a] <= 1 {
                    return 0.0;
                }
                let sum: f64 = (classes.iter())
                    .map(|c| c.size as f64 * (self.under[a][levels[a] as usize][c.values[a]] as f64 - 1.0))
                    .sum();
                sum / (self.leaves[a] - 1) as f64
            })
            .collect()
    }
}

/// The feasible nodes, sorted.
pub fn brute_feasible(judged: &[Judged]) -> Vec<Vec<u8>> {
    let mut f: Vec<Vec<u8>> = judged.iter().filter(|j| j.feasible).map(|j| j.levels.clone()).collect();
    f.sort();
    f
}

/// The optimum of the feasible nodes for `metric` (docs/semantics.md): least loss (most
/// precision), then the lower sum of levels, then the lexicographically smaller levels.
pub fn brute_optimum(judged: &[Judged], metric: Metric) -> Option<Judged> {
    let sum = |l: &[u8]| l.iter().map(|&v| v as u32).sum::<u32>();
    let wins = |a: &Judged, b: &Judged| {
        let (x, y) = (a.metrics.get(metric), b.metrics.get(metric));
        if !same(x, y) {
            return if metric == Metric::Precision { x > y } else { x < y };
        }
        (sum(&a.levels), &a.levels) < (sum(&b.levels), &b.levels)
    };
    let mut best: Option<&Judged> = None;
    for j in judged.iter().filter(|j| j.feasible) {
        if best.is_none_or(|b| wins(j, b)) {
            best = Some(j);
        }
    }
    best.cloned()
}

/// The Pareto front of k (more is better) against loss (less is better) by its definition:
/// the nodes of k > 0 that no node beats (at least the k for less loss, or more k for no more
/// loss); of nodes with the same k and loss, the lower sum of levels, then the smaller levels;
/// by k descending.
pub fn brute_front(points: &[BrutePoint]) -> Vec<BrutePoint> {
    let less = |a: f64, b: f64| a < b && !same(a, b);
    let beats = |a: &BrutePoint, b: &BrutePoint| {
        (a.k >= b.k && less(a.loss, b.loss)) || (a.k > b.k && (a.loss <= b.loss || same(a.loss, b.loss)))
    };
    let sum = |l: &[u8]| l.iter().map(|&v| v as u32).sum::<u32>();
    let candidates: Vec<&BrutePoint> = points.iter().filter(|p| p.k > 0).collect();
    let mut front: Vec<BrutePoint> = Vec::new();
    for p in &candidates {
        if candidates.iter().any(|q| beats(q, p)) {
            continue;
        }
        let twins = candidates.iter().filter(|q| q.k == p.k && same(q.loss, p.loss));
        if twins.min_by_key(|q| (sum(&q.levels), q.levels.clone())).unwrap().levels == p.levels {
            front.push((*p).clone());
        }
    }
    front.sort_by(|a, b| b.k.cmp(&a.k));
    front
}

// Hierarchies as the job's built-in kinds define them (docs/job.md), over the distinct values
// of a column, for the brute force.

fn distinct(values: &[String]) -> Vec<String> {
    let mut v = values.to_vec();
    v.sort();
    v.dedup();
    v
}

/// `{ mask = n }`: level i masks the last i characters with `*`; a level `*` on top when
/// level n still has more than one value.
pub fn mask_hierarchy(values: &[String], n: usize) -> Hierarchy {
    let masked = |v: &str, i: usize| {
        let chars: Vec<char> = v.chars().collect();
        let keep = chars.len().saturating_sub(i);
        chars[..keep].iter().collect::<String>() + &"*".repeat(chars.len() - keep)
    };
    let values = distinct(values);
    let mut h: Hierarchy = values.iter().map(|v| (0..=n).map(|i| masked(v, i)).collect()).collect();
    if distinct(&h.iter().map(|r| r[n].clone()).collect::<Vec<_>>()).len() > 1 {
        h.iter_mut().for_each(|r| r.push("*".into()));
    }
    h
}

/// `{ intervals = [w1, …] }`: level i is the band [lo, lo + wi) with lo = floor(x / wi) · wi;
/// then `*`.
pub fn intervals_hierarchy(values: &[String], widths: &[f64]) -> Hierarchy {
    distinct(values)
        .into_iter()
        .map(|v| {
            let x: f64 = v.parse().unwrap();
            let mut r = vec![v];
            r.extend(widths.iter().map(|w| format!("[{}, {})", (x / w).floor() * w, (x / w).floor() * w + w)));
            r.push("*".into());
            r
        })
        .collect()
}

/// `{ date = [units] }` over ISO dates (`YYYY-MM-DD`): each unit a truncation (`month`
/// 2024-03, `quarter` 2024-Q1, `year` 2024, `decade` 2020s, `century` 2000s); then `*`.
pub fn date_hierarchy(values: &[String], units: &[&str]) -> Hierarchy {
    distinct(values)
        .into_iter()
        .map(|v| {
            let year: i32 = v[..4].parse().unwrap();
            let month: u32 = v[5..7].parse().unwrap();
            let mut r = vec![v.clone()];
            r.extend(units.iter().map(|u| match *u {
                "month" => format!("{year}-{month:02}"),
                "quarter" => format!("{year}-Q{}", (month - 1) / 3 + 1),
                "year" => format!("{year}"),
                "decade" => format!("{}s", year.div_euclid(10) * 10),
                "century" => format!("{}s", year.div_euclid(100) * 100),
                other => panic!("unknown date unit {other}"),
            }));
            r.push("*".into());
            r
        })
        .collect()
}

/// `"suppress"`: value → `*`.
pub fn suppress_hierarchy(values: &[String]) -> Hierarchy {
    distinct(values).into_iter().map(|v| vec![v, "*".into()]).collect()
}

/// A `;`- or `,`-separated text file with a header line (no quoting), as rows of cells.
pub fn read_delimited(path: &Path, delimiter: char) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines().filter(|l| !l.is_empty());
    let header = lines.next().unwrap().split(delimiter).map(String::from).collect();
    (header, lines.map(|l| l.split(delimiter).map(String::from).collect()).collect())
}

/// Brute-force rows from a header and cells: the QIs, the sensitive column and the label by name.
pub fn brute_rows(
    header: &[String],
    cells: &[Vec<String>],
    qis: &[&str],
    sensitive: Option<&str>,
    label: Option<&str>,
) -> Vec<Row> {
    let col = |name: &str| header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"));
    let qi: Vec<usize> = qis.iter().map(|q| col(q)).collect();
    let (s, y) = (sensitive.map(col), label.map(col));
    cells
        .iter()
        .map(|r| Row {
            qi: qi.iter().map(|&i| r[i].clone()).collect(),
            sensitive: s.map_or(String::new(), |i| r[i].clone()),
            label: y.map_or(String::new(), |i| r[i].clone()),
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Every built-in hierarchy kind on the column types the engines recode by expression, for the
// engine release tests (tests/spark.rs, tests/postgres.rs).
// ---------------------------------------------------------------------------------------------

/// Per QI of [`every_kind`]: its column, hierarchy height, and the levels at which the release
/// on Spark and PostgreSQL joins its value → label map (at the others an expression gives its
/// labels): a double's, a decimal's or a timestamp's leaves (their text is not DuckDB's), a
/// fractional width, a file hierarchy above its leaves.
pub const EVERY_KIND: [(&str, u8, &[u8]); 9] = [
    ("code", 4, &[]),
    ("zip", 3, &[]),
    ("age", 4, &[]),
    ("score", 3, &[0]),
    ("amount", 3, &[0, 1]),
    ("day", 6, &[]),
    ("ts", 3, &[0]),
    ("sex", 1, &[]),
    ("grade", 2, &[1, 2]),
];

/// 400 rows (a Parquet file in `dir`) whose QIs take every built-in hierarchy kind, and the
/// job's QIs: text masked (values of several lengths: a `*` on top), an integer masked,
/// integer / double / decimal intervals (negative values, a fractional width), every date
/// unit over three centuries, a timestamp by month and year, a suppressed text, and a file
/// hierarchy with a NULL leaf. Returns (parquet, the QIs' TOML).
pub fn every_kind(dir: &Path) -> (PathBuf, String) {
    let parquet = dir.join("kinds.parquet");
    duckdb::Connection::open_in_memory()
        .unwrap()
        .execute_batch(&format!(
            "COPY (SELECT i AS id, substr('ABCDEFG', 1, 1 + i % 5) || (i % 3)::VARCHAR AS code,
                   (53700 + (i % 37) * 13)::INTEGER AS zip, ((i % 90) - 5)::INTEGER AS age,
                   ((i % 61) - 20) * 0.75 AS score, ((i % 47) * 1.25)::DECIMAL(8,2) AS amount,
                   DATE '1899-12-25' + (i * 97)::INTEGER AS day,
                   TIMESTAMP '2023-12-31 22:30:00' + INTERVAL (i * 7) HOUR AS ts,
                   ['F', 'M'][1 + i % 2] AS sex,
                   CASE WHEN i % 10 = 3 THEN NULL ELSE ['a', 'b', 'c'][1 + i % 3] END AS grade
                   FROM range(400) r(i)) TO '{}' (FORMAT PARQUET)",
            parquet.display()
        ))
        .unwrap();
    let grades = dir.join("grades.csv");
    std::fs::write(&grades, "a;low;*\nb;low;*\nc;high;*\nNULL;unknown;*\n").unwrap();
    let mut qis = String::new();
    for (q, h) in [
        ("code", "{ mask = 3 }".to_string()),
        ("zip", "{ mask = 2 }".into()),
        ("age", "{ intervals = [5, 10, 20] }".into()),
        ("score", "{ intervals = [2, 10] }".into()),
        ("amount", "{ intervals = [2.5, 5] }".into()),
        ("day", "{ date = [\"month\", \"quarter\", \"year\", \"decade\", \"century\"] }".into()),
        ("ts", "{ date = [\"month\", \"year\"] }".into()),
        ("sex", "\"suppress\"".into()),
        ("grade", format!("{{ file = \"{}\" }}", grades.display())),
    ] {
        qis.push_str(&format!("[[quasi_identifiers]]\ncolumn = \"{q}\"\nhierarchy = {h}\n"));
    }
    (parquet, qis)
}

/// The node of [`EVERY_KIND`] with every QI at `level`, or at its top when lower.
pub fn every_kind_node(level: u8) -> String {
    EVERY_KIND.iter().map(|(q, h, _)| format!("{q}={}", level.min(*h))).collect::<Vec<_>>().join(",")
}

/// Checks that `trace` (`KANON_TRACE`'s lines `recoding: … by …`) says each QI of
/// [`EVERY_KIND`] at [`every_kind_node`]`(level)` was recoded as [`EVERY_KIND`] says.
pub fn check_every_kind_recoding(trace: &str, level: u8) {
    for (q, h, maps_at) in EVERY_KIND {
        let l = level.min(h);
        let how = if maps_at.contains(&l) { "its map" } else { "an expression" };
        let line = format!("recoding: {q} at level {l} by {how}");
        assert!(trace.contains(&line), "expected \"{line}\" in the trace:\n{trace}");
    }
}

/// An event table for `[privacy] person` on the engines (tests/postgres.rs,
/// tests/spark.rs): `visits.parquet` in `dir`, 300 persons with 1 to 9 visits
/// (birth year and sex per person, month and ward per visit) and 3 outliers
/// born a century earlier, whom the optimum drops, and the job's
/// body: k = 3 persons, at most 4 persons suppressed, `person = "member"`.
pub fn visits_case(dir: &Path) -> (PathBuf, String) {
    visits_case_of(dir, "visits.parquet", "'m' || p", "'x' || i")
}

/// [`visits_case`] with integer persons (`visits_int.parquet`: 0..300 and the
/// outliers 1000..1003), which kanon codes by arithmetic on DuckDB.
pub fn visits_case_integer(dir: &Path) -> (PathBuf, String) {
    visits_case_of(dir, "visits_int.parquet", "p", "1000 + i")
}

fn visits_case_of(dir: &Path, file: &str, member: &str, outlier: &str) -> (PathBuf, String) {
    let parquet = dir.join(file);
    duckdb::Connection::open_in_memory()
        .unwrap()
        .execute_batch(&format!(
            "COPY (SELECT {member} AS member, 1940 + (p * 7) % 45 AS birth, CASE WHEN p % 3 = 0 THEN 'F' ELSE 'M' END AS sex,
                   1 + (p * 5 + v * 11) % 12 AS month, (['A', 'B', 'C', 'D'])[1 + (p + v * (p % 2)) % 4] AS ward,
                   v * 10 AS cost
                   FROM range(300) t(p), range(1 + p % 9) r(v)
                   UNION ALL
                   SELECT {outlier}, 1800 + 30 * i, 'F', 1 + i, 'A', 5 FROM range(3) t(i)) TO '{}' (FORMAT PARQUET)",
            parquet.display()
        ))
        .unwrap();
    let body = "[privacy]\nk = 3\nmax_suppression = 4\nperson = \"member\"\n\
        [[quasi_identifiers]]\ncolumn = \"birth\"\nhierarchy = { intervals = [5, 10, 20] }\n\
        [[quasi_identifiers]]\ncolumn = \"sex\"\nhierarchy = \"suppress\"\n\
        [[quasi_identifiers]]\ncolumn = \"month\"\nhierarchy = { intervals = [3, 6] }\n\
        [[quasi_identifiers]]\ncolumn = \"ward\"\nhierarchy = \"suppress\"\n";
    (parquet, body.to_string())
}
