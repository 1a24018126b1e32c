//! Which MPI a run is for, Open MPI or MPICH, and what differs between
//! them: the library file, the launcher, and how the launcher hands
//! variables to the ranks.

use std::ffi::OsString;

/// An MPI library the interposition library is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mpi {
    /// Open MPI (`libmpi.so`), launched by its `mpirun`.
    Openmpi,
    /// MPICH (`libmpich.so`) and the libraries built on it, launched by
    /// Hydra's `mpiexec`.
    Mpich,
}

impl Mpi {
    /// The name users read.
    pub fn name(self) -> &'static str {
        match self {
            Mpi::Openmpi => "Open MPI",
            Mpi::Mpich => "MPICH",
        }
    }

    /// The value of `--mpi` that names it.
    pub fn flag(self) -> &'static str {
        match self {
            Mpi::Openmpi => "openmpi",
            Mpi::Mpich => "mpich",
        }
    }

    /// The interposition library's file name.
    pub fn lib_name(self) -> &'static str {
        match self {
            Mpi::Openmpi => "libautocoll_mpi.so",
            Mpi::Mpich => "libautocoll_mpi_mpich.so",
        }
    }

    /// The variable that names the library's path.
    pub fn lib_var(self) -> &'static str {
        match self {
            Mpi::Openmpi => "AUTOCOLL_MPI_LIB",
            Mpi::Mpich => "AUTOCOLL_MPICH_LIB",
        }
    }

    /// How to build the library.
    pub fn build(self) -> &'static str {
        match self {
            Mpi::Openmpi => "cargo build --release -p autocoll-mpi --features mpi",
            Mpi::Mpich => "scripts/build-mpich-lib",
        }
    }

    /// The launcher used when `--mpirun` names none (Debian's names; the
    /// plain `mpirun` is Open MPI's where both are installed).
    pub fn launcher(self) -> &'static str {
        match self {
            Mpi::Openmpi => "mpirun",
            Mpi::Mpich => "mpiexec.mpich",
        }
    }

    /// The MPI a program or library file links, from the shared objects
    /// its dynamic section names; `None` for a file that is not ELF or
    /// names neither (a script, a static build).
    pub fn of_binary(bytes: &[u8]) -> Option<Mpi> {
        let has = |s: &[u8]| bytes.windows(s.len()).any(|w| w == s);
        if !bytes.starts_with(b"\x7fELF") {
            None
        } else if has(b"libmpich") {
            Some(Mpi::Mpich)
        } else if has(b"libmpi.so") {
            Some(Mpi::Openmpi)
        } else {
            None
        }
    }

    /// The MPI whose launcher printed `version` (its `--version`).
    pub fn of_launcher(version: &str) -> Option<Mpi> {
        if version.contains("Open MPI") || version.contains("OpenRTE") {
            Some(Mpi::Openmpi)
        } else if version.contains("HYDRA") || version.contains("MPICH") {
            Some(Mpi::Mpich)
        } else {
            None
        }
    }

    /// The launcher's arguments that set `name` to `value` in every rank.
    pub fn set(self, name: &str, value: &OsString) -> Vec<OsString> {
        match self {
            Mpi::Openmpi => {
                let mut pair = OsString::from(name);
                pair.push("=");
                pair.push(value);
                vec!["-x".into(), pair]
            }
            Mpi::Mpich => vec!["-genv".into(), name.into(), value.clone()],
        }
    }
}
