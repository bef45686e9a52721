//! The page's history chart (plotters, as `kanon pareto`'s plots): rows
//! suppressed above, risk below, run by run; a night that drifted in red.

use super::history::Row;
use anyhow::{anyhow, Result};
use plotters::prelude::*;

const BLUE_LINE: RGBColor = RGBColor(31, 119, 180);
const ORANGE_LINE: RGBColor = RGBColor(255, 127, 14);

/// Suppressed rows and risk by run, as SVG.
pub(super) fn history_svg(rows: &[Row]) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 420)).into_drawing_area();
        let err = |e: &dyn std::fmt::Display| anyhow!("drawing the history chart: {e}");
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let (top, bottom) = root.split_vertically(210);
        let n = rows.len();
        let x_range = -0.5f64..(n as f64 - 0.5).max(0.5);
        let label = |x: &f64| {
            let i = x.round();
            match (i - x).abs() < 1e-9 && i >= 0.0 && (i as usize) < n {
                true => rows[i as usize].started_at.get(5..16).unwrap_or_default().to_string(),
                false => String::new(),
            }
        };
        let labels = n.min(8);

        let suppressed: Vec<(f64, f64)> = rows.iter().enumerate().map(|(i, r)| (i as f64, r.plotted.0)).collect();
        let most = suppressed.iter().map(|p| p.1).fold(0.0, f64::max).max(1.0);
        let mut chart = ChartBuilder::on(&top)
            .caption("rows suppressed, run by run", ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(28)
            .y_label_area_size(70)
            .build_cartesian_2d(x_range.clone(), 0f64..most * 1.15)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_labels(labels)
            .x_label_formatter(&label)
            .light_line_style(WHITE)
            .draw()
            .map_err(|e| err(&e))?;
        chart.draw_series(LineSeries::new(suppressed.clone(), BLUE_LINE.stroke_width(2))).map_err(|e| err(&e))?;
        chart
            .draw_series(
                rows.iter()
                    .zip(&suppressed)
                    .map(|(r, &p)| Circle::new(p, 4, if r.plotted.3 { RED.filled() } else { BLUE_LINE.filled() })),
            )
            .map_err(|e| err(&e))?;

        let highest = rows.iter().map(|r| r.plotted.1.max(r.plotted.2)).fold(0.0, f64::max).max(0.01);
        let mut chart = ChartBuilder::on(&bottom)
            .caption("release risk, run by run (%)", ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(28)
            .y_label_area_size(70)
            .build_cartesian_2d(x_range, 0f64..100.0 * highest * 1.15)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_labels(labels)
            .x_label_formatter(&label)
            .light_line_style(WHITE)
            .draw()
            .map_err(|e| err(&e))?;
        for (name, colour, pick) in
            [("prosecutor: highest risk", BLUE_LINE, 1usize), ("marketer: success rate", ORANGE_LINE, 2usize)]
        {
            let points: Vec<(f64, f64)> = rows
                .iter()
                .enumerate()
                .map(|(i, r)| (i as f64, 100.0 * if pick == 1 { r.plotted.1 } else { r.plotted.2 }))
                .collect();
            chart
                .draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(2)));
            chart.draw_series(points.into_iter().map(|p| Circle::new(p, 3, colour.filled()))).map_err(|e| err(&e))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
    }
    Ok(svg)
}
