//! `roctx merge`: XLA's host-plane merge over several XSpaces of one process
//! ([`roctx_export::xplane::merge_spaces`]), or with `--per-process` the files of a
//! multi-process run folded into one space that keeps each process apart
//! ([`roctx_export::xplane::fold_processes`]), written to one file. Owns the one-line report and
//! the validation errors it prints (one per kind of problem and plane, with its count).

use prost::Message;
use roctx_export::inspect::{Severity, Summary};
use roctx_export::xplane;

use crate::args::MergeArgs;
use crate::messages::{error, hint, print, Failure, Status};
use crate::{input, output};

/// Runs `roctx merge`.
pub(crate) fn run(args: &MergeArgs) -> Result<Status, Failure> {
    let out = &args.output;
    let mut files = Vec::new();
    for path in &args.inputs {
        files.extend(input::files(path)?);
    }
    output::check(out, files.iter().map(|f| f.as_path()))?;
    let spaces = files.iter().map(|f| input::read(f)).collect::<Result<Vec<_>, _>>()?;
    let merged = if args.per_process {
        xplane::fold_processes(files.iter().map(|f| input::process_name(f)).zip(spaces).collect())
    } else {
        xplane::merge_spaces(spaces)
    };
    output::write(out, &merged.encode_to_vec())?;

    let s = Summary::of(&merged);
    let hosts = if s.hostnames.is_empty() { "no hostname".to_owned() } else { s.hostnames.join(", ") };
    let (errors, warnings) = (s.count(Severity::Error), s.count(Severity::Warning));
    let processes = if args.per_process { format!(" as {} process{}", files.len(), if files.len() == 1 { "" } else { "es" }) } else { String::new() };
    print(&format!(
        "merged {} file{} into {}{processes}: {hosts}; {} plane{}, {} lines, {} events; {errors} validation error{}, {warnings} warning{}\n",
        files.len(),
        plural_s(files.len()),
        out.display(),
        s.planes.len(),
        plural_s(s.planes.len()),
        s.line_count(),
        s.event_count(),
        plural_s(errors),
        plural_s(warnings),
    ))?;
    for issue in s.issues.iter().filter(|i| i.severity == Severity::Error) {
        error(&format!("{}: {}", out.display(), issue.message));
    }
    if errors > 0 {
        hint(&format!("run `roctx inspect {}` to see its rows", out.display()));
        return Ok(Status::Invalid);
    }
    Ok(Status::Clean)
}

fn plural_s(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
