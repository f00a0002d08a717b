//! Writing outputs (`-o`). Owns the output checks and their messages: an output is written only
//! where nothing is, or over a regular file that is not an input; a directory, FIFO, socket,
//! device or symbolic link is refused before any work is done. The writing itself (a temporary
//! file in the same directory, renamed into place, removed on any failure) is
//! [`roctx_export::output`].

use std::fs::{self, File};
use std::io;
use std::path::Path;

use roctx_export::output::{self, FileKind};

use crate::messages::Failure;

/// Fails unless `path` may be written: it must name a file, hold nothing or a regular file, and
/// not be one of `inputs` (however it is spelled). Checked before reading the inputs, so a bad
/// `-o` costs nothing; [`write_with`] checks the kind again when it writes.
pub(crate) fn check<'a>(path: &Path, inputs: impl IntoIterator<Item = &'a Path>) -> Result<(), Failure> {
    if path.file_name().is_none() {
        return Err(Failure::new(format!("{} is not a file name", path.display())).hint("-o takes a file name, such as merged.xplane.pb"));
    }
    match output::existing_kind(path) {
        Ok(None) => return Ok(()),
        Ok(Some(FileKind::Regular)) => {}
        Ok(Some(kind)) => return Err(refused(path, kind)),
        Err(err) => return Err(Failure::io("writing", path, err)),
    }
    let Ok(out) = fs::canonicalize(path) else { return Ok(()) };
    for input in inputs {
        if fs::canonicalize(input).is_ok_and(|i| i == out) {
            return Err(Failure::new(format!("refusing to overwrite input {} with the output", input.display()))
                .hint("choose another output file with -o"));
        }
    }
    Ok(())
}

/// Writes `path` (creating its parent directories) from what `write` puts into the file, whole
/// or not at all; returns `write`'s result.
pub(crate) fn write_with<T>(path: &Path, write: impl FnOnce(&mut File) -> io::Result<T>) -> Result<T, Failure> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|err| Failure::io("creating directory", parent, err))?;
    }
    output::replace_regular_with(path, write).map_err(|err| match output::not_regular(&err) {
        Some(refusal) => refused(path, refusal.kind),
        None => failed(path, &err),
    })
}

/// [`write_with`] for bytes already in memory.
pub(crate) fn write(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    write_with(path, |file| io::Write::write_all(file, bytes))
}

/// Why `path`, which is a `kind`, is not written.
fn refused(path: &Path, kind: FileKind) -> Failure {
    let p = path.display();
    match kind {
        FileKind::Directory => Failure::new(format!("{p} is a directory")).hint("-o takes a file name, such as merged.xplane.pb"),
        FileKind::Symlink => {
            let target = fs::read_link(path).ok().map(|t| path.parent().map_or(t.clone(), |dir| dir.join(&t)));
            let hint = match target {
                Some(t) => format!("name the link's target instead: -o {}", t.display()),
                None => "name the file the link points to instead".to_owned(),
            };
            Failure::new(format!("{p} is a symbolic link; roctx does not write through or replace links")).hint(hint)
        }
        kind => Failure::new(format!("{p} is {}; roctx only writes regular files, and would replace it with one", kind.describe()))
            .hint("-o takes a regular file name (`roctx convert` without -o writes to stdout, which can go anywhere)"),
    }
}

/// A write that failed midway; a full disk or file size limit gets its own hint.
fn failed(path: &Path, err: &io::Error) -> Failure {
    // EFBIG, ENOSPC, EDQUOT (Linux numbers; ErrorKind::StorageFull and friends need Rust 1.83).
    let full = matches!(err.raw_os_error(), Some(27 | 28 | 122));
    let failure = Failure::io("writing", path, err);
    if full {
        failure.hint(format!(
            "the disk is full or a file size limit (ulimit -f) was reached; {} was left as it was and no partial file remains",
            path.display()
        ))
    } else {
        failure
    }
}
