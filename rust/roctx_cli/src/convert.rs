//! `roctx convert`: one XSpace, or the files of a multi-process run, to another trace format, to
//! stdout or a file (gzip-compressed when the name ends in `.gz`). Owns the choice of
//! destination and compression; the conversion itself lives in [`roctx_export::chrome`], which
//! streams: memory is one decoded input plus a constant, however many events and files there
//! are (a run's files are read, written and dropped one at a time).

use std::cell::RefCell;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use flate2::write::GzEncoder;
use flate2::Compression;
use roctx_export::chrome;
use roctx_export::xplane_proto::XSpace;

use crate::args::{ConvertArgs, Format};
use crate::messages::{print, Failure, Status};
use crate::{input, output};

/// Runs `roctx convert`.
pub(crate) fn run(args: &ConvertArgs) -> Result<Status, Failure> {
    let files = input::files(&args.input)?;
    if let Some(out) = &args.output {
        output::check(out, files.iter().map(|f| f.as_path()))?;
    }
    // Read before anything is written: a first file that is not an XSpace leaves no output.
    let first = input::read(&files[0])?;
    // A later file that cannot be read stops the writing midway; its failure, not the write's,
    // is what the user needs to see.
    let unreadable: RefCell<Option<Failure>> = RefCell::new(None);
    let failure = |err: io::Error, otherwise: &dyn Fn(io::Error) -> Failure| unreadable.borrow_mut().take().unwrap_or_else(|| otherwise(err));
    let convert = |w: &mut dyn Write| -> io::Result<u64> {
        let events = match args.format {
            Format::Chrome => chrome(&files, first, &mut *w, &unreadable)?,
        };
        w.write_all(b"\n")?;
        Ok(events)
    };
    let Some(out) = &args.output else {
        let mut stdout = BufWriter::new(io::stdout().lock());
        convert(&mut stdout).and_then(|_| stdout.flush()).map_err(|err| failure(err, &Failure::stdout))?;
        return Ok(Status::Clean);
    };
    let gzip = out.extension().is_some_and(|e| e == "gz");
    let written = output::write_with(out, |file| {
        if !gzip {
            let mut buffered = BufWriter::new(file);
            let events = convert(&mut buffered)?;
            buffered.flush()?;
            return Ok(events);
        }
        // Buffered in front of the encoder too: the JSON comes in tokens of a few bytes, and a
        // write into the encoder per token made a 320 MB trace take 107 s instead of 2.
        let mut encoder = GzEncoder::new(BufWriter::new(file), Compression::default());
        let mut buffered = BufWriter::with_capacity(1 << 16, &mut encoder);
        let events = convert(&mut buffered)?;
        buffered.flush()?;
        drop(buffered);
        encoder.finish()?.flush()?;
        Ok(events)
    });
    let events = written.map_err(|written| unreadable.borrow_mut().take().unwrap_or(written))?;
    let from = if files.len() > 1 { format!(" from {} processes", files.len()) } else { String::new() };
    print(&format!("wrote {}: {events} trace events{from}{}\n", out.display(), if gzip { ", gzip" } else { "" }))?;
    Ok(Status::Clean)
}

/// The Chrome trace of `files`, the first already read as `first`: one file exactly as
/// [`chrome::write_xspace`] writes it, several as one [`chrome::RunWriter`] document with a
/// process group per file, each file read and dropped before the next. A file that cannot be
/// read ends the writing with an error, its failure left in `unreadable`.
fn chrome(files: &[PathBuf], first: XSpace, out: &mut dyn Write, unreadable: &RefCell<Option<Failure>>) -> io::Result<u64> {
    if files.len() == 1 {
        return chrome::write_xspace(&first, out);
    }
    let mut run = chrome::RunWriter::new(out)?;
    let mut first = Some(first);
    for path in files {
        let space = match first.take() {
            Some(space) => space,
            None => input::read(path).map_err(|failure| {
                *unreadable.borrow_mut() = Some(failure);
                io::Error::other(format!("reading {}", path.display()))
            })?,
        };
        run.add(&input::process_name(path), &space)?;
    }
    run.finish()
}
