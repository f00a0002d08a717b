//! Per-thread values reached with one thread-pointer-relative load, also where the library is a
//! `dlopen`'ed `.so` (issue 44).
//!
//! Rust's `thread_local!` in a shared object uses the general-dynamic TLS model: every access
//! is a call to glibc's `__tls_get_addr` (about 11 instructions), and a value with a destructor
//! adds a state check on top. The NVTX injection (`libroctx_utils_nvtx.so`), the Python
//! package's library and llama.cpp's hook library are all loaded that way, and a captured NVTX
//! range made eight such calls (88 of its 753 instructions, callgrind). Here every thread has
//! one small block of words in the **static TLS** area (the initial-exec model: the linker puts
//! the block's offset from the thread pointer in the GOT once, at load), and each per-thread
//! value of the library is a [`Slot`]: a word of that block holding a pointer to the value,
//! created at the thread's first use and dropped at its exit.
//!
//! # The static TLS a `dlopen`'ed copy takes
//!
//! A library with initial-exec TLS must find room in the static TLS area when `dlopen` loads
//! it. glibc keeps a surplus for exactly that (`glibc.rtld.optional_static_tls`, 512 bytes by
//! default since 2.32, on top of the surplus it reserves for its own libraries); this block
//! takes [`BLOCK_BYTES`] (128) of it, once per copy of the library in the process. Were the
//! surplus exhausted by other libraries, `dlopen` would fail with "cannot allocate memory in
//! static TLS block" and say so; `GLIBC_TUNABLES=glibc.rtld.optional_static_tls=<bytes>` makes
//! more room (docs/architecture.md, "Per-thread state").
//!
//! Elsewhere than x86-64 Linux the block is an ordinary `thread_local!` (one `__tls_get_addr`
//! per access in a shared object).

use std::cell::Cell;

/// Words of the block: one per [`SlotId`] (word 0 is unused).
const WORDS: usize = 16;
/// Bytes of static TLS the block takes.
pub const BLOCK_BYTES: usize = WORDS * std::mem::size_of::<usize>();
/// A word's value after its thread's value was dropped: the slot is gone for that thread.
const GONE: usize = 1;

/// The calling thread's block: one word per [`Slot`] (0: not created on this thread yet,
/// [`GONE`], or the address of the thread's value).
#[repr(C, align(64))]
struct Block {
    words: [Cell<usize>; WORDS],
}

const _: () = assert!(std::mem::size_of::<Block>() == BLOCK_BYTES);

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod block {
    use super::Block;

    // The block, zero-filled in each thread's static TLS (`.tbss`, hidden: each copy of the
    // library in a process has its own).
    core::arch::global_asm!(
        ".pushsection .tbss.roctx_utils_tls_block,\"awT\",@nobits",
        ".p2align 6",
        ".globl roctx_utils_tls_block",
        ".hidden roctx_utils_tls_block",
        ".type roctx_utils_tls_block,@object",
        ".size roctx_utils_tls_block,128",
        "roctx_utils_tls_block:",
        ".zero 128",
        ".popsection",
    );
    const _: () = assert!(super::BLOCK_BYTES == 128, "the .size and .zero above");

    /// The calling thread's block: its offset from the thread pointer, which the dynamic linker
    /// (or, in an executable, the static linker) wrote into the GOT, plus the thread pointer.
    #[inline(always)]
    pub(super) fn get() -> &'static Block {
        let block: *const Block;
        // SAFETY: the initial-exec access sequence of the x86-64 TLS ABI: `%fs:0` holds the
        // thread pointer, the GOT word the offset of the block in this thread's static TLS. It
        // reads only those two words.
        unsafe {
            core::arch::asm!(
                "mov {b}, qword ptr [rip + roctx_utils_tls_block@GOTTPOFF]",
                "add {b}, qword ptr fs:[0]",
                b = out(reg) block,
                options(pure, readonly, nostack),
            );
        }
        // SAFETY: the block lives as long as the thread, 64-byte aligned and zero-filled at
        // the thread's start; `Block` is `!Sync`, so the reference stays on this thread.
        unsafe { &*block }
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
mod block {
    use super::{Block, WORDS};
    use std::cell::Cell;

    thread_local! {
        static BLOCK: Block = const { Block { words: [const { Cell::new(0) }; WORDS] } };
    }

    #[inline(always)]
    pub(super) fn get() -> &'static Block {
        // The block has no destructor: its storage lives as long as the thread.
        let block: *const Block = BLOCK.with(|b| b as *const Block);
        // SAFETY: see above; `Block` is `!Sync`, so the reference stays on this thread.
        unsafe { &*block }
    }
}

