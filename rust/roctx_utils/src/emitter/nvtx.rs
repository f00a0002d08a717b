//! NVTX3 calls as a source (nvidia_sources.md A): what the injection's slots do once `abi::nvtx`
//! has decoded their arguments. Ranges, marks and start/end ranges are recorded through the
//! runtime's sink, as roctx ranges are; thread names go to the collector; domains and
//! registered strings get process-lifetime handles. (CUDA device and stream names are accepted
//! and dropped by `abi::nvtx`: nothing here could use them, see there.)
//!
//! - **Domains** are process-lifetime records, one per name, in a registry; the handle is the
//!   record's address. Domain
//!   ranges carry the domain's name into their label as `<domain>: <message>` unless the domain
//!   is XLA's `TSL` (whose titles already say what they are) or the default (null) domain.
//! - **Registered strings** are RegisterString's pool handles (`intern::register`): pointers to
//!   NUL-terminated copies that live for the process, so `abi::nvtx` reads a registered message
//!   like any C string the client passes. Messages arrive here decoded, as bytes.
//! - **Push/pop levels** are per thread and per domain, as NVTX defines them: push returns the
//!   0-based level of the range it opens, pop the level of the range it closes, -1 when the
//!   domain has nothing open on the thread (then nothing is recorded either).

use std::cell::RefCell;
use std::ffi::{c_int, c_void};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use roctx_sys::nvtx;
use roctx_sys::tls::{Slot, SlotId};

use super::intern;
use crate::runtime;

/// A domain the client created; lives for the process.
#[derive(Debug)]
pub struct Domain {
    name: Vec<u8>,
    /// Whether labels carry the name (not for XLA's `TSL`).
    prefix: bool,
}

/// XLA's domain (`DefaultProfilerDomain`): its titles are self-describing.
const XLA_DOMAIN: &[u8] = b"TSL";
/// Longest label built here (domain prefix + message), like RegisterString's cut.
const MAX_LABEL: usize = intern::MAX_STRING_BYTES;

/// Most distinct domain names; past it, new names share [`OVERFLOW`] (never refused).
const MAX_DOMAINS: usize = 4096;
static OVERFLOW: Domain = Domain { name: Vec::new(), prefix: false };
static REGISTRY: Mutex<Option<HashMap<Vec<u8>, &'static Domain>>> = Mutex::new(None);

/// `nvtxDomainCreateA/W`: the handle for `name`, the same for the same name (a domain is never
/// refused: a null return tells XLA to disable its NVTX path for good). Handles live for the
/// process, in a registry (so leak checkers see them reachable).
pub fn domain_create(name: &[u8]) -> *mut c_void {
    let name: Vec<u8> = name.iter().copied().take(256).collect();
    let mut registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    let registry = registry.get_or_insert_with(HashMap::new);
    let domain: &'static Domain = match registry.get(&name) {
        Some(d) => d,
        None if registry.len() >= MAX_DOMAINS => {
            overflowed();
            &OVERFLOW
        }
        None => {
            let prefix = !name.is_empty() && name != XLA_DOMAIN;
            let d: &'static Domain = Box::leak(Box::new(Domain { name: name.clone(), prefix }));
            registry.insert(name, d);
            d
        }
    };
    std::ptr::from_ref(domain).cast_mut().cast()
}

