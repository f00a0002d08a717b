//! Which GPU stack a `roctx record` run attaches to, and the files that tell: rocprofiler-sdk for
//! ROCm, the CUDA driver library for NVIDIA. Owns the search and its messages; never starts
//! anything.
//!
//! Searched, in order (the first file that exists wins):
//! - **ROCm**: `$ROCTX_UTILS_ROCPROFILER_LIBRARY`; `librocprofiler-sdk.so.1`, `.so.0`, `.so`
//!   under `$ROCM_PATH/lib`, `/opt/rocm/lib` and each `$LD_LIBRARY_PATH` directory; the loader's
//!   cache (`ldconfig -p`).
//! - **NVIDIA**: `libcuda.so.1` in each `$LD_LIBRARY_PATH` directory, the distributions' library
//!   directories (Debian/Ubuntu, RHEL, WSL, NVIDIA's container toolkit), the loader's cache.
//!
//! When both are found, the device nodes decide (`/dev/kfd` is ROCm, `/dev/nvidiactl` NVIDIA); if
//! they do not, `--platform` must. When neither is found, the run is CPU-only (`--platform none`,
//! as `nsys profile` records CPU-only on a machine without a GPU): NVTX ranges and Python
//! annotations through the NVTX injection library, which needs no GPU, and no kernel tracing.

use std::path::{Path, PathBuf};
use std::process::Command;

use roctx_config::launch::LaunchEnv;

use crate::args::Platform;
use crate::messages::Failure;

const SDK_NAMES: [&str; 3] = ["librocprofiler-sdk.so.1", "librocprofiler-sdk.so.0", "librocprofiler-sdk.so"];
const CUDA_NAME: &str = "libcuda.so.1";
const CUDA_DIRS: [&str; 6] = [
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/nvidia/lib64",
    "/usr/lib/wsl/lib",
    "/usr/local/cuda/compat",
];

/// The stack a run attaches to, with the file that showed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// rocprofiler-sdk at this path: the tool library goes into `ROCP_TOOL_LIBRARIES`.
    Rocm(PathBuf),
    /// The CUDA driver (or, with `--platform nvidia`, nothing found): the NVTX injection.
    Nvidia(Option<PathBuf>),
    /// No GPU stack: the NVTX injection with kernels off. `Some(why)`: `auto` found none (said).
    CpuOnly(Option<String>),
}

/// The directories of `LD_LIBRARY_PATH`.
fn library_dirs(env: &LaunchEnv) -> Vec<PathBuf> {
    env.ld_library_path.as_ref().map(|v| std::env::split_paths(v).filter(|p| !p.as_os_str().is_empty()).collect()).unwrap_or_default()
}

/// Detects (or, with an explicit `--platform`, checks) the platform.
pub(crate) fn detect(requested: Platform, env: &LaunchEnv) -> Result<Found, Failure> {
    let cache = LoaderCache::read();
    match requested {
        Platform::Rocm => find_sdk(env, &cache).map(Found::Rocm).map_err(|tried| {
            Failure::new(format!("--platform rocm, but rocprofiler-sdk was not found (looked for {})", tried.join(", ")))
                .hint("set ROCM_PATH to your ROCm installation, or ROCTX_UTILS_ROCPROFILER_LIBRARY to librocprofiler-sdk.so.1")
        }),
        Platform::Nvidia => Ok(Found::Nvidia(find_cuda(env, &cache).ok())),
        Platform::None => Ok(Found::CpuOnly(None)),
        Platform::Auto => {
            let sdk = find_sdk(env, &cache);
            let cuda = find_cuda(env, &cache);
            match (sdk, cuda) {
                (Ok(sdk), Err(_)) => Ok(Found::Rocm(sdk)),
                (Err(_), Ok(cuda)) => Ok(Found::Nvidia(Some(cuda))),
                (Ok(sdk), Ok(cuda)) => match (Path::new("/dev/kfd").exists(), Path::new("/dev/nvidiactl").exists()) {
                    (true, false) => Ok(Found::Rocm(sdk)),
                    (false, true) => Ok(Found::Nvidia(Some(cuda))),
                    _ => Err(Failure::new(format!(
                        "both ROCm ({}) and NVIDIA ({}) are installed, and the devices do not say which GPU this is",
                        sdk.display(),
                        cuda.display()
                    ))
                    .hint("pass --platform rocm or --platform nvidia")),
                },
                (Err(sdk), Err(cuda)) => Ok(Found::CpuOnly(Some(format!(
                    "no GPU profiling stack found (neither rocprofiler-sdk: {}; nor the CUDA driver: {}): recording CPU-only, NVTX ranges and Python annotations without kernels; set ROCM_PATH (ROCm) or LD_LIBRARY_PATH (NVIDIA), or pass --platform, to trace a GPU",
                    sdk.join(", "),
                    cuda.join(", ")
                )))),
            }
        }
    }
}

