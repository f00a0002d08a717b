//! Writing files without destroying what is there.
//!
//! Owns the output policy of every writer in the workspace (the `roctx` CLI's `-o`, the log
//! directory writer): a file is written in full to a temporary file in the destination
//! directory and only then given its name, so a reader never sees half a file, and the
//! temporary file is removed on every failure (a full disk or a file size limit midway, a
//! failed compressor). Two ways to give it its name:
//!
//! - [`replace_regular`] / [`replace_regular_with`] rename it over the destination, which may
//!   only be missing or a **regular file**. A directory, FIFO, socket, device or symbolic link
//!   there is refused with a [`NotRegular`] error: a rename would silently put a regular file in
//!   place of a device or a pipe someone is reading, and for a link it would replace the link
//!   rather than write where it points. Links are refused as the final path component on
//!   purpose; the caller can name the target.
//! - [`write_new`] never replaces anything: it links the temporary file to `<stem><ext>`, or to
//!   `<stem>-2<ext>`, `<stem>-3<ext>`, ... when that exists, and returns the name it took.
//!
//! Never reads, and says nothing itself: the errors are `io::Error`s for the caller to word.

use std::error::Error;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// How many names [`write_new`] tries (`<stem><ext>`, then `-2` ... `-1000`) before giving up.
pub const MAX_NEW_NAMES: u32 = 1000;

/// What a path is, as far as writing over it is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file: the only thing an output may replace.
    Regular,
    /// A directory.
    Directory,
    /// A symbolic link (the link itself, not what it points to).
    Symlink,
    /// A named pipe.
    Fifo,
    /// A Unix socket.
    Socket,
    /// A character device, such as `/dev/null`.
    CharDevice,
    /// A block device.
    BlockDevice,
    /// Anything else the platform has.
    Other,
}

impl FileKind {
    /// The kind of `file_type`.
    pub fn of(file_type: &fs::FileType) -> FileKind {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            if file_type.is_fifo() {
                return FileKind::Fifo;
            }
            if file_type.is_socket() {
                return FileKind::Socket;
            }
            if file_type.is_char_device() {
                return FileKind::CharDevice;
            }
            if file_type.is_block_device() {
                return FileKind::BlockDevice;
            }
        }
        if file_type.is_symlink() {
            FileKind::Symlink
        } else if file_type.is_dir() {
            FileKind::Directory
        } else if file_type.is_file() {
            FileKind::Regular
        } else {
            FileKind::Other
        }
    }

    /// "a regular file", "a FIFO", ...: what goes after "is" in a message.
    pub fn describe(self) -> &'static str {
        match self {
            FileKind::Regular => "a regular file",
            FileKind::Directory => "a directory",
            FileKind::Symlink => "a symbolic link",
            FileKind::Fifo => "a FIFO",
            FileKind::Socket => "a socket",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Other => "not a regular file",
        }
    }
}

/// What [`existing_kind`] found at `path` without following a final symbolic link, or `None`
/// if nothing is there.
pub fn existing_kind(path: &Path) -> io::Result<Option<FileKind>> {
    match fs::symlink_metadata(path) {
        Ok(meta) => Ok(Some(FileKind::of(&meta.file_type()))),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err),
    }
}

/// The refusal [`replace_regular`] returns (inside an `io::Error` of kind `InvalidInput`; get
/// it back with [`not_regular`]) when the destination exists and is not a regular file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotRegular {
    /// The destination.
    pub path: PathBuf,
    /// What is there.
    pub kind: FileKind,
}

impl fmt::Display for NotRegular {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is {}; only a regular file is ever replaced", self.path.display(), self.kind.describe())
    }
}

impl Error for NotRegular {}

/// The [`NotRegular`] inside `err`, if that is why a write was refused.
pub fn not_regular(err: &io::Error) -> Option<&NotRegular> {
    err.get_ref().and_then(|inner| inner.downcast_ref::<NotRegular>())
}

/// Fails with [`NotRegular`] unless `path` is missing or a regular file.
pub fn check_replaceable(path: &Path) -> io::Result<()> {
    match existing_kind(path)? {
        None | Some(FileKind::Regular) => Ok(()),
        Some(kind) => Err(io::Error::new(io::ErrorKind::InvalidInput, NotRegular { path: path.to_owned(), kind })),
    }
}

/// Writes `bytes` to `path`, replacing it if it is a regular file (see the module docs). The
/// parent directory must exist.
pub fn replace_regular(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace_regular_with(path, |file| file.write_all(bytes))
}

