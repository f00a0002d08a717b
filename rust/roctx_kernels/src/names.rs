//! Kernel names: kept mangled when the code object registers them (on the SDK's thread, whose
//! stack size we do not know), demangled once, later, on a thread with a stack we chose.

/// The demangled form of a mangled kernel symbol exactly as `c++filt` prints it (libstdc++'s
/// `__cxa_demangle`, [`roctx_sys::demangle`]; a `.kd` / clone suffix shows as ` [clone .kd]`,
/// as in llama.cpp's report); a name that is not a symbol or does not demangle is kept as given
/// (lossy UTF-8), as `c++filt` keeps it.
pub fn demangle(mangled: &[u8]) -> String {
    roctx_sys::demangle::cxa(mangled).unwrap_or_else(|| String::from_utf8_lossy(mangled).into_owned())
}

/// Stack of the thread that demangles: the demangler recurses over names from code objects we
/// did not build (libstdc++ stops at its own recursion limit, well inside this).
const DEMANGLER_STACK: usize = 16 << 20;

/// Demangles every name of `names` on a thread of its own with a [`DEMANGLER_STACK`] stack, so
/// the caller's stack size never matters; if no thread can be started, the names stay mangled.
pub(crate) fn demangle_all(names: Vec<Box<[u8]>>) -> Vec<String> {
    let fallback = |names: &[Box<[u8]>]| names.iter().map(|n| String::from_utf8_lossy(n).into_owned()).collect();
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("roctx-demangle".into())
            .stack_size(DEMANGLER_STACK)
            .spawn_scoped(scope, || names.iter().map(|n| demangle(n)).collect::<Vec<_>>());
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
        assert!(out[0].starts_with("_Z1fPFv"), "not demangled, kept as given");
        assert_eq!(out[2], "foo(int)");
    }
}
