//! `roctx convert`: one XSpace to another trace format, to stdout or a file (gzip-compressed when
//! the name ends in `.gz`). Owns the output handling; the conversion itself lives in
//! [`roctx_export::chrome`].

use std::io::{self, BufWriter, Write};

use flate2::write::GzEncoder;
use flate2::Compression;
use roctx_export::chrome;

use crate::args::{ConvertArgs, Format};
use crate::input;
use crate::messages::{print, Failure, Status};

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
    let space = input::read(&files[0])?;
    let doc = match args.format {
        Format::Chrome => chrome::from_xspace(&space),
    };
    let Some(out) = &args.output else {
        let mut stdout = BufWriter::new(io::stdout().lock());
        serde_json::to_writer(&mut stdout, &doc)
            .map_err(io::Error::from)
            .and_then(|()| stdout.write_all(b"\n"))
            .and_then(|()| stdout.flush())
            .map_err(Failure::stdout)?;
        return Ok(Status::Clean);
    };
    input::refuse_to_overwrite(out, files.iter().map(|f| f.as_path()))?;
    let mut bytes = serde_json::to_vec(&doc).map_err(|err| Failure::io("encoding", out, err))?;
    bytes.push(b'\n');
    let gzip = out.extension().is_some_and(|e| e == "gz");
    if gzip {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        bytes = encoder.write_all(&bytes).and_then(|()| encoder.finish()).map_err(|err| Failure::io("compressing", out, err))?;
    }
    input::write_file(out, &bytes)?;
    let events = doc["traceEvents"].as_array().map_or(0, Vec::len);
    print(&format!("wrote {}: {events} trace events{}\n", out.display(), if gzip { ", gzip" } else { "" }))?;
    Ok(Status::Clean)
}