/// [`replace_regular`] for output produced while it is written: `write` gets the temporary
/// file (wrap it in a `BufWriter` and flush it, or use a compressor that finishes into it) and
/// its result is returned once the file has its name. When `write` fails, nothing at `path`
/// changes and the temporary file is gone.
pub fn replace_regular_with<T>(path: &Path, write: impl FnOnce(&mut File) -> io::Result<T>) -> io::Result<T> {
    check_replaceable(path)?;
    let (dir, name) = split(path)?;
    let mut temp = Temp::create(dir, name)?;
    if let Ok(meta) = fs::metadata(path) {
        // A replacement keeps the permissions of what it replaces.
        temp.file.set_permissions(meta.permissions())?;
    }
    let value = write(&mut temp.file)?;
    temp.file.sync_all()?;
    // Again, right before the rename: the path may have been swapped since the first check.
    check_replaceable(path)?;
    fs::rename(&temp.path, path)?;
    temp.renamed = true;
    Ok(value)
}

/// Writes `bytes` as a new file `<dir>/<stem><ext>`, or `<stem>-2<ext>`, `<stem>-3<ext>`, ...
/// (up to [`MAX_NEW_NAMES`]) if that name is taken, and returns the path it used. Never replaces
/// or writes into an existing file, whatever it is; `dir` must exist. `stem` + `ext` must be
/// one plain file name.
pub fn write_new(dir: &Path, stem: &str, ext: &str, bytes: &[u8]) -> io::Result<PathBuf> {
    write_new_linking(dir, stem, ext, bytes, |from, to| fs::hard_link(from, to))
}

/// [`write_new`] with the link step given, so the fallback for file systems without hard
/// links is testable.
fn write_new_linking(dir: &Path, stem: &str, ext: &str, bytes: &[u8], link: impl Fn(&Path, &Path) -> io::Result<()>) -> io::Result<PathBuf> {
    let first = format!("{stem}{ext}");
    if !is_plain_name(&first) || stem.contains('/') || ext.contains('/') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{first:?} is not a plain file name")));
    }
    let mut temp = Temp::create(dir, &first)?;
    temp.file.write_all(bytes)?;
    temp.file.sync_all()?;
    for n in 1..=MAX_NEW_NAMES {
        let name = if n == 1 { first.clone() } else { format!("{stem}-{n}{ext}") };
        let path = dir.join(&name);
        // A hard link fails with EEXIST instead of replacing, which is the whole point; the
        // temporary file is then removed by `temp`'s drop.
        match link(&temp.path, &path) {
            Ok(()) => return Ok(path),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(_) => {}
        }
        // No hard links here (some FUSE and FAT file systems): claim the name with an
        // exclusive create, then rename onto the empty file just claimed. A reader may see it
        // empty for that moment, but nothing that was there is ever replaced.
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(_) => {}
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(err),
        }
        if let Err(err) = fs::rename(&temp.path, &path) {
            let _ = fs::remove_file(&path);
            return Err(err);
        }
        temp.renamed = true;
        return Ok(path);
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("{} and {stem}-2{ext} ... {stem}-{MAX_NEW_NAMES}{ext} all exist in {}", first, dir.display()),
    ))
}

/// `path`'s directory (`.` for a bare name) and file name.
fn split(path: &Path) -> io::Result<(&Path, &str)> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("{} does not end in a file name", path.display())))?;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    Ok((dir, name))
}

fn is_plain_name(name: &str) -> bool {
    let mut components = Path::new(name).components();
    matches!((components.next(), components.next()), (Some(Component::Normal(_)), None))
}

/// A temporary file next to the destination, removed when dropped unless it was renamed.
struct Temp {
    path: PathBuf,
    file: File,
    renamed: bool,
}

/// This host, as temporary file names carry it: a process id only means something on the host
/// that issued it (a log directory may be on a file system other hosts write to).
fn host_tag() -> &'static str {
    static TAG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TAG.get_or_init(|| {
        let host = crate::os::hostname();
        let hash = host.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3));
        format!("h{:08x}", hash as u32)
    })
}

/// How long a temporary file of a writer that is gone must have lain before it is removed: a
/// guard against a pid reused in between, on top of the check that nobody has that pid.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(10);