/// Every per-thread value of the library, each with its word of the block.
///
/// The list lives here, below its users, rather than indices being handed out at first use:
/// a slot's word is then a constant, so reaching a value is the block's address, one load
/// and one compare, with no index to load and no bounds to check, and a library with more
/// slots than words does not compile.
#[repr(usize)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotId {
    /// `os::current_tid`'s cached thread id.
    Tid = 1,
    /// The collector's per-thread event buffer.
    CollectorBuffer,
    /// The kernel stage's per-thread op log.
    OpLog,
    /// The NVTX emitter's per-domain range levels.
    NvtxLevels,
    /// The NVTX emitter's label scratch buffer.
    NvtxScratch,
    /// The CUPTI listener's "this thread was noted" flag.
    CuptiNoted,
    /// The kernel listener's op scope.
    KernelScope,
    /// The ggml hooks' geometry cache.
    GgmlCache,
    /// This module's tests.
    #[doc(hidden)]
    TestA,
    /// This module's tests.
    #[doc(hidden)]
    TestB,
}

/// A per-thread value of type `T` in word `ID` of the block (a [`SlotId`]), created by `init`
/// at a thread's first [`Slot::with`] and dropped at the thread's exit. Like
/// `std::thread::LocalKey`, minus `__tls_get_addr`.
///
/// The word is a const parameter, not a field: a static's fields are opaque to the crates that
/// use it (no LTO), and a field would cost a load and a bounds check per access.
#[derive(Debug)]
pub struct Slot<T: 'static, const ID: usize> {
    init: fn() -> T,
}

impl<T: 'static, const ID: usize> Slot<T, ID> {
    /// A slot whose per-thread value `init` creates, in word `ID` (`SlotId::X as usize`).
    ///
    /// # Safety
    /// No other `Slot` in the process uses word `ID`: two would read each other's values as
    /// their own type.
    pub const unsafe fn new(init: fn() -> T) -> Slot<T, ID> {
        const { assert!(ID > 0 && ID < WORDS, "a slot's word is in the block") };
        Slot { init }
    }

    /// Runs `f` on the calling thread's value, created now if this is the thread's first use;
    /// `None` once the thread's value was dropped (a destructor of another thread-local running
    /// after ours at the thread's exit), or if the thread is exiting and it can no longer
    /// arrange for a new value to be dropped.
    #[inline(always)]
    pub fn with<R>(&'static self, f: impl FnOnce(&T) -> R) -> Option<R> {
        let value = get().words[ID].get();
        // `f` is called from one place only, so that it is inlined here (two calls of it, one
        // on the slow path, kept it out of line: 16 instructions per call on the capture path).
        let value = if value > GONE { value as *const T } else { self.value_slow()? };
        // SAFETY: a word above GONE holds the address of this thread's `T` (created by `create`
        // for this slot, the only one with this word, and dropped only by the reaper, which
        // first sets the word to GONE); the reference does not outlive `f`.
        Some(f(unsafe { &*value }))
    }

    /// Whether the calling thread has a value in this slot now (created and not dropped).
    pub fn exists(&'static self) -> bool {
        get().words[ID].get() > GONE
    }

    /// The thread's value created now (`None`: gone, or it cannot be).
    #[cold]
    #[inline(never)]
    fn value_slow(&'static self) -> Option<*const T> {
        match get().words[ID].get() {
            GONE => None,
            0 => create(ID, self.init),
            value => Some(value as *const T), // `init` of an outer call created it
        }
    }
}

/// The calling thread's block.
#[inline(always)]
fn get() -> &'static Block {
    block::get()
}

/// What drops a thread's values at its exit: one `thread_local!` per thread (reached only when
/// a value is created), whose destructor marks each word GONE and then drops its value, newest
/// first.
struct Reaper {
    owned: std::cell::RefCell<Vec<Owned>>,
}

/// A value the reaper drops: its word, its address and its type's drop.
struct Owned {
    index: usize,
    value: usize,
    drop_value: unsafe fn(usize),
}

impl Drop for Reaper {
    fn drop(&mut self) {
        // One at a time, so a value's destructor that creates another value (an event recorded
        // from a destructor) finds the list borrowable; it is dropped here too.
        loop {
            let Some(Owned {
                index,
                value,
                drop_value,
            }) = self.owned.borrow_mut().pop()
            else {
                break;
            };
            get().words[index].set(GONE);
            // SAFETY: `value` is the `Box<T>` `create` leaked for this `drop_value::<T>`; the
            // word no longer names it, so no `with` can reach it from now on.
            unsafe { drop_value(value) };
        }
    }
}

