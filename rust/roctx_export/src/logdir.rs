//! The TensorBoard log directory layout XProf reads:
//! `<logdir>/plugins/profile/<run>/<host>.xplane.pb`, `<run>` a UTC `YYYY_MM_DD_hh_mm_ss`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use prost::Message;

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

/// Writes `space` as `<logdir>/plugins/profile/<run>/<host>.xplane.pb` (via a temporary file
/// and a rename, so a reader never sees half a file) and returns the path.
pub fn write(logdir: &Path, run: &str, host: &str, space: &XSpace) -> io::Result<PathBuf> {
    let dir = logdir.join("plugins").join("profile").join(run);
    fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{}.xplane.pb", safe_host(host)));
    let tmp = dir.join(format!(".{}.xplane.pb.tmp", safe_host(host)));
    fs::write(&tmp, space.encode_to_vec())?;
    fs::rename(&tmp, &path)?;
    Ok(path)
}

/// The `.xplane.pb` files a path names: the file itself, or in a log directory the files of its
/// newest run (runs sort by name, which is their time).
pub fn find_xspaces(path: &Path) -> io::Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_owned()]);
    }
    if !path.is_dir() {
        return Err(io::Error::new(io::ErrorKind::NotFound, format!("{} does not exist", path.display())));
    }
    let profile = path.join("plugins").join("profile");
    let run_root = if profile.is_dir() { profile } else { path.to_owned() };
    let mut runs: Vec<PathBuf> = fs::read_dir(&run_root)?.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect();
    runs.sort();
    let candidates = if runs.is_empty() { vec![run_root.clone()] } else { vec![runs.pop().unwrap_or_default()] };
    let mut files: Vec<PathBuf> = candidates
        .iter()
        .flat_map(|d| fs::read_dir(d).into_iter().flatten().filter_map(|e| e.ok().map(|e| e.path())))
        .filter(|p| p.to_string_lossy().ends_with(".xplane.pb"))
        .collect();
    files.sort();
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
        fs::remove_dir_all(&dir).unwrap();
    }
}
