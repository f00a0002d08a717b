//! Guard pages for the fuzz targets that hand raw pointers to decoders (included with
//! `#[path = "../../fuzz/guard.rs"] mod guard;`, like `mutate.rs`). Linux only, and without the
//! `libc` crate (not every crate that includes this depends on it): the few libc functions are
//! declared here.
//!
//! [`Guarded::place`] copies bytes so that they end exactly where a `PROT_NONE` page begins, so
//! a decoder that reads or writes one byte past what its contract makes valid faults at once.
//! [`install_segv_reporter`] makes that fault print the input being run, as hex, before the
//! process dies of it (a fault cannot be caught like a panic).
#![allow(dead_code)]

use std::cell::Cell;
use std::ffi::{c_int, c_long, c_void};

extern "C" {
    fn mmap(addr: *mut c_void, len: usize, prot: c_int, flags: c_int, fd: c_int, offset: i64) -> *mut c_void;
    fn mprotect(addr: *mut c_void, len: usize, prot: c_int) -> c_int;
    fn munmap(addr: *mut c_void, len: usize) -> c_int;
    fn sysconf(name: c_int) -> c_long;
    fn signal(signum: c_int, handler: usize) -> usize;
    fn write(fd: c_int, buf: *const c_void, count: usize) -> isize;
}

// Linux values (the same on x86-64 and aarch64).
const PROT_NONE: c_int = 0;
const PROT_READ_WRITE: c_int = 1 | 2;
const MAP_PRIVATE_ANONYMOUS: c_int = 0x02 | 0x20;
const SC_PAGESIZE: c_int = 30;
const SIGSEGV: c_int = 11;
const SIG_DFL: usize = 0;

/// A guard page, `pages` data pages, a guard page.
pub struct Guarded {
    base: *mut u8,
    page: usize,
    pages: usize,
}

impl Guarded {
    /// One data page.
    pub fn new() -> Guarded {
        Guarded::with_pages(1)
    }

    pub fn with_pages(pages: usize) -> Guarded {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { sysconf(SC_PAGESIZE) }).expect("page size");
        // SAFETY: an anonymous private mapping; the result is checked.
        let base = unsafe { mmap(std::ptr::null_mut(), (pages + 2) * page, PROT_NONE, MAP_PRIVATE_ANONYMOUS, -1, 0) };
        assert!(!base.is_null() && base as isize != -1, "mmap failed");
        let base = base.cast::<u8>();
        // SAFETY: the data pages of our own mapping.
        assert_eq!(unsafe { mprotect(base.add(page).cast(), pages * page, PROT_READ_WRITE) }, 0, "mprotect failed");
        Guarded { base, page, pages }
    }

    /// The most bytes [`Guarded::place`] takes.
    pub fn capacity(&self) -> usize {
        self.pages * self.page
    }

    /// Copies `bytes` so that the last one is the last byte before the guard page; returns
    /// where they start (8-aligned when `bytes.len()` is a multiple of 8).
    pub fn place(&self, bytes: &[u8]) -> *mut u8 {
        assert!(bytes.len() <= self.capacity(), "{} bytes do not fit {} data page(s)", bytes.len(), self.pages);
        // SAFETY: the destination lies inside the data pages.
        unsafe {
            let start = self.base.add((self.pages + 1) * self.page - bytes.len());
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), start, bytes.len());
            start
        }
    }

    /// The `len` bytes at `start`, as a decoder left them.
    pub fn read(&self, start: *const u8, len: usize) -> Vec<u8> {
        let data = self.base as usize + self.page;
        assert!(start as usize >= data && start as usize + len <= data + self.capacity(), "outside the data pages");
        // SAFETY: inside the data pages, checked above.
        unsafe { std::slice::from_raw_parts(start, len) }.to_vec()
    }
}

impl Default for Guarded {
    fn default() -> Guarded {
        Guarded::new()
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once.
        unsafe { munmap(self.base.cast(), (self.pages + 2) * self.page) };
    }
}

thread_local! {
    /// The input being run on this thread, for the SIGSEGV handler.
    static CURRENT: Cell<(*const u8, usize)> = const { Cell::new((std::ptr::null(), 0)) };
}

/// Marks `input` as the one running on this thread (what a fault reports) until the returned
/// value is dropped.
pub fn running(input: &[u8]) -> Running<'_> {
    CURRENT.with(|c| c.set((input.as_ptr(), input.len())));
    Running(std::marker::PhantomData)
}

/// See [`running`].
pub struct Running<'a>(std::marker::PhantomData<&'a [u8]>);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set((std::ptr::null(), 0)));
    }
}

fn put(bytes: &[u8]) {
    // SAFETY: writing a valid buffer to stderr.
    unsafe { write(2, bytes.as_ptr().cast(), bytes.len()) };
}

/// Prints the running input as hex with `write(2)` only, restores the default action and
/// returns: the faulting access runs again and the process dies of SIGSEGV.
extern "C" fn on_segv(_signal: c_int) {
    put(b"\nfuzz: SIGSEGV (a decoder touched a guard page) while running input: ");
    let (ptr, len) = CURRENT.with(Cell::get);
    if ptr.is_null() {
        put(b"<none: the fault was outside a fuzz input>");
    } else {
        // SAFETY: `running` keeps the input borrowed while it is CURRENT.
        let input = unsafe { std::slice::from_raw_parts(ptr, len) };
        const HEX: &[u8; 16] = b"0123456789abcdef";
        for chunk in input.chunks(64) {
            let mut line = [0u8; 128];
            for (i, b) in chunk.iter().enumerate() {
                line[2 * i] = HEX[usize::from(b >> 4)];
                line[2 * i + 1] = HEX[usize::from(b & 15)];
            }
            put(&line[..2 * chunk.len()]);
        }
    }
    put(b"\n");
    // SAFETY: restoring the default disposition.
    unsafe { signal(SIGSEGV, SIG_DFL) };
}

/// Installs the SIGSEGV reporter for this process (once).
pub fn install_segv_reporter() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: the handler only calls write(2) and signal(2).
        unsafe { signal(SIGSEGV, on_segv as extern "C" fn(c_int) as usize) };
    });
}
