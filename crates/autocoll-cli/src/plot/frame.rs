//! The frame every plot of the command draws in: a white SVG canvas, a
//! chart with its caption and room for the axes' labels, and lines with
//! their legend entries.

use plotters::coord::ranged1d::AsRangedCoord;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

/// The drawing area of an SVG canvas.
pub(crate) type Area<'b> = DrawingArea<SVGBackend<'b>, Shift>;

/// The SVG text of a `size` canvas on white, on which `draw` draws.
pub(crate) fn canvas(
    size: (u32, u32),
    draw: impl FnOnce(&Area) -> Result<(), String>,
) -> Result<String, String> {
    let mut text = String::new();
    {
        let area = SVGBackend::with_string(&mut text, size).into_drawing_area();
        area.fill(&WHITE).map_err(|e| e.to_string())?;
        draw(&area)?;
        area.present().map_err(|e| e.to_string())?;
    }
    Ok(text)
}

/// A chart drawn on an SVG canvas, over `X` × `Y`.
pub(crate) type Chart<'c, 'b, X, Y> = ChartContext<'c, SVGBackend<'b>, Cartesian2d<X, Y>>;

/// A chart on `area` over `x` × `y`, captioned `title`, with
/// `label_areas` pixels (below, left) for the axes' labels.
pub(crate) fn chart<'c, 'b, X: AsRangedCoord, Y: AsRangedCoord>(
    area: &Area<'b>,
    title: &str,
    label_areas: (u32, u32),
    x: X,
    y: Y,
) -> Result<Chart<'c, 'b, X::CoordDescType, Y::CoordDescType>, String> {
    ChartBuilder::on(area)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(label_areas.0)
        .y_label_area_size(label_areas.1)
        .build_cartesian_2d(x, y)
        .map_err(|e| e.to_string())
}

/// Draws `points` as a line in `style`, dashed (dash, gap pixels) where
/// `dash` says, with the legend entry `label`.
pub(crate) fn line<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    points: Vec<CT::From>,
    style: ShapeStyle,
    dash: Option<(i32, i32)>,
    label: String,
) -> Result<(), String>
where
    CT::From: Clone + 'static,
{
    let series = match dash {
        None => chart.draw_series(LineSeries::new(points, style)),
        Some((d, g)) => chart.draw_series(DashedLineSeries::new(points, d, g, style)),
    }
    .map_err(|e| e.to_string())?;
    series.label(label).legend(swatch(style, dash));
    Ok(())
}

/// A line's sample in the legend: drawn in `style`, its dashes at half
/// the line's length to fit the sample's short stretch.
pub(crate) fn swatch<DB: DrawingBackend>(
    style: ShapeStyle,
    dash: Option<(i32, i32)>,
) -> impl Fn((i32, i32)) -> DynElement<'static, DB, (i32, i32)> {
    move |(x, y)| match dash {
        None => PathElement::new(vec![(x, y), (x + 24, y)], style).into_dyn(),
        Some((d, g)) => {
            DashedPathElement::new(vec![(x, y), (x + 24, y)], d / 2, g / 2, style).into_dyn()
        }
    }
}
