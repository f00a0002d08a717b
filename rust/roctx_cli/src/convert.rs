//! `roctx convert`: one XSpace to another trace format, to stdout or a file (gzip-compressed when
//! the name ends in `.gz`). Owns the choice of destination and compression; the conversion
//! itself lives in [`roctx_export::chrome`], which streams: memory is the decoded input plus a
//! constant, however many events it has.

use std::io::{self, BufWriter, Write};

use flate2::write::GzEncoder;
use flate2::Compression;
use roctx_export::chrome;

use crate::args::{ConvertArgs, Format};
use crate::messages::{print, Failure, Status};
use crate::{input, output};

/// Runs `roctx convert`.
pub(crate) fn run(args: &ConvertArgs) -> Result<Status, Failure> {
    let files = input::files(&args.input)?;
    if files.len() > 1 {
        let list: Vec<String> = files.iter().map(|f| format!("  {}", f.display())).collect();
        return Err(Failure::new(format!(
            "{} holds {} hosts, and convert writes one trace:\n{}",
            args.input.display(),
            files.len(),
            list.join("\n")
        ))
        .hint(format!("convert each file on its own, e.g. `roctx convert --format chrome {}`", files[0].display())));
    }
    if let Some(out) = &args.output {
        output::check(out, files.iter().map(|f| f.as_path()))?;
    }
    let space = input::read(&files[0])?;
    let convert = |w: &mut dyn Write| -> io::Result<u64> {
        let events = match args.format {
            Format::Chrome => chrome::write_xspace(&space, &mut *w)?,
        };
        w.write_all(b"\n")?;
        Ok(events)
    };
    let Some(out) = &args.output else {
        let mut stdout = BufWriter::new(io::stdout().lock());
        convert(&mut stdout).and_then(|_| stdout.flush()).map_err(Failure::stdout)?;
        return Ok(Status::Clean);
    };
    let gzip = out.extension().is_some_and(|e| e == "gz");
    let events = output::write_with(out, |file| {
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
    })?;
    print(&format!("wrote {}: {events} trace events{}\n", out.display(), if gzip { ", gzip" } else { "" }))?;
    Ok(Status::Clean)
}
