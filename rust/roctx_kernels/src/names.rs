//! Kernel names: kept mangled when the code object registers them (on the SDK's thread, whose
//! stack size we do not know), demangled once, later, on a thread with a stack we chose.

/// The demangled form of a mangled kernel symbol exactly as `c++filt` prints it (libstdc++'s
/// `__cxa_demangle`, [`roctx_sys::demangle`]; a `.kd` / clone suffix shows as ` [clone .kd]`,
/// as in llama.cpp's report); a name that is not a symbol or does not demangle is kept as given
/// (lossy UTF-8), as `c++filt` keeps it.
pub fn demangle(mangled: &[u8]) -> String {
    demangle_bounded(mangled).0
}

/// The longest demangled name kept, 64 KiB (the longest real kernel names, deep CUTLASS and
/// Composable Kernel templates, are a few KiB); a longer one stays mangled.
pub const MAX_DEMANGLED_NAME: usize = 64 << 10;

/// [`demangle`], and whether the name stayed mangled because its demangled form is over
/// [`MAX_DEMANGLED_NAME`] (counted in [`KernelStats::names_too_long`](crate::KernelStats::names_too_long)).
pub(crate) fn demangle_bounded(mangled: &[u8]) -> (String, bool) {
    let lossy = || String::from_utf8_lossy(mangled).into_owned();
    match roctx_sys::demangle::cxa_within(mangled, MAX_DEMANGLED_NAME) {
        Ok(Some(name)) => (name, false),
        Ok(None) => (lossy(), false),
        Err(_) => (lossy(), true),
    }
}

/// Stack of the thread that demangles: the demangler recurses over names from code objects we
/// did not build (libstdc++ stops at its own recursion limit, well inside this).
const DEMANGLER_STACK: usize = 16 << 20;

/// Demangles every name of `names` on a thread of its own with a [`DEMANGLER_STACK`] stack, so
/// the caller's stack size never matters; if no thread can be started, the names stay mangled.
///
/// In a `fork()` child no thread is started and the names stay mangled: only async-signal-safe
/// calls are safe in the child of a multi-threaded process, and a thread created there can wait
/// forever on a lock a parent's thread held at the fork (an ASan child hung joining it at
/// exit); demangling on the caller's stack instead would bring back the stack-size risk.
pub(crate) fn demangle_all(names: Vec<Box<[u8]>>) -> Vec<(String, bool)> {
    let fallback = |names: &[Box<[u8]>]| names.iter().map(|n| (String::from_utf8_lossy(n).into_owned(), false)).collect();
    if roctx_sys::os::is_fork_child() {
        return fallback(&names);
    }
    std::thread::scope(|scope| {
        let worker = roctx_sys::os::with_signals_blocked(|| {
            std::thread::Builder::new()
                .name("roctx-demangle".into())
                .stack_size(DEMANGLER_STACK)
                .spawn_scoped(scope, || names.iter().map(|n| demangle_bounded(n)).collect::<Vec<_>>())
        });
        match worker {
            Ok(handle) => handle.join().unwrap_or_else(|_| fallback(&names)),
            Err(_) => fallback(&names),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_descriptor_suffixes_are_kept_and_plain_names_pass_through() {
        assert_eq!(demangle(b"_Z3fooi.kd"), "foo(int) [clone .kd]");
        assert_eq!(
            demangle(b"_Z13quantize_q8_1PKfPvllllll"),
            "quantize_q8_1(float const*, void*, long, long, long, long, long, long)"
        );
        assert_eq!(demangle(b"copy_kernel"), "copy_kernel");
        assert_eq!(demangle(b"_Z"), "_Z");
        assert_eq!(demangle(b"\xff_Zbad"), "\u{fffd}_Zbad");
    }

    #[test]
    fn hostile_deeply_nested_names_do_not_overflow_the_stack() {
        let mut open = b"_Z1f".to_vec();
        open.extend(std::iter::repeat(b"PFv".as_slice()).take(20_000).flatten());
        let mut nested = b"_Z1fIL".to_vec();
        nested.extend(std::iter::repeat(b"1aI".as_slice()).take(5_000).flatten());
        let out = demangle_all(vec![open.into(), nested.into(), b"_Z3fooi".to_vec().into()]);
        assert_eq!(out.len(), 3);
        assert!(out[0].0.starts_with("_Z1fPFv"), "not demangled, kept as given");
        assert_eq!(out[2].0, "foo(int)");
    }
}
