//! `roctx merge`: XLA's host-plane merge over several XSpaces
//! ([`roctx_export::xplane::merge_spaces`]), written to one file. Owns the output checks and the
//! one-line report.

use prost::Message;
use roctx_export::inspect::{Severity, Summary};
use roctx_export::xplane;

use crate::args::MergeArgs;
use crate::input;
use crate::messages::{error, hint, print, Failure, Status};

/// Runs `roctx merge`.
pub(crate) fn run(args: &MergeArgs) -> Result<Status, Failure> {
    let out = &args.output;
    let mut inputs = Vec::new();
    for path in &args.inputs {
        inputs.extend(input::load(path)?);
    }
    input::refuse_to_overwrite(out, inputs.iter().map(|i| i.path.as_path()))?;
    let files = inputs.len();
    let merged = xplane::merge_spaces(inputs.into_iter().map(|i| i.space).collect());
    input::write_file(out, &merged.encode_to_vec())?;

    let s = Summary::of(&merged);
    let hosts = if s.hostnames.is_empty() { "no hostname".to_owned() } else { s.hostnames.join(", ") };
    let (errors, warnings) = (s.count(Severity::Error), s.count(Severity::Warning));
    print(&format!(
        "merged {files} file{} into {}: {hosts}; {} plane{}, {} lines, {} events; {errors} validation error{}, {warnings} warning{}\n",
        plural_s(files),
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
