//! Reading inputs: a `.xplane.pb` file, or a TensorBoard log directory standing for the files of
//! its newest run ([`roctx_export::logdir::find_xspaces`]). Owns the messages for paths that do
//! not exist, directories without traces and files that are not XSpaces; never writes.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use prost::Message;
use roctx_export::logdir;
use roctx_export::xplane_proto::XSpace;

use crate::messages::Failure;

/// One decoded input file.
#[derive(Debug)]
pub(crate) struct Input {
    /// The file it came from.
    pub(crate) path: PathBuf,
    /// Its contents.
    pub(crate) space: XSpace,
}

/// The `.xplane.pb` files `path` names: itself, or those of a log directory's newest run.
pub(crate) fn files(path: &Path) -> Result<Vec<PathBuf>, Failure> {
    if fs::metadata(path).is_err() && fs::symlink_metadata(path).is_err() {
        return Err(Failure::new(format!("{} does not exist", path.display())));
    }
    logdir::find_xspaces(path).map_err(|err| match err.kind() {
        io::ErrorKind::NotFound if path.is_dir() => Failure::new(err.to_string()).hint(
            "pass a .xplane.pb file, or the directory given to `tensorboard --logdir` (the one holding plugins/profile/)",
        ),
        _ => Failure::io("reading", path, err),
    })
}

/// Reads and decodes one file. An empty file is a valid (empty) XSpace.
pub(crate) fn read(path: &Path) -> Result<XSpace, Failure> {
    let bytes = fs::read(path).map_err(|err| match err.kind() {
        io::ErrorKind::NotFound => Failure::new(format!("{} does not exist", path.display())),
        _ => Failure::io("reading", path, err),
    })?;
    XSpace::decode(bytes.as_slice()).map_err(|err| {
        Failure::new(format!(
            "reading {}: not an XSpace ({err}); expected a .xplane.pb file or a TensorBoard log directory",
            path.display()
        ))
    })
}

/// Every file `path` names, decoded, in path order.
pub(crate) fn load(path: &Path) -> Result<Vec<Input>, Failure> {
    files(path)?.into_iter().map(|path| read(&path).map(|space| Input { path, space })).collect()
}

/// Fails if `output` is one of `inputs` (the same file, however it is spelled).
pub(crate) fn refuse_to_overwrite<'a>(output: &Path, inputs: impl IntoIterator<Item = &'a Path>) -> Result<(), Failure> {
    let Ok(out) = fs::canonicalize(output) else { return Ok(()) }; // Not there yet: no clash.
    for input in inputs {
        if fs::canonicalize(input).is_ok_and(|i| i == out) {
            return Err(Failure::new(format!("refusing to overwrite input {} with the output", input.display()))
                .hint("choose another output file with -o"));
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, creating
/// parent directories, so that a reader (or a failed write) never leaves half a file behind.
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    if path.is_dir() {
        return Err(Failure::new(format!("{} is a directory", path.display())).hint("-o takes a file name, such as merged.xplane.pb"));
    }
    let Some(name) = path.file_name() else {
        return Err(Failure::new(format!("{} is not a file name", path.display())).hint("-o takes a file name, such as merged.xplane.pb"));
    };
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    fs::create_dir_all(parent).map_err(|err| Failure::io("creating directory", parent, err))?;
    let tmp = parent.join(format!(".{}.roctx-tmp", name.to_string_lossy()));
    let result = fs::write(&tmp, bytes).and_then(|()| fs::rename(&tmp, path));
    if let Err(err) = result {
        let _ = fs::remove_file(&tmp);
        return Err(Failure::io("writing", path, err));
    }
    Ok(())
}
