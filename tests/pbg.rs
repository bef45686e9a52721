//! Multi-objective fronts (PBG-EA, `kanon pareto --objectives`): every
//! node's quality indices against a brute force over the source rows and the
//! hierarchy files written here; the exhaustive minimal set against the brute
//! force's; the archive's guarantees; the same seed, the same archive.

use kanon::job::{Column, Job};
use kanon::lattice::Lattice;
use kanon::load::load;
use kanon::measure::objectives::{Objective, Scored};
use kanon::search::pbg_ea::{self, PbgSettings};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::fmt::Write;
use std::path::Path;

/// Source rows (QI values, sensitive, label) and per QI the hierarchy rows
/// (leaf first, then each level up).
struct Fixture {
    rows: Vec<(Vec<String>, String, String)>,
    hierarchies: Vec<Vec<Vec<String>>>,
}

fn read_hierarchy(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split(';').map(str::to_string).collect())
        .collect()
}

/// The fixture coded for the brute force: per QI, level and leaf the node
/// (a value at level l is named by its path from l to the top); per QI, level
/// and node the leaves under it; the rows grouped by (leaves, sensitive, label).
struct Coded {
    node: Vec<Vec<Vec<u64>>>,
    leaves: Vec<Vec<Vec<u64>>>,
    total: Vec<u64>,
    rows: Vec<(Vec<usize>, u32, u32, u64)>,
    records: u64,
}

fn code(f: &Fixture) -> Coded {
    let (mut node, mut leaves) = (Vec::new(), Vec::new());
    for h in &f.hierarchies {
        let (mut per_level, mut under) = (Vec::new(), Vec::new());
        for l in 0..h[0].len() {
            let mut ids: HashMap<&[String], u64> = HashMap::new();
            let mut count = Vec::new();
            let mut of_leaf = Vec::new();
            for row in h {
                let next = ids.len() as u64;
                let id = *ids.entry(&row[l..]).or_insert(next);
                if id == next {
                    count.push(0);
                }
                count[id as usize] += 1;
                of_leaf.push(id);
            }
            per_level.push(of_leaf);
            under.push(count);
        }
        node.push(per_level);
        leaves.push(under);
    }
    let mut ids: HashMap<String, u32> = HashMap::new();
    let mut id = |v: &String| {
        let next = ids.len() as u32;
        *ids.entry(v.clone()).or_insert(next)
    };
    let mut grouped: HashMap<(Vec<usize>, u32, u32), u64> = HashMap::new();
    for (qi, s, y) in &f.rows {
        let leaf: Vec<usize> = qi
            .iter()
            .zip(&f.hierarchies)
            .map(|(v, h)| h.iter().position(|r| &r[0] == v).expect("a value with no leaf"))
            .collect();
        let key = (leaf, id(s), id(y));
        *grouped.entry(key).or_insert(0) += 1;
    }
    let mut rows: Vec<(Vec<usize>, u32, u32, u64)> = grouped.into_iter().map(|((l, s, y), c)| (l, s, y, c)).collect();
    rows.sort();
    Coded {
        node,
        leaves,
        total: f.hierarchies.iter().map(|h| h.len() as u64).collect(),
        rows,
        records: f.rows.len() as u64,
    }
}

#[derive(Default)]
struct Class {
    size: u64,
    sensitive: HashMap<u32, u64>,
    label: HashMap<u32, u64>,
    nodes: Vec<u64>,
}

