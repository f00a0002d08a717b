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
    if !mangled.starts_with(b"_Z") {
        return None;
    }
    let c = CString::new(mangled).ok()?;
    let mut status: c_int = 0;
    // SAFETY: a NUL-terminated input, a null buffer (the demangler allocates), a valid status.
    let out = unsafe { __cxa_demangle(c.as_ptr(), std::ptr::null_mut(), std::ptr::null_mut(), &mut status) };
    if out.is_null() {
        return None;
    }
    // SAFETY: on success the demangler returns a NUL-terminated string it allocated.
    let text = (status == 0).then(|| unsafe { CStr::from_ptr(out) }.to_string_lossy().into_owned());
    // SAFETY: `out` came from the demangler's malloc and is freed once.
    unsafe { libc::free(out.cast::<c_void>()) };
    text
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
}