fn find_sdk(env: &LaunchEnv, cache: &LoaderCache) -> Result<PathBuf, Vec<String>> {
    let mut places: Vec<PathBuf> = env.rocprofiler_library.iter().map(PathBuf::from).collect();
    let mut roots: Vec<PathBuf> = env.rocm_path.iter().map(|r| Path::new(r).join("lib")).collect();
    roots.push(PathBuf::from("/opt/rocm/lib"));
    roots.extend(library_dirs(env));
    for root in &roots {
        places.extend(SDK_NAMES.iter().map(|n| root.join(n)));
    }
    places.extend(SDK_NAMES.iter().filter_map(|n| cache.lookup(n)));
    first_file(places)
}

fn find_cuda(env: &LaunchEnv, cache: &LoaderCache) -> Result<PathBuf, Vec<String>> {
    let mut places: Vec<PathBuf> = library_dirs(env).into_iter().map(|d| d.join(CUDA_NAME)).collect();
    places.extend(CUDA_DIRS.iter().map(|d| Path::new(d).join(CUDA_NAME)));
    places.extend(cache.lookup(CUDA_NAME));
    first_file(places)
}

/// The first path that is a file (links followed), or every path tried.
fn first_file(places: Vec<PathBuf>) -> Result<PathBuf, Vec<String>> {
    let mut tried = Vec::new();
    for place in places {
        if place.is_file() {
            return Ok(place);
        }
        let shown = place.display().to_string();
        if !tried.contains(&shown) {
            tried.push(shown);
        }
    }
    Err(tried)
}

/// `ldconfig -p`: the loader's cache, where distributions register GPU libraries.
struct LoaderCache(String);

impl LoaderCache {
    fn read() -> LoaderCache {
        let run = |program: &str| Command::new(program).arg("-p").output().ok().filter(|o| o.status.success());
        let out = run("/sbin/ldconfig").or_else(|| run("ldconfig"));
        LoaderCache(out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default())
    }

    /// `\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1`
    fn lookup(&self, name: &str) -> Option<PathBuf> {
        self.0.lines().find_map(|line| {
            let (left, path) = line.split_once("=>")?;
            (left.split_whitespace().next() == Some(name) && left.contains("x86-64")).then(|| PathBuf::from(path.trim()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loader_cache_is_read_for_the_exact_name_and_architecture() {
        let cache = LoaderCache(
            "3 libs found in cache `/etc/ld.so.cache'\n\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1\n\tlibcuda.so.1 (libc6) => /usr/lib32/libcuda.so.1\n\tlibcudart.so.12 (libc6,x86-64) => /x/libcudart.so.12\n".to_owned(),
        );
        assert_eq!(cache.lookup("libcuda.so.1"), Some(PathBuf::from("/usr/lib/x86_64-linux-gnu/libcuda.so.1")));
        assert_eq!(cache.lookup("libcuda.so"), None);
    }

    #[test]
    fn rocm_path_and_the_explicit_library_are_searched_first() {
        let dir = std::env::temp_dir().join(format!("roctx_platform_{}", std::process::id()));
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        std::fs::write(dir.join("lib/librocprofiler-sdk.so.0"), b"").unwrap();
        let env = LaunchEnv { rocm_path: Some(dir.clone().into()), ..LaunchEnv::default() };
        assert_eq!(find_sdk(&env, &LoaderCache(String::new())), Ok(dir.join("lib/librocprofiler-sdk.so.0")));
        let explicit = dir.join("mine.so");
        std::fs::write(&explicit, b"").unwrap();
        let env = LaunchEnv { rocprofiler_library: Some(explicit.clone().into()), rocm_path: Some(dir.clone().into()), ..LaunchEnv::default() };
        assert_eq!(find_sdk(&env, &LoaderCache(String::new())), Ok(explicit));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
