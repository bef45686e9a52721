//! SVG plots of Pareto fronts: loss against k on a log k axis, and any two
//! objectives of a multi-objective front.

use crate::search::front::Point;
use anyhow::{anyhow, Result};
use plotters::prelude::*;
use std::path::Path;

/// Front nodes in red, every evaluated node in grey, the picked node (if any) in blue.
pub(super) fn front_svg(
    path: &Path,
    metric: &str,
    evaluated: &[Point],
    front: &[Point],
    picked: Option<&Point>,
) -> Result<()> {
    let all = evaluated.iter().chain(front);
    let max_k = all.clone().map(|p| p.k).max().unwrap_or(1).max(2) as f64;
    let max_loss = all.map(|p| p.loss).fold(0.0f64, f64::max).max(1e-9);
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| anyhow!("drawing {}: {e}", path.display());
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("Pareto front: {metric} against k"), ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d((1f64..max_k * 1.5).log_scale(), 0f64..max_loss * 1.05)
        .map_err(|e| err(&e))?;
    chart.configure_mesh().x_desc("k (log scale)").y_desc(metric).draw().map_err(|e| err(&e))?;
    let xy = |p: &Point| (p.k.max(1) as f64, p.loss);
    chart
        .draw_series(evaluated.iter().map(|p| Circle::new(xy(p), 3, RGBColor(170, 170, 170).filled())))
        .map_err(|e| err(&e))?
        .label("evaluated")
        .legend(|(x, y)| Circle::new((x, y), 3, RGBColor(170, 170, 170).filled()));
    let mut line: Vec<(f64, f64)> = front.iter().map(xy).collect();
    line.sort_by(|a, b| a.0.total_cmp(&b.0));
    chart.draw_series(LineSeries::new(line, RED.stroke_width(1))).map_err(|e| err(&e))?;
    chart
        .draw_series(front.iter().map(|p| Circle::new(xy(p), 5, RED.filled())))
        .map_err(|e| err(&e))?
        .label("Pareto front")
        .legend(|(x, y)| Circle::new((x, y), 5, RED.filled()));
    if let Some(p) = picked {
        chart
            .draw_series(std::iter::once(Cross::new(xy(p), 8, BLUE.stroke_width(3))))
            .map_err(|e| err(&e))?
            .label("picked")
            .legend(|(x, y)| Cross::new((x, y), 6, BLUE.stroke_width(3)));
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// Two objectives of a multi-objective front: every evaluated node in grey,
/// the front in red (linear axes).
pub(super) fn objectives_svg(
    path: &Path,
    names: (&str, &str),
    evaluated: &[(f64, f64)],
    front: &[(f64, f64)],
) -> Result<()> {
    let all = || evaluated.iter().chain(front);
    let span = |f: fn(&(f64, f64)) -> f64| {
        let (lo, hi) = all().map(f).fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
        if lo.is_finite() {
            let pad = ((hi - lo) * 0.05).max(1e-9);
            (lo - pad)..(hi + pad)
        } else {
            0.0..1.0
        }
    };
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| anyhow!("drawing {}: {e}", path.display());
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("Front: {} against {}", names.1, names.0), ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(span(|p| p.0), span(|p| p.1))
        .map_err(|e| err(&e))?;
    chart.configure_mesh().x_desc(names.0).y_desc(names.1).draw().map_err(|e| err(&e))?;
    chart
        .draw_series(evaluated.iter().map(|&p| Circle::new(p, 3, RGBColor(170, 170, 170).filled())))
        .map_err(|e| err(&e))?
        .label("evaluated")
        .legend(|(x, y)| Circle::new((x, y), 3, RGBColor(170, 170, 170).filled()));
    chart
        .draw_series(front.iter().map(|&p| Circle::new(p, 5, RED.filled())))
        .map_err(|e| err(&e))?
        .label("front")
        .legend(|(x, y)| Circle::new((x, y), 5, RED.filled()));
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
