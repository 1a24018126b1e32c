//! `AUTOCOLL_PATTERN`: the program's point-to-point traffic, recorded by
//! wrapping MPI's send calls, and the traffic of the collectives autocoll
//! runs, recorded by its transport ([`autocoll::pattern::Recording`]).
//! Ranks are `MPI_COMM_WORLD`'s. At `MPI_Finalize` every rank's counts and
//! host are gathered to world rank 0, which writes the file.
//!
//! Sub-communicator ranks are translated on every send (a group lookup,
//! about a microsecond); sends on `MPI_COMM_WORLD` need none. Persistent
//! sends count at each `MPI_Start`. Collectives the MPI library runs itself
//! (`<op>:mpi`, passed-through calls) cannot be seen message by message and
//! are not in the file.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use autocoll::pattern::{Kind, Pattern, Recorder};
use mpi::ffi::{self, MPI_Comm, MPI_Datatype, MPI_Request};

use crate::{boundary, sys};

/// This rank's counts, when recording.
static RECORDER: OnceLock<Option<Arc<Mutex<Recorder>>>> = OnceLock::new();
/// Persistent sends by request: world destination and bytes.
static PERSISTENT: Mutex<Option<HashMap<usize, (usize, u64)>>> = Mutex::new(None);

/// The shared recorder, made at first use when `AUTOCOLL_PATTERN` is set.
pub fn recorder() -> Option<&'static Arc<Mutex<Recorder>>> {
    RECORDER
        .get_or_init(|| {
            boundary::config().pattern.as_ref()?;
            if sys::unavailable() {
                return None;
            }
            let (rank, size) = sys::rank_size(sys::world()).ok()?;
            Some(Arc::new(Mutex::new(Recorder::new(rank, size))))
        })
        .as_ref()
}

/// The world ranks of `comm`'s ranks, in its rank order.
pub fn world_ranks(comm: MPI_Comm) -> Option<Vec<usize>> {
    let (_, size) = sys::rank_size(comm).ok()?;
    let ranks: Vec<c_int> = (0..size as c_int).collect();
    let mut world = vec![0 as c_int; size];
    translate(comm, &ranks, &mut world).ok()?;
    Some(world.into_iter().map(|r| r as usize).collect())
}

fn translate(comm: MPI_Comm, ranks: &[c_int], out: &mut [c_int]) -> Result<(), c_int> {
    // SAFETY: groups are made and freed here; `ranks` and `out` have the
    // same length, passed as the count.
    unsafe {
        let mut group = ffi::RSMPI_GROUP_NULL;
        let mut world = ffi::RSMPI_GROUP_NULL;
        sys::ok(ffi::PMPI_Comm_group(comm, &mut group))?;
        sys::ok(ffi::PMPI_Comm_group(sys::world(), &mut world))?;
        let code = ffi::PMPI_Group_translate_ranks(
            group,
            ranks.len() as c_int,
            ranks.as_ptr(),
            world,
            out.as_mut_ptr(),
        );
        ffi::PMPI_Group_free(&mut group);
        ffi::PMPI_Group_free(&mut world);
        sys::ok(code)
    }
}

/// The world rank and byte count of a send, or `None` when it is not
/// counted (not recording, `MPI_PROC_NULL`, an intercommunicator, bad
/// arguments: MPI will say).
fn resolve(count: c_int, dtype: MPI_Datatype, dest: c_int, comm: MPI_Comm) -> Option<(usize, u64)> {
    recorder()?;
    // SAFETY: a constant of rsmpi's shim.
    if dest < 0 || dest == unsafe { ffi::RSMPI_PROC_NULL } || count < 0 {
        return None;
    }
    if sys::is_inter(comm).ok()? {
        return None;
    }
    let mut size: c_int = 0;
    // SAFETY: MPI checks the handle.
    sys::ok(unsafe { ffi::PMPI_Type_size(dtype, &mut size) }).ok()?;
    let bytes = count as u64 * size.max(0) as u64;
    if comm == sys::world() {
        return Some((dest as usize, bytes));
    }
    let mut world: c_int = 0;
    translate(comm, &[dest], std::slice::from_mut(&mut world)).ok()?;
    Some((world as usize, bytes))
}

fn count(dst: usize, bytes: u64) {
    if let Some(rec) = recorder() {
        rec.lock()
            .unwrap_or_else(|p| p.into_inner())
            .record(Kind::P2p, dst, bytes);
    }
}

/// Counts one send (called before it is handed to MPI), never unwinding.
pub fn send(count_: c_int, dtype: MPI_Datatype, dest: c_int, comm: MPI_Comm) {
    let _ = std::panic::catch_unwind(|| {
        if let Some((dst, bytes)) = resolve(count_, dtype, dest, comm) {
            count(dst, bytes);
        }
    });
}

/// Remembers a persistent send's request, to count it at each start.
pub fn persistent(
    count_: c_int,
    dtype: MPI_Datatype,
    dest: c_int,
    comm: MPI_Comm,
    request: MPI_Request,
) {
    let _ = std::panic::catch_unwind(|| {
        if let Some(target) = resolve(count_, dtype, dest, comm) {
            let mut map = PERSISTENT.lock().unwrap_or_else(|p| p.into_inner());
            map.get_or_insert_with(HashMap::new)
                .insert(request.0 as usize, target);
        }
    });
}

