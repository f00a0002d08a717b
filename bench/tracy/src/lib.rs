//! Empty: this package only pins tracy-client-sys for scripts/bench_tracy.sh.
