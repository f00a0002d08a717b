//! The roofline plot: one self-contained SVG document from an [`Analysis`]. Owns the layout
//! and the escaping; computes no metric. Output is deterministic (fixed formatting, groups in
//! the analysis order), so it can be compared and committed.
//!
//! Log-log axes with a tick and label per decade: x is arithmetic intensity (FLOP/byte), y is
//! achieved FLOP/s. The bandwidth ceiling rises to each compute ceiling the groups are judged
//! against (plus RDNA's single-issue fp32 one, dashed), whose ridge point is marked. Each group
//! is a circle (`class="op"`) whose area is proportional to its total time, with a `<title>`
//! tooltip; groups without FLOPs or bytes (pure data movement) cannot sit on log axes and are
//! counted in the legend instead.

use std::fmt::Write as _;

use crate::analysis::{Analysis, Group};
use crate::peaks::Ceiling;

const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 600.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 300.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 60.0;
/// Radius of the group with the most time.
const MAX_RADIUS: f64 = 28.0;
/// Radius below which a circle would not be visible.
const MIN_RADIUS: f64 = 2.5;
/// Groups named in the legend; the rest are counted.
const LEGEND_GROUPS: usize = 12;
const PALETTE: [&str; 10] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

/// Escapes text for XML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' => out.push(' '),
            // XML 1.0 forbids C0 controls even as references, and U+FFFE/U+FFFF; C1 controls
            // are allowed but would only garble a tooltip.
            c if c.is_control() || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// `1.5 T`, `200 G`: value with an SI prefix, 3 significant digits.
pub fn si(value: f64) -> String {
    const PREFIXES: [(f64, &str); 6] = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")];
    for (scale, prefix) in PREFIXES {
        if value.abs() >= scale {
            return format!("{} {prefix}", sig3(value / scale)).trim_end().to_owned();
        }
    }
    sig3(value)
}

/// Three significant digits, no exponent for the magnitudes plotted.
fn sig3(v: f64) -> String {
    let a = v.abs();
    let decimals = if a >= 100.0 || a == 0.0 { 0 } else if a >= 10.0 { 1 } else if a >= 1.0 { 2 } else { 3 };
    format!("{v:.decimals$}")
}

/// A decade tick label: `0.01`, `1`, `1000`.
fn decade(k: i32) -> String {
    if k >= 0 {
        format!("{}", 10f64.powi(k))
    } else {
        format!("{:.*}", k.unsigned_abs() as usize, 10f64.powi(k))
    }
}

/// One ceiling line to draw.
struct Line {
    label: String,
    flops: f64,
    dashed: bool,
}

/// Log-scale axis over whole decades.
struct Axis {
    lo: i32,
    hi: i32,
    from: f64,
    to: f64,
}

impl Axis {
    fn new(min: f64, max: f64, from: f64, to: f64) -> Axis {
        // CAST: log10 of finite positive values, within ±324; clamped to ±30 decades so an
        // absurd report cannot make thousands of ticks.
        let lo = (min.log10().floor() as i32).clamp(-30, 29);
        let hi = (max.log10().ceil() as i32).clamp(lo + 1, 30);
        Axis { lo, hi, from, to }
    }

    /// The coordinate of `v`; finite for any finite `v` (0 and below sit at the smallest double).
    fn at(&self, v: f64) -> f64 {
        let t = (v.max(f64::MIN_POSITIVE).log10() - f64::from(self.lo)) / f64::from(self.hi - self.lo);
        self.from + t * (self.to - self.from)
    }
}

fn plottable(g: &Group) -> Option<(f64, f64)> {
    let ai = g.arithmetic_intensity?;
    let p = g.flops_per_s?;
    (ai > 0.0 && p > 0.0 && ai.is_finite() && p.is_finite()).then_some((ai, p))
}

