//! The TensorBoard log directory layout XProf reads:
//! `<logdir>/plugins/profile/<run>/<host>.xplane.pb`, `<run>` a UTC `YYYY_MM_DD_hh_mm_ss` or a
//! job's name (every process of a job writes its own `<host>` file into one run).
//!
//! Owns the layout: where a session's file goes ([`write`], which never replaces a file) and
//! which files a path stands for ([`find_xspaces`]).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use prost::Message;

use crate::output::{self, FileKind};
use crate::xplane_proto::XSpace;

/// `YYYY_MM_DD_hh_mm_ss` (UTC) for `time`, TensorBoard's run-name format.
pub fn run_name(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil-from-days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}_{month:02}_{day:02}_{:02}_{:02}_{:02}", rem / 3600, (rem / 60) % 60, rem % 60)
}

/// A file-name-safe host name (XProf takes `<host>` from the file name).
pub fn safe_host(host: &str) -> String {
    let cleaned: String = host.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    if cleaned.is_empty() { "localhost".to_owned() } else { cleaned }
}

/// Writes `space` as `<logdir>/plugins/profile/<run>/<host>.xplane.pb` and returns the path.
/// `host` (made file-name-safe by [`safe_host`]) is the file's stem. The file is always new:
/// when that name is taken (a second session in the same second, or anything else put there)
/// it becomes `<host>-2.xplane.pb`, `<host>-3...` ([`output::write_new`]), so an earlier
/// capture, or whatever a link there points to, is never overwritten. A reader never sees half a
/// file, and a failed write leaves no temporary file.
pub fn write(logdir: &Path, run: &str, host: &str, space: &XSpace) -> io::Result<PathBuf> {
    write_bytes(logdir, run, host, &space.encode_to_vec())
}

/// [`write`] for a space already serialized (`xplane::standalone_xspace_bytes`).
///
/// A run directory this write created is removed again when the write fails (a full disk), so
/// that no empty run stands newest in front of the intact earlier ones. Another process of the
/// same job may have removed it between our creating it and writing: created again, once.
pub fn write_bytes(logdir: &Path, run: &str, host: &str, xspace: &[u8]) -> io::Result<PathBuf> {
    // One directory name, never a path: a run must stay inside the log directory, one level down.
    if run.is_empty() || run == "." || run == ".." || run.contains('/') || run.contains('\0') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{run:?} is not a run directory name")));
    }
    let dir = logdir.join("plugins").join("profile").join(run);
    let mut attempt = 0;
    loop {
        let created = !dir.is_dir();
        fs::create_dir_all(&dir)?;
        match output::write_new(&dir, &safe_host(host), ".xplane.pb", xspace) {
            Ok(path) => return Ok(path),
            Err(err) if err.kind() == io::ErrorKind::NotFound && attempt == 0 => attempt += 1,
            Err(err) => {
                if created {
                    let _ = fs::remove_dir(&dir); // only if still empty
                }
                return Err(err);
            }
        }
    }
}

