//! What every SVG plot of the workspace shares: the colours of its lines
//! and its legend box. Drawn with plotters' SVG backend, whose text is SVG
//! `<text>` and needs no font files.

use plotters::prelude::*;

/// The colours of successive lines (matplotlib's first eight).
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// The legend box every plot draws, at `at`.
pub fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    at: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(at)
        .draw()
        .map_err(|e| e.to_string())
}