/// The plot of `a`, as an SVG document.
pub fn render(a: &Analysis) -> String {
    let bw = a.peaks.as_ref().map(|p| p.mem_bw).filter(|b| *b > 0.0);
    let mut lines: Vec<Line> = Vec::new();
    let mut add = |label: String, flops: f64, dashed: bool| {
        if flops > 0.0 && !lines.iter().any(|l| l.label == label) {
            lines.push(Line { label, flops, dashed });
        }
    };
    for roof in a.groups.iter().filter_map(|g| g.roof.as_ref()) {
        add(roof.ceiling.label().to_owned(), roof.peak_flops, false);
        if let Some(s) = &roof.single_issue {
            add(Ceiling::Fp32VectorSingleIssue.label().to_owned(), s.peak_flops, true);
        }
    }
    lines.sort_by(|x, y| y.flops.total_cmp(&x.flops).then_with(|| x.label.cmp(&y.label)));
    let points: Vec<(usize, f64, f64)> = a.groups.iter().enumerate().filter_map(|(i, g)| plottable(g).map(|(ai, p)| (i, ai, p))).collect();

    // Ranges: every point, every ridge with a decade either side, every ceiling.
    let mut xs: Vec<f64> = points.iter().map(|p| p.1).collect();
    let mut ys: Vec<f64> = points.iter().map(|p| p.2).collect();
    if let Some(bw) = bw {
        for l in &lines {
            xs.extend([l.flops / bw / 10.0, l.flops / bw * 10.0]);
            ys.push(l.flops);
        }
    }
    let (xmin, xmax) = bounds(&xs, (0.1, 1000.0));
    let x = Axis::new(xmin, xmax, LEFT, WIDTH - RIGHT);
    let ymin_data = bounds(&ys, (1e9, 1e15)).0;
    let ymin = bw.map_or(ymin_data, |bw| ymin_data.min(bw * 10f64.powi(x.lo)));
    let y = Axis::new(ymin, bounds(&ys, (1e9, 1e15)).1, HEIGHT - BOTTOM, TOP);

    let mut s = String::new();
    let title = match &a.peaks {
        Some(p) => format!("Roofline: {} ({})", if a.device.is_empty() { "device unknown" } else { &a.device }, p.name),
        None => format!("Roofline: {} (no peaks)", if a.device.is_empty() { "device unknown" } else { &a.device }),
    };
    let _ = writeln!(s, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(s, r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#);
    let _ = writeln!(s, "<title>{}</title>", escape(&title));
    let _ = writeln!(s, r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#);
    let _ = writeln!(s, r#"<text x="{LEFT}" y="28" font-size="16" font-weight="bold">{}</text>"#, escape(&title));

    // Axes, decade grid and labels.
    let (px0, px1, py0, py1) = (x.from, x.to, y.from, y.to);
    let _ = writeln!(s, r##"<g class="axes" stroke="#999" stroke-width="1">"##);
    for k in x.lo..=x.hi {
        let px = x.at(10f64.powi(k));
        let _ = writeln!(s, r##"<line class="xtick" x1="{px:.2}" y1="{py1:.2}" x2="{px:.2}" y2="{py0:.2}" stroke="#eee"/>"##);
    }
    for k in y.lo..=y.hi {
        let py = y.at(10f64.powi(k));
        let _ = writeln!(s, r##"<line class="ytick" x1="{px0:.2}" y1="{py:.2}" x2="{px1:.2}" y2="{py:.2}" stroke="#eee"/>"##);
    }
    let _ = writeln!(s, r#"<rect x="{px0:.2}" y="{py1:.2}" width="{:.2}" height="{:.2}" fill="none"/>"#, px1 - px0, py0 - py1);
    let _ = writeln!(s, "</g>");
    let _ = writeln!(s, r##"<g class="labels" fill="#333">"##);
    for k in x.lo..=x.hi {
        let _ = writeln!(s, r#"<text class="xlabel" x="{:.2}" y="{:.2}" text-anchor="middle">{}</text>"#, x.at(10f64.powi(k)), py0 + 18.0, decade(k));
    }
    for k in y.lo..=y.hi {
        let _ = writeln!(s, r#"<text class="ylabel" x="{:.2}" y="{:.2}" text-anchor="end">{}</text>"#, px0 - 6.0, y.at(10f64.powi(k)) + 4.0, escape(&si(10f64.powi(k))));
    }
    let _ = writeln!(s, r#"<text x="{:.2}" y="{:.2}" text-anchor="middle">Arithmetic intensity (FLOP/byte)</text>"#, (px0 + px1) / 2.0, HEIGHT - 18.0);
    let _ = writeln!(s, r#"<text transform="translate(20 {:.2}) rotate(-90)" text-anchor="middle">Achieved performance (FLOP/s)</text>"#, (py0 + py1) / 2.0);
    let _ = writeln!(s, "</g>");

    // Ceilings: bandwidth up to the highest compute ceiling, each compute ceiling from its ridge.
    if let Some(bw) = bw {
        let top = lines.first().map_or(10f64.powi(y.hi), |l| l.flops);
        let (a0, a1) = (10f64.powi(x.lo), (top / bw).min(10f64.powi(x.hi)));
        let _ = writeln!(
            s,
            r#"<line class="ceiling bandwidth" x1="{:.2}" y1="{:.2}" x2="{:.2}" y2="{:.2}" stroke="black" stroke-width="2"><title>{}</title></line>"#,
            x.at(a0),
            y.at(a0 * bw),
            x.at(a1),
            y.at(a1 * bw),
            escape(&format!("memory bandwidth {}B/s", si(bw)))
        );
        let _ = writeln!(s, r#"<text x="{:.2}" y="{:.2}" fill="black">{}</text>"#, x.at(a0) + 6.0, y.at(a0 * bw) - 6.0, escape(&format!("{}B/s", si(bw))));
        for l in &lines {
            let ridge = l.flops / bw;
            let (rx, ry) = (x.at(ridge), y.at(l.flops));
            let dash = if l.dashed { r#" stroke-dasharray="6 4""# } else { "" };
            let text = format!("{} {}FLOP/s", l.label, si(l.flops));
            let _ = writeln!(s, r#"<line class="ceiling compute" x1="{rx:.2}" y1="{ry:.2}" x2="{px1:.2}" y2="{ry:.2}" stroke="black" stroke-width="2"{dash}><title>{}</title></line>"#, escape(&text));
            let _ = writeln!(s, r#"<text x="{px1:.2}" y="{:.2}" text-anchor="end">{}</text>"#, ry - 5.0, escape(&text));
            let ridge_text = format!("ridge {} FLOP/byte ({})", sig3(ridge), l.label);
            let _ = writeln!(s, r##"<line class="ridge-line" x1="{rx:.2}" y1="{ry:.2}" x2="{rx:.2}" y2="{py0:.2}" stroke="#888" stroke-dasharray="2 3"/>"##);
            let _ = writeln!(s, r#"<circle class="ridge" cx="{rx:.2}" cy="{ry:.2}" r="4" fill="black"><title>{}</title></circle>"#, escape(&ridge_text));
            let _ = writeln!(s, r#"<text class="ridge-label" x="{:.2}" y="{:.2}" font-size="10">{}</text>"#, rx + 5.0, ry + 14.0, sig3(ridge));
        }
    }

    // Groups, largest first so the small ones stay clickable on top.
    let max_t = points.iter().map(|&(i, _, _)| a.groups[i].total_time_us).fold(0.0, f64::max);
    let mut order = points.clone();
    order.sort_by(|p, q| a.groups[q.0].total_time_us.total_cmp(&a.groups[p.0].total_time_us).then(p.0.cmp(&q.0)));
    let _ = writeln!(s, r#"<g class="ops" stroke="black" stroke-width="0.5">"#);
    for (i, ai, p) in order {
        let g = &a.groups[i];
        let r = if max_t > 0.0 { (MAX_RADIUS * (g.total_time_us / max_t).sqrt()).max(MIN_RADIUS) } else { MIN_RADIUS };
        let _ = writeln!(
            s,
            r#"<circle class="op" cx="{:.2}" cy="{:.2}" r="{r:.2}" fill="{}" fill-opacity="0.6"><title>{}</title></circle>"#,
            x.at(ai),
            y.at(p),
            PALETTE[i % PALETTE.len()],
            escape(&tooltip(g))
        );
    }
    let _ = writeln!(s, "</g>");

    // Legend.
    let lx = WIDTH - RIGHT + 20.0;
    let mut ly = TOP + 10.0;
    let _ = writeln!(s, r#"<g class="legend">"#);
    let _ = writeln!(s, r#"<text x="{lx:.2}" y="{ly:.2}" font-weight="bold">Ops by total time (circle area)</text>"#);
    for (i, g) in a.groups.iter().enumerate().take(LEGEND_GROUPS) {
        ly += 18.0;
        let placed = if plottable(g).is_some() { "" } else { " (not plotted)" };
        let _ = writeln!(s, r#"<rect x="{lx:.2}" y="{:.2}" width="10" height="10" fill="{}" fill-opacity="0.6" stroke="black" stroke-width="0.5"/>"#, ly - 9.0, PALETTE[i % PALETTE.len()]);
        let text = format!("{} x{}, {} us{placed}", g.op, g.count, sig3(g.total_time_us));
        let _ = writeln!(s, r#"<text x="{:.2}" y="{ly:.2}"><title>{}</title>{}</text>"#, lx + 16.0, escape(&g.label), escape(&text));
    }
    if a.groups.len() > LEGEND_GROUPS {
        ly += 18.0;
        let _ = writeln!(s, r#"<text x="{lx:.2}" y="{ly:.2}">... and {} more group(s)</text>"#, a.groups.len() - LEGEND_GROUPS);
    }
    let unplotted = a.groups.len() - points.len();
    if unplotted > 0 {
        ly += 18.0;
        let _ = writeln!(s, r#"<text x="{lx:.2}" y="{ly:.2}">{unplotted} group(s) without FLOPs or bytes not plotted</text>"#);
    }
    ly += 30.0;
    let _ = writeln!(s, r#"<text x="{lx:.2}" y="{ly:.2}" font-weight="bold">Ceilings</text>"#);
    if bw.is_none() {
        ly += 18.0;
        let _ = writeln!(s, r#"<text x="{lx:.2}" y="{ly:.2}">none: no peaks for this device</text>"#);
    }
    for (label, dashed) in bw.iter().map(|bw| (format!("memory {}B/s", si(*bw)), false)).chain(lines.iter().map(|l| (format!("{} {}FLOP/s", l.label, si(l.flops)), l.dashed))) {
        ly += 18.0;
        let dash = if dashed { r#" stroke-dasharray="6 4""# } else { "" };
        let _ = writeln!(s, r#"<line x1="{lx:.2}" y1="{:.2}" x2="{:.2}" y2="{:.2}" stroke="black" stroke-width="2"{dash}/>"#, ly - 4.0, lx + 24.0, ly - 4.0);
        let _ = writeln!(s, r#"<text x="{:.2}" y="{ly:.2}">{}</text>"#, lx + 30.0, escape(&label));
    }
    if let Some(p) = &a.peaks {
        ly += 24.0;
        let _ = writeln!(s, r##"<text x="{lx:.2}" y="{ly:.2}" font-size="10" fill="#555"><title>{}</title>peaks: datasheet / derived, see tooltip</text>"##, escape(&p.source));
    }
    let _ = writeln!(s, "</g>");
    let _ = writeln!(s, "</svg>");
    s
}

/// The smallest and largest of `values`, or `default` when there are none.
fn bounds(values: &[f64], default: (f64, f64)) -> (f64, f64) {
    let ok = values.iter().copied().filter(|v| v.is_finite() && *v > 0.0);
    let min = ok.clone().fold(f64::INFINITY, f64::min);
    let max = ok.fold(0.0, f64::max);
    if min.is_finite() {
        (min, max)
    } else {
        default
    }
}

fn tooltip(g: &Group) -> String {
    let mut t = format!("{}\n{} call(s), {} us total, {} us avg", g.label, g.count, sig3(g.total_time_us), sig3(g.avg_time_us));
    if let Some(ai) = g.arithmetic_intensity {
        let _ = write!(t, "\nAI {} FLOP/byte", sig3(ai));
    }
    if let (Some(p), Some(b)) = (g.flops_per_s, g.bytes_per_s) {
        let _ = write!(t, "\n{}FLOP/s, {}B/s", si(p), si(b));
    }
    if let Some(r) = &g.roof {
        if let (Some(roof), Some(bw), Some(fl)) = (r.pct_of_roofline, r.pct_of_peak_bw, r.pct_of_peak_flops) {
            let _ = write!(t, "\n{:.1}% of roofline, {:.1}% of peak BW, {:.1}% of {} peak", roof, bw, fl, r.ceiling);
        }
        if let Some(b) = r.bound {
            let _ = write!(t, "; {}-bound", b.label());
        }
    }
    if !g.kernels.is_empty() {
        let _ = write!(t, "\nkernels: {}", g.kernels.join(", "));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_markup_quotes_and_control_characters() {
        assert_eq!(escape(r#"a<b>&"c'"#), "a&lt;b&gt;&amp;&quot;c&apos;");
        assert_eq!(escape("x\ny\u{1}\u{ffff}\u{85}\t"), "x&#10;y\u{fffd}\u{fffd}\u{fffd} ");
    }

    #[test]
    fn numbers_print_with_si_prefixes_and_decades() {
        assert_eq!(si(1.3074e15), "1.31 P");
        assert_eq!(si(256e9), "256 G");
        assert_eq!(si(5.3e12), "5.30 T");
        assert_eq!(si(0.5), "0.500");
        assert_eq!((decade(-2), decade(0), decade(3)), ("0.01".to_owned(), "1".to_owned(), "1000".to_owned()));
    }
}
