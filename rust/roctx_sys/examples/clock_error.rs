//! How far the capture clock's stamps, converted at snapshot time, land from CLOCK_BOOTTIME
//! (BENCHMARKS.md, "Capture clock"). For SECONDS (default 5), every ~100 µs: a BOOTTIME read,
//! a stamp, another BOOTTIME read. Then one calibration, as a snapshot takes it, converts every
//! stamp; its error is its distance from the window of the two reads around it (0 inside).
//!
//!   cargo run --release -p roctx_sys --example clock_error [SECONDS]
use roctx_sys::clock;
use roctx_sys::os::boottime_ns;

fn main() {
    let seconds: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(5.0);
    let (source, why) = clock::choose();
    println!("source: {source:?} ({why})");
    let end = boottime_ns() + (seconds * 1e9) as u64;
    let mut samples = Vec::new();
    while boottime_ns() < end {
        let before = boottime_ns();
        let stamp = clock::now();
        clock::maybe_note_point(stamp);
        let after = boottime_ns();
        samples.push((before, stamp, after));
        let spin_until = after + 100_000;
        while boottime_ns() < spin_until {}
    }
    let calibration = clock::calibration();
    let mut errors: Vec<u64> = samples
        .iter()
        .map(|&(before, stamp, after)| {
            let ns = calibration.to_ns(stamp);
            if ns < before {
                before - ns
            } else {
                ns.saturating_sub(after)
            }
        })
        .collect();
    let mut windows: Vec<u64> = samples.iter().map(|&(b, _, a)| a - b).collect();
    errors.sort_unstable();
    windows.sort_unstable();
    let pct = |v: &[u64], p: f64| v[((v.len() - 1) as f64 * p) as usize];
    println!(
        "{} stamps over {seconds} s, {} calibration points; read window (BOOTTIME, stamp, BOOTTIME): median {} ns",
        samples.len(),
        calibration.points().len(),
        pct(&windows, 0.5)
    );
    println!(
        "conversion error outside that window: median {} ns, p99 {} ns, max {} ns",
        pct(&errors, 0.5),
        pct(&errors, 0.99),
        errors.last().copied().unwrap_or(0)
    );
}