/// Counts the persistent sends among `requests`, as they start.
pub fn start(requests: &[MPI_Request]) {
    let _ = std::panic::catch_unwind(|| {
        let map = PERSISTENT.lock().unwrap_or_else(|p| p.into_inner());
        let Some(map) = map.as_ref() else { return };
        for r in requests {
            if let Some(&(dst, bytes)) = map.get(&(r.0 as usize)) {
                count(dst, bytes);
            }
        }
    });
}

/// Forgets a freed request.
pub fn free(request: MPI_Request) {
    let _ = std::panic::catch_unwind(|| {
        let mut map = PERSISTENT.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(map) = map.as_mut() {
            map.remove(&(request.0 as usize));
        }
    });
}

/// Gathers every rank's counts and host to world rank 0, which writes the
/// file (collective over `MPI_COMM_WORLD`; called by `MPI_Finalize`).
pub fn finish() {
    let (Some(rec), Some(path)) = (recorder(), boundary::config().pattern.as_ref()) else {
        return;
    };
    let mine = rec.lock().unwrap_or_else(|p| p.into_inner()).encode();
    let Ok((rank, size)) = sys::rank_size(sys::world()) else {
        return;
    };
    let Some(parts) = gather(&mine, rank, size) else {
        eprintln!("autocoll-mpi: AUTOCOLL_PATTERN: could not gather the ranks' counts");
        return;
    };
    let hosts = gather(host().as_bytes(), rank, size);
    if rank != 0 {
        return;
    }
    let recorders: Result<Vec<Recorder>, _> = parts.iter().map(|p| Recorder::decode(p)).collect();
    let written = recorders
        .and_then(|r| Pattern::merge("mpi", size, r))
        .and_then(|pattern| write(pattern, hosts, path));
    if let Err(e) = written {
        eprintln!("autocoll-mpi: AUTOCOLL_PATTERN={}: {e}", path.display());
    }
}

/// Writes `pattern` with the gathered `hosts`; without them, said, when
/// they did not come or are refused: the counts are worth having still.
fn write(mut pattern: Pattern, hosts: Option<Vec<Vec<u8>>>, path: &Path) -> autocoll::Result<()> {
    let placed = match hosts {
        Some(names) => pattern
            .set_hosts(
                names
                    .iter()
                    .map(|n| String::from_utf8_lossy(n).into_owned())
                    .collect(),
            )
            .map_err(|e| e.to_string()),
        None => Err("could not gather them".into()),
    };
    if let Err(why) = placed {
        eprintln!(
            "autocoll-mpi: AUTOCOLL_PATTERN={}: written without the ranks' hosts: {why}",
            path.display()
        );
    }
    pattern.write(path)
}

/// This rank's host: `AUTOCOLL_HOST` where set and not empty (ranks in
/// network namespaces of an emulated cluster share one hostname), else its
/// processor name; empty, refused at rank 0, when MPI cannot say.
fn host() -> String {
    match std::env::var_os("AUTOCOLL_HOST") {
        Some(host) if !host.is_empty() => host.to_string_lossy().into_owned(),
        _ => processor_name(),
    }
}

/// Open MPI's and MPICH's `MPI_MAX_PROCESSOR_NAME`.
const NAME_MAX: usize = 256;

/// `MPI_Get_processor_name`, empty on an error.
fn processor_name() -> String {
    let mut buf = vec![0u8; NAME_MAX + 1];
    let mut len: c_int = 0;
    // SAFETY: `buf` has room for MPI_MAX_PROCESSOR_NAME characters and
    // the terminating zero.
    let code = unsafe { ffi::PMPI_Get_processor_name(buf.as_mut_ptr().cast(), &mut len) };
    if sys::ok(code).is_err() {
        return String::new();
    }
    buf.truncate(len.clamp(0, NAME_MAX as c_int) as usize);
    String::from_utf8_lossy(&buf).into_owned()
}

/// Every rank's bytes at rank 0 (`MPI_Gather` of the lengths, then
/// `MPI_Gatherv`); `None` on an MPI error.
fn gather(mine: &[u8], rank: usize, size: usize) -> Option<Vec<Vec<u8>>> {
    let len = mine.len() as c_int;
    let mut lens = vec![0 as c_int; size];
    let byte = sys::byte_type();
    // SAFETY: one int from each rank into `lens` (room for `size`).
    let code = unsafe {
        ffi::PMPI_Gather(
            (&len as *const c_int).cast(),
            1,
            ffi::RSMPI_INT32_T,
            lens.as_mut_ptr().cast(),
            1,
            ffi::RSMPI_INT32_T,
            0,
            sys::world(),
        )
    };
    sys::ok(code).ok()?;
    let offsets: Vec<c_int> = lens
        .iter()
        .scan(0, |at, &l| {
            let here = *at;
            *at += l;
            Some(here)
        })
        .collect();
    let total: usize = lens.iter().map(|&l| l as usize).sum();
    let mut all = vec![0u8; total.max(1)];
    // SAFETY: rank 0 receives `lens[i]` bytes at `offsets[i]` of `all`,
    // which holds their sum; the other ranks' receive arguments are unused.
    let code = unsafe {
        ffi::PMPI_Gatherv(
            mine.as_ptr().cast::<c_void>(),
            len,
            byte,
            all.as_mut_ptr().cast(),
            lens.as_ptr(),
            offsets.as_ptr(),
            byte,
            0,
            sys::world(),
        )
    };
    sys::ok(code).ok()?;
    (rank == 0)
        .then(|| {
            lens.iter()
                .zip(&offsets)
                .map(|(&l, &o)| all[o as usize..(o + l) as usize].to_vec())
                .collect()
        })
        .or(Some(Vec::new()))
}
