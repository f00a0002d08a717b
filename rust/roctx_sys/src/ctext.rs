//! A borrowed C string whose length is only computed when someone needs the bytes.

use std::ffi::{c_char, CStr};
use std::marker::PhantomData;
use std::ptr::NonNull;

/// A borrowed, NUL-terminated C string: roctx takes the pointer as is, so the hot path never
/// pays for a `strlen` unless AnnotationStack or a capture sink needs the bytes.
#[derive(Debug, Clone, Copy)]
pub struct CText<'a> {
    ptr: NonNull<c_char>,
    _borrow: PhantomData<&'a CStr>,
}

impl<'a> CText<'a> {
    /// `ptr` as text, with null read as `""`: a null title still opens a range, so that the
    /// matching pop stays balanced.
    ///
    /// # Safety
    /// A non-null `ptr` must point at a NUL-terminated string that stays valid and unchanged for
    /// `'a`.
    #[inline(always)]
    pub unsafe fn from_ptr_or_empty(ptr: *const c_char) -> CText<'a> {
        let ptr = NonNull::new(ptr.cast_mut()).unwrap_or_else(|| NonNull::from(c"".to_bytes_with_nul()).cast());
        CText { ptr, _borrow: PhantomData }
    }

    /// Borrows a `CStr`.
    pub fn from_c_str(text: &'a CStr) -> CText<'a> {
        // SAFETY: a &CStr is NUL-terminated and valid for its lifetime.
        unsafe { CText::from_ptr_or_empty(text.as_ptr()) }
    }

    /// The NUL-terminated pointer, never null.
    #[inline(always)]
    pub fn as_ptr(self) -> *const c_char {
        self.ptr.as_ptr()
    }

    /// The bytes before the NUL (runs `strlen`).
    #[inline]
    pub fn to_bytes(self) -> &'a [u8] {
        // SAFETY: construction guarantees a NUL-terminated string valid for 'a.
        unsafe { CStr::from_ptr(self.ptr.as_ptr()) }.to_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_reads_as_the_empty_string() {
        // SAFETY: null is allowed.
        let t = unsafe { CText::from_ptr_or_empty(std::ptr::null()) };
        assert_eq!(t.to_bytes(), b"");
        assert!(!t.as_ptr().is_null());
        assert_eq!(CText::from_c_str(c"abc").to_bytes(), b"abc");
    }
}