/// Removes from `dir` the temporary files that writers on this host left when they were
/// killed mid-write (their process no longer exists), and returns how many: each was as large
/// as its trace, and stayed for good. Never touches another host's, a live process's, or a
/// fresh one.
pub fn remove_stale_temporaries(dir: &Path) -> usize {
    let tag = format!(".{}.", host_tag());
    let Ok(entries) = fs::read_dir(dir) else { return 0 };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name.strip_suffix(".roctx-tmp") else { continue };
        let Some(pos) = rest.rfind(&tag) else { continue };
        let mut fields = rest[pos + tag.len()..].split('.');
        let Some(pid) = fields.next().and_then(|p| p.parse::<i32>().ok()) else { continue };
        if pid <= 0 || pid == std::process::id() as i32 || crate::os::process_exists(pid) {
            continue;
        }
        let old = entry.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok()).is_some_and(|age| age >= STALE_AFTER);
        if old && entry.file_type().is_ok_and(|t| t.is_file()) && fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

impl Temp {
    /// `.<name>.h<host hash>.<pid>.<n>.roctx-tmp` in `dir`, created exclusively (never an
    /// existing file).
    fn create(dir: &Path, name: &str) -> io::Result<Temp> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        // Keeps the temporary name within NAME_MAX (255 bytes) for long destination names.
        let mut cut = name.len().min(160);
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        let mut attempts = 0;
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!(".{}.{}.{}.{n}.roctx-tmp", &name[..cut], host_tag(), std::process::id()));
            attempts += 1;
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => return Ok(Temp { path, file, renamed: false }),
                // Left behind by a killed process that had our pid: take the next number.
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists && attempts < MAX_NEW_NAMES => continue,
                Err(err) => return Err(err),
            }
        }
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if !self.renamed {
            let _ = fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod stale_tests {
    use super::*;

    #[test]
    fn temporaries_of_writers_that_are_gone_are_removed_and_nothing_else() {
        // Issue 25, item 10: each rank killed mid-write left its temporary for good.
        let dir = std::env::temp_dir().join(format!("roctx_stale_{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let tag = host_tag();
        // A pid no process has (above the kernel's pid_max), ours, another host's, a fresh one.
        let gone = dir.join(format!(".h_rank3.xplane.pb.{tag}.4194999.0.roctx-tmp"));
        let mine = dir.join(format!(".h.xplane.pb.{tag}.{}.7.roctx-tmp", std::process::id()));
        let other_host = dir.join(".h.xplane.pb.h00000000.4194999.0.roctx-tmp");
        let trace = dir.join("h_rank3.xplane.pb");
        for f in [&gone, &mine, &other_host, &trace] {
            fs::write(f, b"x").unwrap();
        }
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        for f in [&gone, &mine, &other_host] {
            File::options().write(true).open(f).unwrap().set_modified(old).unwrap();
        }
        let fresh = dir.join(format!(".h_rank4.xplane.pb.{tag}.4194998.0.roctx-tmp"));
        fs::write(&fresh, b"x").unwrap();
        assert_eq!(remove_stale_temporaries(&dir), 1);
        assert!(!gone.exists());
        assert!(mine.exists() && other_host.exists() && trace.exists() && fresh.exists());
        fs::remove_dir_all(&dir).unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory, removed at the end of the test.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!("roctx_output_{name}.{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }

        /// Every name in the directory, sorted.
        fn names(&self) -> Vec<String> {
            let mut names: Vec<String> = fs::read_dir(&self.0).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
            names.sort();
            names
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn replace_regular_replaces_a_file_and_creates_a_missing_one() {
        let dir = Scratch::new("replace");
        let path = dir.0.join("out.json");
        replace_regular(&path, b"one").unwrap();
        replace_regular(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(dir.names(), ["out.json"]);
    }

    #[cfg(unix)]
    #[test]
    fn replace_regular_keeps_the_permissions_of_what_it_replaces() {
        use std::os::unix::fs::PermissionsExt;
        let dir = Scratch::new("replace_mode");
        let path = dir.0.join("out.json");
        fs::write(&path, b"old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        replace_regular(&path, b"new").unwrap();
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[cfg(unix)]
    #[test]
    fn replace_regular_refuses_links_directories_fifos_and_devices() {
        let dir = Scratch::new("refuse");
        let target = dir.0.join("target");
        fs::write(&target, b"keep").unwrap();
        let link = dir.0.join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let fifo = dir.0.join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let sub = dir.0.join("sub");
        fs::create_dir(&sub).unwrap();
        let cases =
            [(link.clone(), FileKind::Symlink), (fifo.clone(), FileKind::Fifo), (sub.clone(), FileKind::Directory), (PathBuf::from("/dev/null"), FileKind::CharDevice)];
        for (path, kind) in cases {
            let err = replace_regular(&path, b"x").unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{path:?}");
            assert_eq!(not_regular(&err), Some(&NotRegular { path: path.clone(), kind }), "{err}");
        }
        assert_eq!(fs::read(&target).unwrap(), b"keep");
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(existing_kind(&fifo).unwrap(), Some(FileKind::Fifo));
        assert_eq!(dir.names(), ["fifo", "link", "sub", "target"], "a temporary file was left behind");
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary_file() {
        let dir = Scratch::new("failed_write");
        let path = dir.0.join("out.json");
        fs::write(&path, b"old").unwrap();
        let err = replace_regular_with(&path, |file| {
            file.write_all(b"half")?;
            Err::<(), _>(io::Error::other("compressor failed"))
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "compressor failed");
        assert_eq!(fs::read(&path).unwrap(), b"old");
        assert_eq!(dir.names(), ["out.json"]);
    }

    #[test]
    fn write_new_never_replaces_and_numbers_the_next_name() {
        let dir = Scratch::new("write_new");
        let a = write_new(&dir.0, "host", ".xplane.pb", b"a").unwrap();
        let b = write_new(&dir.0, "host", ".xplane.pb", b"b").unwrap();
        fs::create_dir(dir.0.join("host-3.xplane.pb")).unwrap();
        let c = write_new(&dir.0, "host", ".xplane.pb", b"c").unwrap();
        assert_eq!((a.file_name().unwrap(), b.file_name().unwrap(), c.file_name().unwrap()), ("host.xplane.pb".as_ref(), "host-2.xplane.pb".as_ref(), "host-4.xplane.pb".as_ref()));
        assert_eq!((fs::read(&a).unwrap(), fs::read(&b).unwrap(), fs::read(&c).unwrap()), (b"a".to_vec(), b"b".to_vec(), b"c".to_vec()));
        assert_eq!(dir.names(), ["host-2.xplane.pb", "host-3.xplane.pb", "host-4.xplane.pb", "host.xplane.pb"]);
        assert_eq!(write_new(&dir.0, "../x", ".pb", b"").unwrap_err().kind(), io::ErrorKind::InvalidInput);
        assert_eq!(write_new(&dir.0, "", "", b"").unwrap_err().kind(), io::ErrorKind::InvalidInput);
    }

    #[cfg(unix)]
    #[test]
    fn write_new_does_not_follow_a_link_in_its_way() {
        let dir = Scratch::new("write_new_link");
        let target = dir.0.join("target");
        fs::write(&target, b"keep").unwrap();
        std::os::unix::fs::symlink(&target, dir.0.join("h.pb")).unwrap();
        let path = write_new(&dir.0, "h", ".pb", b"new").unwrap();
        assert_eq!(path, dir.0.join("h-2.pb"));
        assert_eq!(fs::read(&target).unwrap(), b"keep");
    }

    #[test]
    fn without_hard_links_write_new_claims_a_name_and_still_never_replaces() {
        let dir = Scratch::new("write_new_nolink");
        fs::write(dir.0.join("h.pb"), b"old").unwrap();
        let unsupported = |_: &Path, _: &Path| Err(io::Error::new(io::ErrorKind::Unsupported, "no hard links"));
        let path = write_new_linking(&dir.0, "h", ".pb", b"new", unsupported).unwrap();
        assert_eq!(path, dir.0.join("h-2.pb"));
        assert_eq!(fs::read(dir.0.join("h.pb")).unwrap(), b"old");
        assert_eq!(fs::read(&path).unwrap(), b"new");
        assert_eq!(dir.names(), ["h-2.pb", "h.pb"]);
    }

    #[test]
    fn write_new_gives_up_after_max_new_names_and_cleans_up() {
        let dir = Scratch::new("write_new_full");
        let taken = |_: &Path, _: &Path| Err(io::Error::from(io::ErrorKind::AlreadyExists));
        let err = write_new_linking(&dir.0, "h", ".pb", b"x", taken).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert!(err.to_string().contains("h-1000.pb"), "{err}");
        assert!(dir.names().is_empty(), "{:?}", dir.names());
    }
}