/// Every objective (in `Objective::ALL` order) of a node, from the rows: the
/// classes are the rows' generalized tuples; the η rule picks k.
fn brute_force(c: &Coded, levels: &[u8], budget: u64) -> (u64, Vec<f64>) {
    let n = levels.len();
    let mut classes: HashMap<Vec<u64>, Class> = HashMap::new();
    for (leaf, s, y, count) in &c.rows {
        let key: Vec<u64> = (0..n).map(|a| c.node[a][levels[a] as usize][leaf[a]]).collect();
        let class = classes.entry(key.clone()).or_default();
        class.size += count;
        *class.sensitive.entry(*s).or_insert(0) += count;
        *class.label.entry(*y).or_insert(0) += count;
        class.nodes = key;
    }
    let below = |k: u64| classes.values().filter(|c| c.size < k).map(|c| c.size).sum::<u64>();
    let k = classes.values().map(|c| c.size).filter(|&k| below(k) <= budget).max().unwrap();
    let suppressed = below(k);
    let kept: Vec<&Class> = classes.values().filter(|c| c.size >= k).collect();
    let rows = c.records as f64;
    let values = Objective::ALL
        .iter()
        .map(|o| match o {
            Objective::K => k as f64,
            Objective::L => kept.iter().map(|c| c.sensitive.len()).min().unwrap() as f64,
            Objective::Sk => kept.iter().map(|c| (c.size * c.size) as f64).sum(),
            Objective::Sl => kept.iter().map(|c| c.sensitive.values().map(|v| v * v).sum::<u64>() as f64).sum(),
            Objective::Dm => kept.iter().map(|c| (c.size * c.size) as f64).sum::<f64>() + suppressed as f64 * rows,
            Objective::Cm => {
                let minority: u64 = kept.iter().map(|c| c.size - c.label.values().copied().max().unwrap()).sum();
                (minority + suppressed) as f64 / rows
            }
            Objective::Glm => {
                let mut glm = suppressed as f64 * n as f64;
                for class in &kept {
                    for a in 0..n {
                        let total = c.total[a] as f64;
                        if total > 1.0 {
                            let under = c.leaves[a][levels[a] as usize][class.nodes[a] as usize] as f64;
                            glm += class.size as f64 * (under - 1.0) / (total - 1.0);
                        }
                    }
                }
                glm
            }
        })
        .collect();
    (suppressed, values)
}

fn close(a: &[f64], b: &[f64]) -> bool {
    a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0))
}

/// Brute-force dominance, written out again here.
fn brute_dominates(objectives: &[Objective], a: &[f64], b: &[f64]) -> bool {
    let better = |o: &Objective, x: f64, y: f64| {
        if o.maximized() {
            x > y + 1e-9 * y.abs().max(1.0)
        } else {
            x < y - 1e-9 * y.abs().max(1.0)
        }
    };
    let worse = |o: &Objective, x: f64, y: f64| better(o, y, x);
    let any_better = objectives.iter().enumerate().any(|(i, o)| better(o, a[i], b[i]));
    let none_worse = objectives.iter().enumerate().all(|(i, o)| !worse(o, a[i], b[i]));
    any_better && none_worse
}

