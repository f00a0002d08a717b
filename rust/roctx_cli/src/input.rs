//! Reading inputs: a `.xplane.pb` file, a run directory standing for its files (one per
//! process), or a TensorBoard log directory standing for the files of its newest run
//! ([`roctx_export::logdir::find_xspaces`]); and what a run and its files are called. Owns the
//! messages for paths that do not exist, are not regular files or directories, are over
//! [`MAX_INPUT_BYTES`], directories without traces and files that are not XSpaces; never writes.

use std::fs::{self, File, Metadata};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use prost::Message;
use roctx_export::logdir;
use roctx_export::output::FileKind;
use roctx_export::xplane_proto::XSpace;

use crate::messages::{self, Failure};

/// The largest input file read, 1 GiB. Each input is decoded whole into memory, up to
/// [`MEMORY_PER_INPUT_BYTE`] times its size, so this bounds a run at tens of GiB; past it a file
/// is refused before it is read.
pub(crate) const MAX_INPUT_BYTES: u64 = 1 << 30;

/// Peak memory per input byte of `convert`, which holds just the decoded XSpace: 286 MB for a
/// 10 MB file of 5 M two-byte events (each a 56-byte `XEvent` in memory), the worst case.
/// `inspect` peaks at ~39x, `merge` (input and result) at ~55x; see the crate docs.
pub(crate) const MEMORY_PER_INPUT_BYTE: u64 = 29;

/// The `.xplane.pb` files `path` names: itself, those of a run directory, or those of a log
/// directory's newest run.
pub(crate) fn files(path: &Path) -> Result<Vec<PathBuf>, Failure> {
    let meta = metadata(path)?;
    if !meta.is_dir() {
        regular(path, &meta, XSPACE_HINTS)?;
        return Ok(vec![path.to_owned()]);
    }
    let found = logdir::find_xspaces(path).map_err(|err| match err.kind() {
        io::ErrorKind::NotFound => Failure::new(err.to_string()).hint(
            "pass a .xplane.pb file, or the directory given to `tensorboard --logdir` (the one holding plugins/profile/)",
        ),
        _ => Failure::io("reading", path, err),
    })?;
    // A FIFO, device or directory named like a trace in a run is skipped with a warning (one
    // stray entry must not cost the whole run); a run with nothing else is refused, naming it.
    let (files, others): (Vec<PathBuf>, Vec<PathBuf>) = found.into_iter().partition(|f| fs::metadata(f).is_ok_and(|m| m.is_file()));
    if files.is_empty() {
        let first = &others[0];
        regular(first, &metadata(first)?, XSPACE_HINTS)?;
    }
    for other in &others {
        let kind = fs::metadata(other).map_or_else(|_| "unreadable".to_owned(), |m| FileKind::of(&m.file_type()).describe().to_owned());
        messages::warning(&format!("skipping {}: not a regular file ({kind})", other.display()));
    }
    Ok(files)
}

/// The process a run's file stands for: its name without `.xplane.pb` (`h_rank3` for
/// `h_rank3.xplane.pb`), which XProf shows as the file's host.
pub(crate) fn process_name(path: &Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    match name.strip_suffix(".xplane.pb") {
        Some(stem) => stem.to_owned(),
        None => path.file_stem().map_or(name.clone(), |s| s.to_string_lossy().into_owned()),
    }
}

/// The name of the directory holding `file`: the run, for the files of a log or run directory.
pub(crate) fn run_name(file: &Path) -> String {
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    // `.` or `..` have no name of their own: the directory they are does.
    let name = dir.file_name().map(|n| n.to_os_string()).or_else(|| fs::canonicalize(dir).ok().and_then(|d| d.file_name().map(|n| n.to_os_string())));
    name.map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned())
}

// The XSpace hint spells the factor out: keep them equal.
const _: () = assert!(MEMORY_PER_INPUT_BYTE == 29);

/// Hints for an XSpace input that is not a regular file, or too large.
const XSPACE_HINTS: Hints = Hints {
    not_regular: "roctx reads .xplane.pb files and log directories; save the trace to a file first",
    too_large: "roctx decodes each input whole, taking up to ~29x its size in memory; split the capture (one file per host, or a shorter session)",
};

/// The next step to suggest when an input file is refused, per kind of input.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hints {
    /// For a FIFO, device, socket or other non-regular file.
    pub(crate) not_regular: &'static str,
    /// For a file over [`MAX_INPUT_BYTES`].
    pub(crate) too_large: &'static str,
}

/// Reads and decodes one file. An empty file is a valid (empty) XSpace.
pub(crate) fn read(path: &Path) -> Result<XSpace, Failure> {
    let bytes = read_bytes(path, XSPACE_HINTS)?;
    XSpace::decode(bytes.as_slice()).map_err(|err| {
        Failure::new(format!(
            "reading {}: not an XSpace ({err}); expected a .xplane.pb file or a TensorBoard log directory",
            path.display()
        ))
    })
}

/// Reads one regular file of at most [`MAX_INPUT_BYTES`] whole. The file type and size are
/// checked before reading, and again on the open file: a FIFO is never opened (which could
/// block) and a device like /dev/zero never read (which would not end).
pub(crate) fn read_bytes(path: &Path, hints: Hints) -> Result<Vec<u8>, Failure> {
    let meta = metadata(path)?;
    regular(path, &meta, hints)?;
    size(path, meta.len(), hints)?;
    let file = File::open(path).map_err(|err| Failure::io("reading", path, err))?;
    // The path may have been swapped since: what counts is the file now open.
    let meta = file.metadata().map_err(|err| Failure::io("reading", path, err))?;
    regular(path, &meta, hints)?;
    size(path, meta.len(), hints)?;
    // CAST: at most MAX_INPUT_BYTES, which fits usize on 64-bit hosts.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes).map_err(|err| Failure::io("reading", path, err))?;
    size(path, bytes.len() as u64, hints)?; // It grew while being read.
    Ok(bytes)
}

/// `path`'s metadata (following links), or why there is none.
fn metadata(path: &Path) -> Result<Metadata, Failure> {
    fs::metadata(path).map_err(|err| match err.kind() {
        io::ErrorKind::NotFound => match fs::read_link(path) {
            Ok(target) => Failure::new(format!("{} is a symbolic link to {}, which does not exist", path.display(), target.display())),
            Err(_) => Failure::new(format!("{} does not exist", path.display())),
        },
        _ => Failure::io("reading", path, err),
    })
}

/// Fails unless `meta` is a regular file's.
fn regular(path: &Path, meta: &Metadata, hints: Hints) -> Result<(), Failure> {
    if meta.is_file() {
        return Ok(());
    }
    Err(Failure::new(format!("{} is not a regular file ({})", path.display(), FileKind::of(&meta.file_type()).describe()))
        .hint(hints.not_regular))
}

/// Fails if `len` is over [`MAX_INPUT_BYTES`].
fn size(path: &Path, len: u64, hints: Hints) -> Result<(), Failure> {
    if len <= MAX_INPUT_BYTES {
        return Ok(());
    }
    Err(Failure::new(format!("{} is over roctx's input limit of 1 GiB ({MAX_INPUT_BYTES} bytes)", path.display())).hint(hints.too_large))
}
