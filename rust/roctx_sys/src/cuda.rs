//! The CUDA driver's device attributes, for XProf's device capabilities (clock, SMs, memory,
//! compute capability). Read only from a libcuda the process already loaded, and only once the
//! process initialised it: nothing here loads the driver or calls `cuInit`, which would create
//! driver state in a process that never used CUDA (the calls then answer
//! `CUDA_ERROR_NOT_INITIALIZED`, and there are no attributes).

use std::ffi::{c_char, c_int, CStr};
use std::path::Path;

use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};

/// `CUresult`: 0 is `CUDA_SUCCESS`.
type CuResult = c_int;

/// `CUdevice_attribute` values (cuda.h, stable across CUDA 11-13).
const CLOCK_RATE: c_int = 13;
const MULTIPROCESSOR_COUNT: c_int = 16;
const MEMORY_CLOCK_RATE: c_int = 36;
const GLOBAL_MEMORY_BUS_WIDTH: c_int = 37;
const COMPUTE_CAPABILITY_MAJOR: c_int = 75;
const COMPUTE_CAPABILITY_MINOR: c_int = 76;

/// What the driver says of one GPU; `None` where it would not say (CUDA 13's driver deprecates
/// some attributes: each is read on its own, and one refused loses only itself).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeviceAttributes {
    /// `cuDeviceGetName` (`NVIDIA H200`; empty if refused).
    pub name: String,
    /// SM clock, kHz.
    pub clock_khz: Option<u64>,
    /// SMs.
    pub multiprocessors: Option<u64>,
    /// Memory clock, kHz.
    pub memory_clock_khz: Option<u64>,
    /// Memory bus width, bits.
    pub bus_width_bits: Option<u64>,
    /// Compute capability.
    pub compute_capability: Option<(u32, u32)>,
    /// Device memory, bytes.
    pub total_memory: Option<u64>,
}

impl DeviceAttributes {
    /// Peak memory bandwidth from the memory clock and bus width (double data rate), B/s. For
    /// HBM this is the interface's nominal rate, below a datasheet's figure on some parts (an
    /// H200 reports 2619 MHz x 6144 bit, 4.0 TB/s, against 4.8 TB/s sold).
    pub fn memory_bandwidth(&self) -> Option<u64> {
        let (clock, width) = (self.memory_clock_khz?, self.bus_width_bits?);
        Some(2u64.saturating_mul(clock).saturating_mul(1000).saturating_mul(width / 8)).filter(|&b| b > 0)
    }
}

/// The attributes of CUDA device `ordinal` (CUPTI's `deviceId`), from the process's
/// `libcuda.so.1`, else from `explicit` (a library the process loaded under another name), each
/// only if already loaded. The error says what was missing.
pub fn device_attributes(ordinal: u32, explicit: Option<&Path>) -> Result<DeviceAttributes, String> {
    let mut candidates = vec!["libcuda.so.1".to_owned()];
    candidates.extend(explicit.map(|p| p.display().to_string()));
    let lib = candidates
        .iter()
        // SAFETY: RTLD_NOLOAD only returns a library already loaded and initialised in the process.
        .find_map(|c| unsafe { Library::open(Some(c), RTLD_NOW | RTLD_LOCAL | libc::RTLD_NOLOAD) }.ok())
        .ok_or_else(|| format!("no CUDA driver is loaded in the process (looked for {})", candidates.join(", ")))?;
    macro_rules! bind {
        ($name:literal, $ty:ty) => {{
            // SAFETY: `$ty` is the driver API's signature of that function (cuda.h).
            let f: libloading::os::unix::Symbol<$ty> = unsafe { lib.get(concat!($name, "\0").as_bytes()) }.map_err(|_| format!("the CUDA driver has no {}", $name))?;
            *f
        }};
    }
    let get = bind!("cuDeviceGet", unsafe extern "C" fn(*mut c_int, c_int) -> CuResult);
    let attribute = bind!("cuDeviceGetAttribute", unsafe extern "C" fn(*mut c_int, c_int, c_int) -> CuResult);
    let total_mem = bind!("cuDeviceTotalMem_v2", unsafe extern "C" fn(*mut usize, c_int) -> CuResult);
    let get_name = bind!("cuDeviceGetName", unsafe extern "C" fn(*mut c_char, c_int, c_int) -> CuResult);
    let ordinal = c_int::try_from(ordinal).map_err(|_| format!("device {ordinal} is not a CUDA ordinal"))?;
    let mut device: c_int = 0;
    // SAFETY: a valid out-pointer; the driver checks the ordinal.
    let status = unsafe { get(&mut device, ordinal) };
    if status != 0 {
        return Err(format!("cuDeviceGet({ordinal}) returned {status} (3: the process has not initialised CUDA)"));
    }
    let read = |attr: c_int| -> Option<u64> {
        let mut v: c_int = 0;
        // SAFETY: a valid out-pointer and a device the driver handed out.
        let status = unsafe { attribute(&mut v, attr, device) };
        if status != 0 {
            return None;
        }
        u64::try_from(v).ok()
    };
    let mut bytes: usize = 0;
    // SAFETY: a valid out-pointer and a device the driver handed out.
    let total_memory = (unsafe { total_mem(&mut bytes, device) } == 0).then(|| u64::try_from(bytes).unwrap_or(u64::MAX));
    let mut name = [0 as c_char; 256];
    // SAFETY: the buffer's length is passed; the driver writes a NUL-terminated name into it.
    let status = unsafe { get_name(name.as_mut_ptr(), 255, device) };
    // SAFETY: the buffer is zeroed and at most 255 bytes were written: it is NUL-terminated.
    let name = if status == 0 { unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned() } else { String::new() };
    let cc = |attr| read(attr).and_then(|v| u32::try_from(v).ok());
    Ok(DeviceAttributes {
        name,
        clock_khz: read(CLOCK_RATE),
        multiprocessors: read(MULTIPROCESSOR_COUNT),
        memory_clock_khz: read(MEMORY_CLOCK_RATE),
        bus_width_bits: read(GLOBAL_MEMORY_BUS_WIDTH),
        compute_capability: cc(COMPUTE_CAPABILITY_MAJOR).zip(cc(COMPUTE_CAPABILITY_MINOR)),
        total_memory,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_loaded_driver_there_are_no_attributes_and_nothing_is_loaded() {
        let err = device_attributes(0, Some(Path::new("/nonexistent/libcuda.so"))).unwrap_err();
        assert!(err.contains("no CUDA driver is loaded"), "{err}");
    }

    #[test]
    fn hbm_bandwidth_is_the_double_data_rate_of_the_bus() {
        let h200 = DeviceAttributes { name: "NVIDIA H200".into(), memory_clock_khz: Some(2_619_000), bus_width_bits: Some(6144), ..DeviceAttributes::default() };
        assert_eq!(h200.memory_bandwidth(), Some(4_022_784_000_000));
        assert_eq!(DeviceAttributes { memory_clock_khz: None, ..h200 }.memory_bandwidth(), None, "a refused attribute");
    }
}