/// The `.xplane.pb` files a path names: the file itself, the files of a run directory, or in a
/// log directory the files of its newest run that holds any: the one last written to (a run
/// named after a job id does not sort by time), the later name on a tie. A newer run without a
/// trace (a write that failed, a writer killed) is passed over.
/// A path that is neither (a FIFO, a device, ...) is an `InvalidInput` error naming what it is.
pub fn find_xspaces(path: &Path) -> io::Result<Vec<PathBuf>> {
    match fs::metadata(path) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("{} does not exist", path.display())));
        }
        Err(err) => return Err(err),
        Ok(meta) if meta.is_file() => return Ok(vec![path.to_owned()]),
        Ok(meta) if !meta.is_dir() => {
            let kind = FileKind::of(&meta.file_type()).describe();
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} is not a regular file ({kind})", path.display())));
        }
        Ok(_) => {}
    }
    let profile = path.join("plugins").join("profile");
    let run_root = if profile.is_dir() { profile } else { path.to_owned() };
    let mut runs: Vec<(SystemTime, PathBuf)> = fs::read_dir(&run_root)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .map(|p| (fs::metadata(&p).and_then(|m| m.modified()).unwrap_or(UNIX_EPOCH), p))
        .collect();
    runs.sort();
    let traces = |d: &Path| -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = fs::read_dir(d)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok().map(|e| e.path()))
            // By name: a FIFO named like a trace is the reader's to refuse, naming it.
            .filter(|p| p.to_string_lossy().ends_with(".xplane.pb"))
            .collect();
        files.sort();
        files
    };
    let files = if runs.is_empty() {
        traces(&run_root)
    } else {
        runs.iter().rev().map(|(_, d)| traces(d)).find(|f| !f.is_empty()).unwrap_or_default()
    };
    if files.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no *.xplane.pb under {} (expected <logdir>/plugins/profile/<run>/<host>.xplane.pb)", path.display()),
        ));
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_names_are_utc_timestamps() {
        // Expected values from `date -u -d @<secs> +%Y_%m_%d_%H_%M_%S`.
        assert_eq!(run_name(UNIX_EPOCH + std::time::Duration::from_secs(951_782_400)), "2000_02_29_00_00_00");
        assert_eq!(run_name(UNIX_EPOCH), "1970_01_01_00_00_00");
        assert_eq!(run_name(UNIX_EPOCH + std::time::Duration::from_secs(1_795_945_862)), "2026_11_29_09_51_02");
    }

    #[test]
    fn write_then_find_returns_the_newest_run() {
        let dir = std::env::temp_dir().join(format!("roctx_logdir_test_{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let old = write(&dir, "2020_01_01_00_00_00", "h", &XSpace::default()).unwrap();
        let new = write(&dir, "2030_01_01_00_00_00", "my host", &XSpace::default()).unwrap();
        assert!(old.exists());
        assert_eq!(new, dir.join("plugins/profile/2030_01_01_00_00_00/my_host.xplane.pb"));
        assert_eq!(find_xspaces(&dir).unwrap(), vec![new.clone()]);
        assert_eq!(find_xspaces(&new).unwrap(), vec![new]);
        assert!(find_xspaces(&dir.join("nope")).is_err());
        // A run named after a job sorts before the timestamps but was written last: it is the
        // newest. Its run directory stands for its files too.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let a = write(&dir, "12345", "h_rank0", &XSpace::default()).unwrap();
        let b = write(&dir, "12345", "h_rank1", &XSpace::default()).unwrap();
        assert_eq!(find_xspaces(&dir).unwrap(), vec![a.clone(), b.clone()]);
        assert_eq!(find_xspaces(&dir.join("plugins/profile/12345")).unwrap(), vec![a, b]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_empty_newer_run_is_passed_over_and_a_failed_write_leaves_none() {
        // Issue 25, item 14: a failed write left an empty run directory, and the CLI picked it
        // and said "no *.xplane.pb" although the earlier run was intact.
        let dir = std::env::temp_dir().join(format!("roctx_logdir_empty_{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let good = write(&dir, "2020_01_01_00_00_00", "h", &XSpace::default()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::create_dir_all(dir.join("plugins/profile/2030_01_01_00_00_00")).unwrap(); // a writer killed
        assert_eq!(find_xspaces(&dir).unwrap(), vec![good.clone()]);
        // A write that fails inside the run it created (here the file name is over 255 bytes,
        // as a full disk fails it later) takes that run directory with it.
        assert!(write(&dir, "2031_01_01_00_00_00", &"h".repeat(300), &XSpace::default()).is_err());
        assert!(!dir.join("plugins/profile/2031_01_01_00_00_00").exists());
        // One that fails in a run that existed leaves the run alone.
        assert!(write(&dir, "2020_01_01_00_00_00", &"h".repeat(300), &XSpace::default()).is_err());
        assert_eq!(find_xspaces(&dir).unwrap(), vec![good]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_second_write_of_the_same_host_and_run_gets_a_new_name_and_keeps_the_first() {
        let dir = std::env::temp_dir().join(format!("roctx_logdir_twice_{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let one = XSpace { hostnames: vec!["one".into()], ..XSpace::default() };
        let two = XSpace { hostnames: vec!["two".into()], ..XSpace::default() };
        let first = write(&dir, "2030_01_01_00_00_00", "h", &one).unwrap();
        let second = write(&dir, "2030_01_01_00_00_00", "h", &two).unwrap();
        assert_eq!(first.file_name().unwrap(), "h.xplane.pb");
        assert_eq!(second.file_name().unwrap(), "h-2.xplane.pb");
        assert_eq!(XSpace::decode(fs::read(&first).unwrap().as_slice()).unwrap(), one);
        assert_eq!(XSpace::decode(fs::read(&second).unwrap().as_slice()).unwrap(), two);
        assert_eq!(find_xspaces(&dir).unwrap(), vec![second, first]);
        let run = dir.join("plugins/profile/2030_01_01_00_00_00");
        assert_eq!(fs::read_dir(&run).unwrap().count(), 2, "a temporary file was left behind");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_device_is_named_as_such_not_as_missing() {
        let err = find_xspaces(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(err.to_string(), "/dev/zero is not a regular file (a character device)");
    }
}
