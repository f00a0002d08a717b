//! Kernel names as `c++filt` prints them: libstdc++'s `__cxa_demangle`, the demangler nsys,
//! Kineto and rocprofv3 show (the same code as binutils' `c++filt`), instead of a Rust
//! reimplementation that spells some names differently (`(unsigned int)32` for `32u`, lambdas).
//!
//! Like `c++filt` without `-t`, only symbols (`_Z...`) are demangled: a plain name (a Triton or
//! OpenCL kernel, `main`) is a name, not a mangled type. Clone suffixes come out as c++filt
//! prints them (`_Z3fooi.kd` is `foo(int) [clone .kd]`). The demangler recurses; callers run it
//! on a thread with a stack they chose (libstdc++ also stops at its own recursion limit).

use std::ffi::{c_char, c_int, c_void, CStr, CString};

extern "C" {
    /// libstdc++'s `abi::__cxa_demangle` (`cxxabi.h`): with a null output buffer it returns a
    /// `malloc`ed string, or null with `*status` non-zero.
    fn __cxa_demangle(mangled: *const c_char, out: *mut c_char, length: *mut usize, status: *mut c_int) -> *mut c_char;
}

/// `mangled` demangled as `c++filt` prints it, or `None` when it is not a symbol `c++filt` would
/// demangle (not `_Z...`, contains a NUL, or rejected by the demangler).
pub fn cxa(mangled: &[u8]) -> Option<String> {
    cxa_within(mangled, usize::MAX).unwrap_or(None)
}

/// [`cxa`], but a demangled name longer than `max_len` bytes is not returned: `Err(its length)`.
/// A 167-byte symbol whose templates nest through back-references demangles to 54 MB; a name
/// like that is no use to anyone, and repeated per report row it made a 1 GB report.
pub fn cxa_within(mangled: &[u8], max_len: usize) -> Result<Option<String>, usize> {
    if !mangled.starts_with(b"_Z") {
        return Ok(None);
    }
    let Ok(c) = CString::new(mangled) else { return Ok(None) };
    let mut status: c_int = 0;
    // SAFETY: a NUL-terminated input, a null buffer (the demangler allocates), a valid status.
    let out = unsafe { __cxa_demangle(c.as_ptr(), std::ptr::null_mut(), std::ptr::null_mut(), &mut status) };
    if out.is_null() {
        return Ok(None);
    }
    // SAFETY: on success the demangler returns a NUL-terminated string it allocated.
    let text = (status == 0).then(|| unsafe { CStr::from_ptr(out) });
    let result = match text {
        Some(t) if t.to_bytes().len() > max_len => Err(t.to_bytes().len()),
        Some(t) => Ok(Some(t.to_string_lossy().into_owned())),
        None => Ok(None),
    };
    // SAFETY: `out` came from the demangler's malloc and is freed once (`text` is not used after).
    unsafe { libc::free(out.cast::<c_void>()) };
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_are_demangled_and_everything_else_is_left_alone() {
        assert_eq!(cxa(b"_Z3fooi").as_deref(), Some("foo(int)"));
        assert_eq!(cxa(b"_Z3fooi.kd").as_deref(), Some("foo(int) [clone .kd]"));
        assert_eq!(cxa(b"i"), None, "a type, which c++filt leaves alone without -t");
        assert_eq!(cxa(b"triton_poi_fused_add_0"), None);
        assert_eq!(cxa(b"_Z"), None);
        assert_eq!(cxa(b"_Z3f\0oi"), None);
        assert_eq!(cxa(b"_Zxx!!"), None);
    }

    #[test]
    fn a_name_over_the_limit_is_not_returned_but_measured() {
        assert_eq!(cxa_within(b"_Z3fooi", 8), Ok(Some("foo(int)".to_owned())));
        assert_eq!(cxa_within(b"_Z3fooi", 7), Err(8));
        assert_eq!(cxa_within(b"triton_k", 1), Ok(None));
    }
}