/// Check the exhaustive reference and PBG-EA on one job for several objective sets.
fn check(job: &Job, f: &Fixture, sets: &[Vec<Objective>], budget: u64, iterations: usize) {
    let mut loaded = load(job).unwrap();
    loaded.extras.spread = true;
    let lattice = Lattice::new(loaded.data.heights.clone());
    let nodes = lattice.nodes();
    let coded = code(f);
    let every: Vec<(u64, Vec<f64>)> = nodes.iter().map(|l| brute_force(&coded, l, budget)).collect();
    for objectives in sets {
        let names: Vec<&str> = objectives.iter().map(|o| o.name()).collect();
        let settings = PbgSettings {
            objectives: objectives.clone(),
            epsilon: vec![1.0; objectives.len()],
            population: 12,
            iterations,
            seed: 7,
            p_cross: 0.8,
            p_mut: None,
            budget,
        };
        let mut ev = loaded.evaluator().unwrap();
        let (minimal, all) = pbg_ea::exhaustive(&mut ev, &lattice, &settings).unwrap();
        // Every node's indices equal the brute force's.
        let pick: Vec<usize> = objectives.iter().map(|o| Objective::ALL.iter().position(|x| x == o).unwrap()).collect();
        let truth: Vec<Scored> = nodes
            .iter()
            .zip(&every)
            .map(|(l, (suppressed, v))| Scored {
                levels: l.clone(),
                values: pick.iter().map(|&i| v[i]).collect(),
                suppressed: *suppressed,
            })
            .collect();
        for (got, want) in all.iter().zip(&truth) {
            assert_eq!((&got.levels, got.suppressed), (&want.levels, want.suppressed), "{names:?}");
            assert!(
                close(&got.values, &want.values),
                "{names:?} {:?}: {:?} != {:?}",
                got.levels,
                got.values,
                want.values
            );
        }
        // The minimal set equals the brute force's.
        let mut want: Vec<Vec<u8>> = truth
            .iter()
            .filter(|p| !truth.iter().any(|q| brute_dominates(objectives, &q.values, &p.values)))
            .map(|p| p.levels.clone())
            .collect();
        let mut got: Vec<Vec<u8>> = minimal.iter().map(|p| p.levels.clone()).collect();
        want.sort();
        got.sort();
        assert_eq!(got, want, "{names:?}");
        // The archive: each member minimal, or box-dominated by no member; no
        // two share a box; the same seed gives the same archive.
        let mut ev = loaded.evaluator().unwrap();
        let found = pbg_ea::pbg_ea(&mut ev, &lattice, &settings).unwrap();
        assert!(!found.archive.is_empty());
        assert!(ev.evaluations() as usize == found.evaluated.len() && found.evaluated.len() <= nodes.len());
        for m in &found.archive {
            let t = &truth[nodes.iter().position(|l| *l == m.levels).unwrap()];
            assert!(close(&m.values, &t.values));
            let is_minimal = got.contains(&m.levels);
            let box_dominated = found.archive.iter().any(|o| {
                kanon::measure::objectives::eps_dominates(objectives, &settings.epsilon, &o.values, &m.values)
            });
            assert!(is_minimal || !box_dominated, "{names:?}: {:?}", m.levels);
            let b = kanon::measure::objectives::boxed(&m.values, &settings.epsilon);
            assert_eq!(
                found
                    .archive
                    .iter()
                    .filter(|o| kanon::measure::objectives::boxed(&o.values, &settings.epsilon) == b)
                    .count(),
                1
            );
        }
        let again = pbg_ea::pbg_ea(&mut loaded.evaluator().unwrap(), &lattice, &settings).unwrap();
        assert_eq!(again.archive, found.archive, "{names:?}");
        assert_eq!(again.evaluated.len(), found.evaluated.len());
        let c = pbg_ea::compare(objectives, &settings.epsilon, &found.archive, &minimal);
        // The comparison by its definitions over the brute force's minimal set: ce sums each
        // member's distance to the nearest minimal node (objectives scaled by their largest
        // minimal magnitude); rr is the share of the undominated ε-boxes of minimal nodes that
        // hold a member.
        let minimal_values: Vec<&Vec<f64>> =
            truth.iter().filter(|t| got.contains(&t.levels)).map(|t| &t.values).collect();
        let scale: Vec<f64> = (0..objectives.len())
            .map(|i| minimal_values.iter().map(|v| v[i].abs()).fold(0.0, f64::max))
            .map(|m| if m > 0.0 { m } else { 1.0 })
            .collect();
        let distance =
            |a: &[f64], b: &[f64]| (0..a.len()).map(|i| ((a[i] - b[i]) / scale[i]).powi(2)).sum::<f64>().sqrt();
        let ce: f64 = (found.archive.iter())
            .map(|m| minimal_values.iter().map(|v| distance(&m.values, v)).fold(f64::INFINITY, f64::min))
            .sum();
        // The box of an exact value: the brute force sums glm's fractions in hash order, so a
        // whole number may come out a rounding error under it.
        let boxed = |v: &[f64]| -> Vec<i64> {
            let edge = |q: f64| (q + 1e-9 * q.abs().max(1.0)).floor() as i64;
            v.iter().zip(&settings.epsilon).map(|(x, e)| edge(x / e)).collect()
        };
        let box_beats = |a: &[i64], b: &[i64]| {
            let no_worse =
                objectives.iter().enumerate().all(|(i, o)| if o.maximized() { a[i] >= b[i] } else { a[i] <= b[i] });
            no_worse && a != b
        };
        let mut boxes: Vec<Vec<i64>> = minimal_values.iter().map(|v| boxed(v)).collect();
        boxes.sort();
        boxes.dedup();
        let top: Vec<&Vec<i64>> = boxes.iter().filter(|b| !boxes.iter().any(|o| box_beats(o, b))).collect();
        // Members boxed by their nodes' brute-force values too (a value within rounding of a
        // box's edge falls in one box only).
        let member = |m: &Scored| &truth[nodes.iter().position(|l| *l == m.levels).unwrap()].values;
        let held = top.iter().filter(|b| found.archive.iter().any(|m| boxed(member(m)) == ***b)).count();
        assert_eq!((c.minimal, c.boxes), (minimal_values.len(), top.len()), "{names:?}");
        assert!(close(&[c.ce], &[ce]), "{names:?}: ce {} != {ce}", c.ce);
        assert_eq!(c.rr, held as f64 / top.len() as f64, "{names:?}");
    }
}

fn all_sets() -> Vec<Vec<Objective>> {
    use Objective::*;
    vec![vec![K, Glm], vec![K, L, Glm], vec![Sk, Glm], vec![Sk, Sl, Glm], vec![K, Glm, Cm], vec![L, Dm, Sl]]
}