thread_local! {
    static REAPER: Reaper = const { Reaper { owned: std::cell::RefCell::new(Vec::new()) } };
}

/// Drops the `Box<T>` at `value`.
///
/// # Safety
/// `value` is a `Box<T>` leaked by [`create`], dropped once.
unsafe fn drop_value<T>(value: usize) {
    // SAFETY: per the contract.
    drop(unsafe { Box::from_raw(value as *mut T) });
}

/// Creates the calling thread's value of slot `index` and arranges for it to be dropped at the
/// thread's exit; `None` (and the word GONE) if the thread's destructors already ran.
fn create<T>(index: usize, init: fn() -> T) -> Option<*const T> {
    let word = &get().words[index];
    let value = Box::into_raw(Box::new(init()));
    let registered = REAPER
        .try_with(|r| match r.owned.try_borrow_mut() {
            Ok(mut owned) => {
                owned.push(Owned {
                    index,
                    value: value as usize,
                    drop_value: drop_value::<T>,
                });
                true
            }
            Err(_) => false,
        })
        .unwrap_or(false);
    if !registered {
        // The thread is past its reaper: nothing would drop the value.
        // SAFETY: just leaked above, never published.
        unsafe { drop_value::<T>(value as usize) };
        word.set(GONE);
        return None;
    }
    if word.get() == 0 {
        word.set(value as usize);
        Some(value)
    } else {
        // `init` itself used this slot on this thread (created it, or saw it gone): keep the
        // word's; `value` stays owned by the reaper and is dropped at exit.
        let current = word.get();
        (current > GONE).then_some(current as *const T)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    static DROPS: AtomicU64 = AtomicU64::new(0);

    struct Counted(u64);
    impl Drop for Counted {
        fn drop(&mut self) {
            DROPS.fetch_add(self.0, Ordering::Relaxed);
        }
    }

    // SAFETY: the only slots with these words (the test ids).
    static COUNTED: Slot<Counted, { SlotId::TestA as usize }> = unsafe { Slot::new(|| Counted(1)) };
    // SAFETY: as above.
    static CELL: Slot<Cell<u64>, { SlotId::TestB as usize }> = unsafe { Slot::new(|| Cell::new(7)) };

    #[test]
    fn each_thread_gets_its_own_value_and_it_is_dropped_at_exit() {
        let before = DROPS.load(Ordering::Relaxed);
        let handles: Vec<_> = (0..4)
            .map(|i| {
                std::thread::spawn(move || {
                    assert!(!CELL.exists());
                    assert_eq!(CELL.with(Cell::get), Some(7));
                    CELL.with(|c| c.set(i));
                    assert_eq!(CELL.with(Cell::get), Some(i));
                    assert!(COUNTED.with(|c| c.0) == Some(1));
                    assert!(CELL.exists());
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(
            DROPS.load(Ordering::Relaxed) - before,
            4,
            "one value per thread, each dropped once"
        );
    }

    #[test]
    fn a_destructor_running_after_the_reaper_sees_the_slot_gone() {
        // A thread_local registered before the reaper (first touched before any slot) is
        // dropped after it, as a C++ thread_local constructed before our first use is.
        struct Late(Arc<AtomicU64>);
        impl Drop for Late {
            fn drop(&mut self) {
                let seen = CELL.with(Cell::get);
                self.0
                    .store(if seen.is_none() { 1 } else { 2 }, Ordering::Relaxed);
            }
        }
        thread_local! {
            static LATE: std::cell::RefCell<Option<Late>> = const { std::cell::RefCell::new(None) };
        }
        let result = Arc::new(AtomicU64::new(0));
        let r = Arc::clone(&result);
        std::thread::spawn(move || {
            LATE.with(|l| *l.borrow_mut() = Some(Late(r)));
            assert_eq!(CELL.with(Cell::get), Some(7));
        })
        .join()
        .unwrap();
        assert_eq!(
            result.load(Ordering::Relaxed),
            1,
            "the value was gone, not recreated or dangling"
        );
    }

    #[test]
    fn the_block_is_per_thread() {
        CELL.with(|c| c.set(99));
        std::thread::spawn(|| assert_eq!(CELL.with(Cell::get), Some(7)))
            .join()
            .unwrap();
        assert_eq!(CELL.with(Cell::get), Some(99));
    }
}