/// Domain names created past [`MAX_DOMAINS`] so far.
static OVERFLOWED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts a domain name past the cap, and says so at the 1st, 2nd, 4th, 8th, ... (never
/// silently, never one line per create): those domains share one handle, so their push levels
/// are shared and their labels carry no domain name.
fn overflowed() {
    let n = OVERFLOWED.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
    if n.is_power_of_two() {
        roctx_config::log::warn(format_args!(
            "NVTX: {n} domain name(s) past the {MAX_DOMAINS} kept share one domain handle: their ranges' push levels are counted together and their labels carry no domain name"
        ));
    }
}

/// Domain names created past the cap so far (they share one handle).
pub fn domains_over_cap() -> u64 {
    OVERFLOWED.load(std::sync::atomic::Ordering::Relaxed)
}

/// `nvtxDomainRegisterStringA/W`: a process-lifetime handle for `text`.
pub fn register_string(text: &[u8]) -> *mut c_void {
    intern::register(text).cast_mut().cast()
}

impl Domain {
    /// What this domain's labels start with (`<name>: `), if anything.
    pub fn prefix(&self) -> Option<&[u8]> {
        self.prefix.then_some(&*self.name)
    }
}

// Slots of the static-TLS block (`roctx_sys::tls`): no `__tls_get_addr` in the injection.
/// Open ranges per domain on this thread.
// SAFETY: the only slot with this word.
#[allow(unsafe_code)]
static LEVELS: Slot<Levels, { SlotId::NvtxLevels as usize }> = unsafe { Slot::new(Levels::default) };

/// A thread's open-range counts: the default domain's (`nvtxRangePush*`, PyTorch's and most
/// callers') in a cell of its own, so is the first other domain the thread pushes in (XLA's
/// `TSL` under JAX), and the rest in a short list (domain address, count). The two cells are
/// checked inline; the list, out of line (a call and a borrow: 64 instructions per pair when
/// XLA's domain went there, callgrind, issue 44).
#[derive(Default)]
struct Levels {
    default: std::cell::Cell<c_int>,
    /// The first non-default domain pushed in on this thread (0: none yet) and its count.
    first: std::cell::Cell<usize>,
    first_count: std::cell::Cell<c_int>,
    others: RefCell<Vec<(usize, c_int)>>,
}

impl Levels {
    /// `domain`'s count if it has a cell of its own (the default domain, the first other one).
    #[inline(always)]
    fn cell(&self, domain: usize) -> Option<&std::cell::Cell<c_int>> {
        if domain == 0 {
            Some(&self.default)
        } else if domain == self.first.get() {
            Some(&self.first_count)
        } else {
            None
        }
    }

    /// One more range open in `domain`; returns the level it opened at.
    #[inline(always)]
    fn push(&self, domain: usize) -> c_int {
        let Some(cell) = self.cell(domain) else { return self.push_other(domain) };
        let n = cell.get().saturating_add(1);
        cell.set(n);
        n - 1
    }

    #[inline(never)]
    fn push_other(&self, domain: usize) -> c_int {
        if self.first.get() == 0 {
            self.first.set(domain);
            self.first_count.set(1);
            return 0;
        }
        let mut l = self.others.borrow_mut();
        match l.iter_mut().find(|(d, _)| *d == domain) {
            Some((_, n)) => {
                *n = n.saturating_add(1);
                *n - 1
            }
            None => {
                l.push((domain, 1));
                0
            }
        }
    }

    /// One range fewer open in `domain`; returns the level closed, -1 if none was open.
    #[inline(always)]
    fn pop(&self, domain: usize) -> c_int {
        let Some(cell) = self.cell(domain) else { return self.pop_other(domain) };
        let n = cell.get();
        if n <= 0 {
            return -1;
        }
        cell.set(n - 1);
        n - 1
    }

    #[inline(never)]
    fn pop_other(&self, domain: usize) -> c_int {
        let mut l = self.others.borrow_mut();
        match l.iter_mut().find(|(d, _)| *d == domain) {
            Some((_, n)) if *n > 0 => {
                *n -= 1;
                *n
            }
            _ => -1,
        }
    }
}

/// Reused buffer for prefixed labels.
// SAFETY: the only slot with this word.
#[allow(unsafe_code)]
static SCRATCH: Slot<RefCell<Vec<u8>>, { SlotId::NvtxScratch as usize }> =
    unsafe { Slot::new(|| RefCell::new(Vec::new())) };

/// Runs `f` with `text` as a label: `<prefix>: <text>` when the domain has a prefix, cut to
/// [`MAX_LABEL`] bytes. The common case, no prefix, inline; the prefix's out of line.
#[inline(always)]
fn with_label<R>(prefix: Option<&[u8]>, text: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
    match prefix {
        None => f(&text[..text.len().min(MAX_LABEL)]),
        Some(prefix) => with_prefixed_label(prefix, text, f),
    }
}

#[inline(never)]
fn with_prefixed_label<R>(prefix: &[u8], text: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
    let built = SCRATCH.with(|s| {
        let mut s = s.try_borrow_mut().ok()?;
        s.clear();
        s.extend_from_slice(prefix);
        s.extend_from_slice(b": ");
        let room = MAX_LABEL.saturating_sub(s.len());
        s.extend_from_slice(&text[..text.len().min(room)]);
        Some(std::mem::take(&mut *s))
    });
    match built {
        Some(Some(label)) => {
            let out = f(&label);
            let _ = SCRATCH.with(|s| {
                if let Ok(mut s) = s.try_borrow_mut() {
                    *s = label;
                }
            });
            out
        }
        // Re-entered from inside `f`, or during thread exit: no scratch, no prefix.
        _ => f(&text[..text.len().min(MAX_LABEL)]),
    }
}

/// `nvtxDomainRangePushEx` (`domain` 0: the default domain, `nvtxRangePush*`). Returns the
/// 0-based level on this thread in this domain.
//
// The closures of the three hot entries are `#[inline(always)]`: left to LLVM, the sink's push
// stayed out of line with six saved registers (issue 44, callgrind).
#[inline(always)]
pub fn range_push(domain: usize, prefix: Option<&[u8]>, text: &[u8]) -> c_int {
    runtime::get(); // may start the automatic session, which must see this range
    let level = LEVELS.with(#[inline(always)] |l| l.push(domain)).unwrap_or(nvtx::NO_PUSH_POP_TRACKING);
    if let Some(sink) = runtime::sink() {
        let seq = with_label(prefix, text, #[inline(always)] |label| sink.push(label));
        runtime::range_changed(seq);
    }
    level
}

/// [`range_push`] of a registered string's text (`nvtxDomainRegisterString`'s handle, our
/// pool's: it lives, unchanged, for the process) in a domain without a prefix: the sink may know
/// it by its address alone, no `strlen`, no compare (issue 44).
#[inline(always)]
pub fn range_push_registered(domain: usize, text: roctx_sys::CText<'static>) -> c_int {
    runtime::get(); // may start the automatic session, which must see this range
    let level = LEVELS.with(#[inline(always)] |l| l.push(domain)).unwrap_or(nvtx::NO_PUSH_POP_TRACKING);
    if let Some(sink) = runtime::sink() {
        // The pool's strings are cut to MAX_LABEL bytes already (intern::MAX_STRING_BYTES).
        runtime::range_changed(sink.push_registered(text));
    }
    level
}

/// `nvtxDomainRangePop` (`domain` 0: `nvtxRangePop`). Returns the level closed, -1 if the
/// domain had no range open on this thread (then nothing is recorded).
#[inline(always)]
pub fn range_pop(domain: usize) -> c_int {
    let level = LEVELS.with(#[inline(always)] |l| l.pop(domain)).unwrap_or(nvtx::NO_PUSH_POP_TRACKING);
    if level >= 0 {
        if let Some(sink) = runtime::sink() {
            runtime::range_changed(sink.pop());
        }
    }
    level
}

/// `nvtxDomainMarkEx` / `nvtxMark*`.
pub fn mark(prefix: Option<&[u8]>, text: &[u8]) {
    runtime::get();
    if let Some(sink) = runtime::sink() {
        with_label(prefix, text, |label| sink.mark(label));
    }
}

/// `nvtxDomainRangeStartEx` / `nvtxRangeStart*`. Returns a non-zero id.
pub fn range_start(prefix: Option<&[u8]>, text: &[u8]) -> u64 {
    static NEXT_ID: AtomicU64 = AtomicU64::new(1);
    runtime::get();
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    if let Some(sink) = runtime::sink() {
        with_label(prefix, text, |label| sink.range_start(id, label));
    }
    id
}

/// `nvtxDomainRangeEnd` / `nvtxRangeEnd`, from any thread.
pub fn range_end(id: u64) {
    if id == 0 {
        return;
    }
    if let Some(sink) = runtime::sink() {
        sink.range_stop(id);
    }
}

/// `nvtxNameOsThreadA/W`: names the OS thread `tid` (a `gettid` value) for export.
pub fn name_os_thread(tid: u32, name: &[u8]) {
    runtime::name_thread(u64::from(tid), name);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_domain_counts_its_own_levels_whether_in_a_cell_or_the_list() {
        let l = Levels::default();
        let (tsl, other, third) = (0x1000, 0x2000, 0x3000);
        assert_eq!(l.pop(tsl), -1, "nothing open in a domain never pushed");
        assert_eq!((l.push(0), l.push(tsl), l.push(tsl)), (0, 0, 1));
        assert_eq!((l.push(other), l.push(third), l.push(other)), (0, 0, 1), "the list's domains");
        assert_eq!(l.push(0), 1);
        assert_eq!((l.pop(other), l.pop(other), l.pop(other)), (1, 0, -1));
        assert_eq!((l.pop(tsl), l.pop(tsl), l.pop(tsl)), (1, 0, -1));
        assert_eq!((l.pop(third), l.pop(third)), (0, -1));
        assert_eq!((l.pop(0), l.pop(0), l.pop(0)), (1, 0, -1));
        assert_eq!(l.push(tsl), 0, "the first domain keeps its cell once its ranges all closed");
        assert_eq!(l.first.get(), tsl);
    }

    #[test]
    fn domains_past_the_cap_share_one_handle_and_are_counted() {
        // Issue 25, item 16: they shared a handle silently (push levels 0 and 1 where NVTX
        // defines 0 and 0, labels without their domain name).
        let before = domains_over_cap();
        let handles: Vec<usize> = (0..MAX_DOMAINS + 5).map(|i| domain_create(format!("cap_test_{i}").as_bytes()) as usize).collect();
        assert!(domains_over_cap() >= before + 5, "{} then {}", before, domains_over_cap());
        assert_eq!(domain_create(b"cap_test_0") as usize, handles[0], "an existing name keeps its handle");
        let overflow = std::ptr::from_ref(&OVERFLOW) as usize;
        assert_eq!(handles[MAX_DOMAINS + 4], overflow);
    }
}