/// A generated table with file hierarchies: zip (3 levels), age band (2),
/// sex (1); diagnosis sensitive, outcome the class label.
#[test]
fn indices_and_minimal_sets_equal_brute_force_on_a_generated_table() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut rng = StdRng::seed_from_u64(3);
    let zips: Vec<String> = (0..8).map(|i| format!("5370{i}")).collect();
    let ages: Vec<String> = (0..6).map(|i| format!("{}", 20 + 10 * i)).collect();
    let mut csv = String::from("zip;age;sex;diagnosis;outcome\n");
    let mut rows = Vec::new();
    for _ in 0..300 {
        let z = zips[(rng.random_range(0..8usize) * rng.random_range(0..=1usize)).min(7)].clone();
        let a = ages[rng.random_range(0..6usize)].clone();
        let s = ["F", "M"][rng.random_range(0..2usize)].to_string();
        let dx = ["flu", "asthma", "ulcer", "angina"][rng.random_range(0..4usize) * rng.random_range(0..=1usize)]
            .to_string();
        let y = ["yes", "no"][rng.random_range(0..2usize)].to_string();
        writeln!(csv, "{z};{a};{s};{dx};{y}").unwrap();
        rows.push((vec![z, a, s], dx, y));
    }
    std::fs::write(d.join("t.csv"), csv).unwrap();
    let zip_h: Vec<String> = zips.iter().enumerate().map(|(i, z)| format!("{z};537{}*;53*;*", i / 4)).collect();
    let age_h: Vec<String> =
        ages.iter().enumerate().map(|(i, a)| format!("{a};{};*", ["young", "mid", "old"][i / 2])).collect();
    std::fs::write(d.join("zip.csv"), zip_h.join("\n")).unwrap();
    std::fs::write(d.join("age.csv"), age_h.join("\n")).unwrap();
    std::fs::write(d.join("sex.csv"), "F;*\nM;*\n").unwrap();
    let text = "[source]\ncsv = \"t.csv\"\ndelimiter = \";\"\n[output]\ncsv = \"out.csv\"\n[privacy]\nk = 2\n\
                max_suppression = 12\nl_diversity = { column = \"diagnosis\", l = 1 }\n[search]\nclass_column = \"outcome\"\n\
                [[quasi_identifiers]]\ncolumn = \"zip\"\nhierarchy = { file = \"zip.csv\" }\n\
                [[quasi_identifiers]]\ncolumn = \"age\"\nhierarchy = { file = \"age.csv\" }\n\
                [[quasi_identifiers]]\ncolumn = \"sex\"\nhierarchy = { file = \"sex.csv\" }\n";
    let job = Job::parse(&d.join("job.toml"), text).unwrap();
    let f = Fixture {
        rows,
        hierarchies: ["zip", "age", "sex"].iter().map(|h| read_hierarchy(&d.join(format!("{h}.csv")))).collect(),
    };
    check(&job, &f, &all_sets(), 12, 30);
}

/// Adult (`../shared/data/adult`) with occupation sensitive and salary-class
/// the class label: the seven other columns are the QIs.
#[test]
fn indices_and_minimal_sets_equal_brute_force_on_adult() {
    let Some(adult) = crate::util::adult_dir() else { return };
    let qis = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass"];
    let mut text = format!(
        "[source]\ncsv = \"{}\"\ndelimiter = \";\"\n[output]\ncsv = \"out.csv\"\n[privacy]\nk = 2\nmax_suppression = 0.01\n\
         [search]\nclass_column = \"salary-class\"\n",
        adult.join("adult.csv").display()
    );
    for q in qis {
        writeln!(
            text,
            "[[quasi_identifiers]]\ncolumn = \"{q}\"\nhierarchy = {{ file = \"{}\" }}",
            adult.join(format!("hierarchy_{q}.csv")).display()
        )
        .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let mut job = Job::parse(&dir.path().join("job.toml"), &text).unwrap();
    job.sensitive = Some(Column { name: "occupation".into(), line: 0 });
    let source = std::fs::read_to_string(adult.join("adult.csv")).unwrap();
    let mut lines = source.lines();
    let header: Vec<&str> = lines.next().unwrap().split(';').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows = lines
        .map(|l| {
            let cells: Vec<&str> = l.split(';').collect();
            let qi = qis.iter().map(|q| cells[col(q)].to_string()).collect();
            (qi, cells[col("occupation")].to_string(), cells[col("salary-class")].to_string())
        })
        .collect::<Vec<_>>();
    let budget = (rows.len() as f64 * 0.01).floor() as u64;
    let f = Fixture {
        rows,
        hierarchies: qis.iter().map(|q| read_hierarchy(&adult.join(format!("hierarchy_{q}.csv")))).collect(),
    };
    use Objective::*;
    check(&job, &f, &[vec![K, L, Glm], vec![Sk, Sl, Glm], vec![K, Glm, Cm]], budget, 20);
}
