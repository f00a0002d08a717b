//! The host's AnnotationStack, the one outbound call that is C++: its own small cxx bridge to a
//! shim (`cc/annotation_stack_shim.cc`) that Bazel compiles against whichever AnnotationStack
//! `//:annotation_stack` selects (XLA's own, or the bundled compat copy). Part of the `sys`
//! layer: bindings only, no policy. It lives in this crate rather than in `roctx_sys` because
//! Bazel compiles the generated C++ of this crate's bridges, and a C++ dependency would
//! otherwise reach the `roctx` CLI.

// Generated code: cxx's own items are undocumented and its unsafe blocks uncommented.
#[allow(missing_docs, missing_debug_implementations, unreachable_pub, clippy::undocumented_unsafe_blocks)]
#[cxx::bridge(namespace = "roctx_utils::host")]
mod ffi {
    unsafe extern "C++" {
        include!("roctx_utils/detail/annotation_stack_shim.h");
        fn annotation_stack_is_enabled() -> bool;
        unsafe fn annotation_stack_push(name: *const c_char, len: usize);
        fn annotation_stack_pop();
    }
}

/// `AnnotationStack::IsEnabled()`.
#[inline(always)]
pub fn annotation_stack_enabled() -> bool {
    ffi::annotation_stack_is_enabled()
}

/// `AnnotationStack::PushAnnotation(text)`.
#[inline(always)]
pub fn annotation_stack_push(text: &[u8]) {
    // SAFETY: the shim reads exactly `len` bytes from `ptr` during the call and copies them.
    unsafe { ffi::annotation_stack_push(text.as_ptr().cast(), text.len()) }
}

/// `AnnotationStack::PopAnnotation()`.
#[inline(always)]
pub fn annotation_stack_pop() {
    ffi::annotation_stack_pop()
}
