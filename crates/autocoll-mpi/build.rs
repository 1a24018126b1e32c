//! With the `mpi` feature, compiles the C shim that hands MPI's macro
//! constants (MPI_IN_PLACE, MPI_BOTTOM, …), Fortran conversions and
//! sentinels to Rust, with `$MPICC` (default `mpicc`) so that they are the
//! MPI library's own: Open MPI's or MPICH's.
fn main() {
    println!("cargo:rerun-if-changed=src/shim.c");
    if std::env::var_os("CARGO_FEATURE_MPI").is_none() {
        return;
    }
    cc::Build::new()
        .compiler(std::env::var("MPICC").unwrap_or_else(|_| "mpicc".into()))
        .file("src/shim.c")
        .compile("autocoll_mpi_shim");
}
